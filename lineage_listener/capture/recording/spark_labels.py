"""Labels Spark itself keeps on columns, read at capture as ``column_labels`` rows (source ``spark``).

The convention (one of these is enough):

- column metadata key ``classification``: ``"pii.email"``, several separated by commas, or a list
  (``F.col("email").alias("email", metadata={"classification": "pii.email"})``, a table's schema);
- a tag in a column's comment: ``COMMENT 'work email [classification: pii.email]'``;
- a table property ``lineage.classification.<column>``: ``TBLPROPERTIES
  ('lineage.classification.ssn' = 'pii')`` (catalog tables, Delta and Iceberg tables).

Read on the columns of the tables and files a query reads (their attributes' metadata, and the
properties the leaf facts carry), and on the columns it writes (the written attributes'
metadata). The plan text is searched for the word ``classification`` first: a plan without it
costs nothing more.

>>> metadata_labels({"comment": "work email [classification: PII.email, confidential]"})
[('pii.email', 'column comment'), ('confidential', 'column comment')]
>>> metadata_labels({"classification": ["pii"]})
[('pii', 'column metadata')]
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from lineage_listener.plan.scan import dicts
from lineage_listener.plan.tree import Plan
from lineage_listener.lineage import column_path
from lineage_listener.store.rows import LabelRow

MARKER = "classification"
PROPERTY = "lineage.classification."
_COMMENT_TAG = re.compile(r"\[\s*classification\s*:\s*([^\]]*)\]", re.IGNORECASE)
_LABEL = re.compile(r"^[a-z0-9_][a-z0-9_-]*(\.[a-z0-9_][a-z0-9_-]*)*$")


def split(value: Any) -> list[str]:
    """Labels of a metadata or property value: a comma-separated text or a list; bad names dropped."""
    parts = value if isinstance(value, (list, tuple)) else str(value or "").split(",")
    out = []
    for p in parts:
        label = str(p).strip().lower()
        if _LABEL.match(label) and label not in out:
            out.append(label)
    return out


def metadata_labels(metadata: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """``(label, origin)`` of a column's metadata: its ``classification`` key and its comment's tag."""
    if not isinstance(metadata, Mapping):
        return []
    out = [(label, "column metadata") for label in split(metadata.get(MARKER))] if MARKER in metadata else []
    comment = metadata.get("comment")
    if isinstance(comment, str):
        for tag in _COMMENT_TAG.findall(comment):
            out += [(label, "column comment") for label in split(tag)]
    return out


def property_labels(properties: Mapping[str, str] | None) -> dict[str, list[tuple[str, str]]]:
    """Per column, ``(label, origin)`` of a table's ``lineage.classification.<column>`` properties.

    >>> property_labels({"lineage.classification.ssn": "pii", "owner": "x"})
    {'ssn': [('pii', 'table property lineage.classification.ssn')]}
    """
    out: dict[str, list[tuple[str, str]]] = {}
    for key, value in (properties or {}).items():
        if key.startswith(PROPERTY) and len(key) > len(PROPERTY):
            column = key[len(PROPERTY):]
            out[column] = [(label, f"table property {key}") for label in split(value)]
    return out


def schema_labels(schema: Any) -> dict[str, list[tuple[str, str]]]:
    """Per top-level field, ``(label, origin)`` of a Spark schema's metadata (``StructType.json()``
    text or its parsed form).

    >>> schema_labels('{"type":"struct","fields":[{"name":"e","type":"string","nullable":true,'
    ...               '"metadata":{"classification":"pii"}}]}')
    {'e': [('pii', 'column metadata')]}
    """
    try:
        data = json.loads(schema) if isinstance(schema, str) else schema
        fields = data.get("fields") or []
    except (ValueError, AttributeError):
        return {}
    out = {}
    for f in fields:
        labels = metadata_labels(f.get("metadata")) if isinstance(f, dict) else []
        if labels:
            out[column_path.quote(str(f.get("name")))] = labels
    return out


def _labels_of(fact: Mapping[str, Any] | None, schema_key: str) -> dict[str, list[tuple[str, str]]]:
    """Per column, what a leaf's or target's facts say: table properties, then the schema's metadata."""
    if not fact:
        return {}
    out = property_labels(fact.get(MARKER))
    schema = fact.get(schema_key)
    if isinstance(schema, str) and MARKER in schema:
        for column, labels in schema_labels(schema).items():
            out.setdefault(column, []).extend(labels)
    return out


