"""Edges <-> the ``columnLineage`` dataset facet (OpenLineage 1-2-0).

identity and rename -> DIRECT/IDENTITY (a rename is an identity whose input field has
another name, which is how it comes back), derived -> DIRECT/TRANSFORMATION,
aggregate -> DIRECT/AGGREGATION, indirect types -> INDIRECT/<TYPE>. ``expression`` is the
transformation's ``description``, ``masking`` its ``masking``. Indirect edges for every
column of the target (``target_column`` NULL) go to the facet's ``dataset`` list, and
everything read from that list is indirect.

>>> edges_of({"dataset": [{"namespace": "file", "name": "/o", "field": "day",
...     "transformations": [{"type": "DIRECT", "subtype": "AGGREGATION"}]}]}, lambda ns, n: ns + ":" + n)
[FacetEdge(source_dataset='file:/o', source_column='day', target_column=None, transform='aggregation', kind='indirect', expression=None, masking=False)]

>>> e = FacetEdge("orders", "amount", "total", "aggregate", "direct", "sum(amount)", False)
>>> from_transformation(*to_transformation(e.transform, e.kind), "total", "amount")
('aggregate', 'direct')
>>> from_transformation("DIRECT", "IDENTITY", "customer", "name")
('rename', 'direct')
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from openlineage.client.facet_v2 import column_lineage_dataset as cl

DIRECT_SUBTYPES = {"identity": "IDENTITY", "rename": "IDENTITY", "derived": "TRANSFORMATION",
                   "aggregate": "AGGREGATION"}
_DIRECT_BACK = {"IDENTITY": "identity", "TRANSFORMATION": "derived", "AGGREGATION": "aggregate",
                "MASKED": "derived"}
INDIRECT = ("filter", "join", "group_by", "sort", "window", "conditional")


class FacetEdge(NamedTuple):
    """One edge of one query, as read from ``column_lineage`` (target dataset implied)."""

    source_dataset: str
    source_column: str
    target_column: str | None
    transform: str
    kind: str
    expression: str | None
    masking: bool | None


def to_transformation(transform: str, kind: str) -> tuple[str, str]:
    """(type, subtype) of one of our transforms (a producer's own subtype goes back as it came)."""
    if kind == "direct":
        if transform in DIRECT_SUBTYPES:
            return "DIRECT", DIRECT_SUBTYPES[transform]
        return "DIRECT", "TRANSFORMATION" if transform in INDIRECT else transform.upper()
    return "INDIRECT", transform.upper()


def from_transformation(type_: str, subtype: str | None, target: str | None, source: str) -> tuple[str, str]:
    """(transform, kind) for an OpenLineage transformation (the inverse of :func:`to_transformation`).

    A subtype we have no transform for is kept as the producer said it, lowercased
    (``INDIRECT``/``MAGIC`` -> ``magic``); an ``INDIRECT`` one without subtype is ``indirect``.

    >>> from_transformation("INDIRECT", "MAGIC", None, "id"), from_transformation("DIRECT", "MAGIC", "a", "b")
    (('magic', 'indirect'), ('magic', 'direct'))
    >>> from_transformation("INDIRECT", None, None, "id"), to_transformation("magic", "direct")
    (('indirect', 'indirect'), ('DIRECT', 'MAGIC'))
    """
    if (type_ or "").upper() == "INDIRECT":
        return (subtype or "indirect").lower(), "indirect"
    sub = (subtype or "TRANSFORMATION").upper()
    transform = _DIRECT_BACK.get(sub, sub.lower())
    if transform == "identity" and target is not None and target != source:
        transform = "rename"
    return transform, "direct"


def column_lineage(edges: Iterable[FacetEdge],
                   name_of: Callable[[str], tuple[str, str]]) -> cl.ColumnLineageDatasetFacet:
    """The facet of one output dataset from its edges; ``name_of`` maps a dataset to (namespace, name).
    The OpenLineage client is imported here, where a facet is made: reading one (:func:`edges_of`, the
    ingest of events) does without it."""
    from openlineage.client.facet_v2 import column_lineage_dataset as cl

    by_field: dict[str, list[cl.InputField]] = defaultdict(list)
    dataset_wide: list[cl.InputField] = []
    for e in edges:
        type_, subtype = to_transformation(e.transform, e.kind)
        namespace, name = name_of(e.source_dataset)
        field = cl.InputField(namespace=namespace, name=name, field=e.source_column, transformations=[
            cl.Transformation(type=type_, subtype=subtype, description=e.expression, masking=bool(e.masking))])
        (by_field[e.target_column] if e.target_column is not None else dataset_wide).append(field)
    return cl.ColumnLineageDatasetFacet(
        fields={target: cl.Fields(inputFields=inputs) for target, inputs in sorted(by_field.items())},
        dataset=dataset_wide)


def edges_of(facet: dict, name_of: Callable[[str, str], str]) -> list[FacetEdge]:
    """Our edges from a ``columnLineage`` facet as JSON (any producer); ``name_of`` maps (namespace, name)."""
    out: list[FacetEdge] = []

    def add(target: str | None, inputs: Iterable[dict], fallback: dict) -> None:
        for f in inputs or []:
            source = name_of(f["namespace"], f["name"])
            for t in f.get("transformations") or [fallback]:
                # Whatever its type says, a field that affects the whole dataset (no target column)
                # is an influence, never a copy into every column: kind indirect, subtype kept.
                type_ = t.get("type") if target is not None else "INDIRECT"
                transform, kind = from_transformation(type_, t.get("subtype"), target, f["field"])
                out.append(FacetEdge(source, f["field"], target, transform, kind, t.get("description"),
                                bool(t.get("masking", False))))

    for target, spec in (facet.get("fields") or {}).items():
        # Facets before 1-2-0 carry one transformation per output field, not per input.
        # An input field with no transformation at all feeds the column in a way not said: derived.
        legacy = {"type": "DIRECT", "subtype": spec.get("transformationType") or "TRANSFORMATION",
                  "description": spec.get("transformationDescription"),
                  "masking": (spec.get("transformationType") or "").upper() == "MASKED"}
        add(target, spec.get("inputFields"), legacy)
    # The dataset list names fields that affect every row; without a transformation, which way is not said.
    add(None, facet.get("dataset") or [], {"type": "INDIRECT"})
    return out