def present(plan_text: str | None, leaves: Mapping[int, Mapping[str, Any]],
            target: Mapping[str, Any] | None = None) -> bool:
    """Whether the plan or its facts may hold a label at all (the cheap test before a walk)."""
    return (bool(plan_text and MARKER in plan_text)
            or any(f and (f.get(MARKER) or f.get("classified_schema")) for f in leaves.values())
            or bool(target and (target.get(MARKER) or MARKER in str(target.get("schema") or ""))))


def _attributes(items: Any) -> Iterable[dict]:
    """Every attribute dict of the plan items that has metadata."""
    return (d for d in dicts(items) if d.get("metadata") and isinstance(d.get("exprId"), dict))


def rows(plan: Plan, leaves: Mapping[int, Mapping[str, Any]], columns: Mapping[tuple[str, str], Any],
         by: str | None, now: str | None, target: tuple[str, Mapping[str, Any] | None] | None = None,
         edges: Iterable[Any] = ()) -> list[LabelRow]:
    """``column_labels`` rows for the labels Spark keeps on the columns a query reads and writes.

    ``plan``: the query's plan (its items are searched for attributes with metadata);
    ``columns``: the walk's ``(dataset, column) -> Attribute`` (leaf and target columns, by expr
    id); ``leaves``: the facts of each source leaf, by its first output id; ``target``: the
    written dataset's name and facts (a catalog table's properties, the written schema);
    ``edges``: the query's edges. Spark copies a column's metadata (its comment too) to the columns
    a query copies it into: a written column's label that a direct source of it has in this query
    is that copy, left to propagation (so a review downstream still stops it)."""
    by_expr: dict[int, list[tuple[str, str]]] = {}
    for (dataset, column), attr in columns.items():
        by_expr.setdefault(attr.expr_id, []).append((dataset, column))
    found: dict[tuple[str, str, str], str] = {}
    for attr in _attributes(plan.items):
        labels = metadata_labels(attr["metadata"])
        if not labels:
            continue
        name = column_path.quote(str(attr.get("name")))
        for dataset, column in by_expr.get(attr["exprId"].get("id"), []):
            if column == name:
                for label, origin in labels:
                    found.setdefault((dataset, column, label), origin)
    for first, fact in leaves.items():
        per_column = _labels_of(fact, "classified_schema")
        for dataset in {ds for ds, _ in by_expr.get(first, [])} if per_column else ():
            for column, labels in per_column.items():
                if (dataset, column) in columns:
                    for label, origin in labels:
                        found.setdefault((dataset, column, label), origin)
    if target is not None and target[1]:
        for column, labels in _labels_of(target[1], "schema").items():
            if (target[0], column) in columns:
                for label, origin in labels:
                    found.setdefault((target[0], column, label), origin)
    if target is not None:
        sources: dict[str, set[tuple[str, str]]] = {}
        for e in edges:
            if e.kind == "direct" and e.target_column is not None:
                sources.setdefault(e.target_column, set()).add((e.source.dataset, e.source.name))
        found = {(d, c, lb): o for (d, c, lb), o in found.items()
                 if d != target[0] or not any((sd, sc, lb) in found for sd, sc in sources.get(c, ()))}
    return [LabelRow(dataset=dataset, column_name=column, label=label, value=True, source="spark", origin=origin,
                     set_by=by, set_at=now)
            for (dataset, column, label), origin in sorted(found.items())]
