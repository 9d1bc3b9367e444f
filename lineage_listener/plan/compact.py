"""The compact plan text of the bridge jar's ``PlanReader`` -> the items ``toJSON`` would give.

``PlanReader`` (``jvm_bridge/.../PlanReader.java``) writes what ``LogicalPlan.toJSON()``
writes, field by field, but each distinct attribute once, in a table, and the products named
in :data:`KEEP` with only the fields the walk reads::

    {"v": 4, "attrs": [{attribute node}, ...], "facts": {...}, "plan": {"@t": [node or attribute index, ...]}}

``facts`` (when the reader was given the whole query) holds what the plan JSON leaves out, read
in the same JVM call: see :func:`decode`.

A tree (the plan, or an expression or plan in a field) is ``{"@t": [...]}``: its pre-order
list of nodes, an integer standing for an attribute of the table. :func:`expand` turns it
into the pre-order list of dicts that ``json.loads(plan.toJSON())`` gives, every occurrence
of an attribute being the same dict, so the fact readers and :func:`~lineage_listener.plan.tree.parse`
work on it unchanged (``parse`` builds one :class:`~lineage_listener.plan.tree.Node` per shared dict).
The walk's tree needs no items: :func:`load` decodes the text as it is, and
:func:`~lineage_listener.plan.tree.from_compact` builds the nodes from that.

>>> items = expand('{"v":4,"attrs":[{"class":"e.A","num-children":0,"name":"x"}],'
...                '"plan":{"@t":[{"class":"p.Project","num-children":0,"projectList":'
...                '[{"@t":[0]},{"@t":[0]}]}]}}')
>>> items[0]["projectList"][0][0]["name"], items[0]["projectList"][0][0] is items[0]["projectList"][1][0]
('x', True)
"""
from __future__ import annotations

import json
from typing import Any

#: The encoding version this decoder reads (``PlanReader.VERSION``).
VERSION = 4
TREE = "@t"

#: Products the reader writes with only these fields (no ``product-class``): the walk and the fact
#: readers read nothing else of them, and they are most of ``toJSON``'s text (an ``ExprId`` carries
#: its JVM's UUID, a ``CatalogTable`` its whole schema and storage). Given to ``PlanReader.keep``.
KEEP: dict[str, tuple[str, ...]] = {
    "org.apache.spark.sql.catalyst.expressions.ExprId": ("id",),
    "org.apache.spark.sql.catalyst.catalog.CatalogTable": ("identifier", "tableType", "provider"),
}


class CompactError(ValueError):
    """The text is not a compact plan this decoder reads."""


def is_compact(text: str) -> bool:
    """Whether ``text`` is a compact plan (``toJSON`` text starts with ``[``)."""
    return text.lstrip()[:1] == "{"


def expand(text: str | dict) -> list[dict[str, Any]]:
    """The ``toJSON``-shaped pre-order list of the compact plan ``text`` (attributes shared)."""
    return decode(text)[0]


def decode(text: str | dict) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(items, facts)``: the plan as :func:`expand` gives it, and the facts read with it.

    ``facts`` is empty for a plan read alone (``PlanReader.encode``); for a query
    (``PlanReader.encodeQuery``) it has ``leaves`` (``[first output id, facts or None]`` per source
    leaf: None for one the JVM side does not describe), ``nulls`` (how many node fields were
    written as null) and, when read, the write ``target``'s facts.

    >>> items, facts = decode('{"v":4,"attrs":[],"facts":{"leaves":[[7,null]],"nulls":0},'
    ...                       '"plan":{"@t":[{"class":"p.Range","num-children":0}]}}')
    >>> facts["leaves"], items[0]["class"]
    ([[7, None]], 'p.Range')
    """
    raw, facts = (text, _facts(text)) if isinstance(text, dict) else load(text)
    return _expand_decoded(raw), facts


def load(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(raw, facts)``: the compact plan ``text`` as ``json.loads`` gives it (trees not expanded:
    :func:`~lineage_listener.plan.tree.from_compact` builds nodes from it) and its facts.

    >>> raw, facts = load('{"v":4,"attrs":[],"plan":{"@t":[{"class":"p.Range","num-children":0}]}}')
    >>> raw["plan"], facts
    ({'@t': [{'class': 'p.Range', 'num-children': 0}]}, {})
    """
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise CompactError(f"not a compact plan: {exc}") from None
    if not isinstance(raw, dict) or raw.get("v") != VERSION:
        raise CompactError(f"not a version-{VERSION} compact plan")
    plan = raw.get("plan")
    if not (isinstance(plan, dict) and isinstance(plan.get(TREE), list) and plan[TREE]
            and isinstance(raw.get("attrs"), list)):
        raise CompactError("compact plan without a tree")
    return raw, _facts(raw)


def items(value: Any, attrs: list[dict[str, Any]]) -> Any:
    """``value`` (a field of a compact node) with its trees expanded as :func:`expand` expands
    them, ``attrs`` being the plan's attribute table as decoded."""
    return _value(value, attrs) if type(value) in (dict, list) else value


def _facts(raw: dict[str, Any]) -> dict[str, Any]:
    facts = raw.get("facts")
    if facts is None:
        return {}
    if not isinstance(facts, dict):
        raise CompactError("compact plan facts are not an object")
    return facts


def canonical(value: Any) -> Any:
    """``toJSON`` items as the compact reader writes them: :data:`KEEP`'s products trimmed.

    >>> canonical([{"class": "a.X", "exprId": {"product-class": "org.apache.spark.sql.catalyst."
    ...            "expressions.ExprId", "id": 3, "jvmId": "u"}}])
    [{'class': 'a.X', 'exprId': {'id': 3}}]
    """
    if isinstance(value, list):
        return [canonical(v) for v in value]
    if isinstance(value, dict):
        only = KEEP.get(value.get("product-class"))  # type: ignore[arg-type]
        return {k: canonical(v) for k, v in value.items() if only is None or k in only}
    return value


def _expand_decoded(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, dict) or raw.get("v") != VERSION:
        raise CompactError(f"not a version-{VERSION} compact plan")
    attrs: list[dict[str, Any]] = []
    for a in raw["attrs"]:
        attrs.append(_node(a, attrs))
    plan = raw["plan"]
    if not (isinstance(plan, dict) and TREE in plan):
        raise CompactError("compact plan without a tree")
    return _tree(plan[TREE], attrs)


def _tree(items: list, attrs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [attrs[i] if type(i) is int else _node(i, attrs) for i in items]


def _node(raw: dict[str, Any], attrs: list[dict[str, Any]]) -> dict[str, Any]:
    for k, v in raw.items():
        t = type(v)
        if t is dict or t is list:
            raw[k] = _value(v, attrs)
    return raw


def _value(v: Any, attrs: list[dict[str, Any]]) -> Any:
    if type(v) is dict:
        if TREE in v and len(v) == 1:
            return _tree(v[TREE], attrs)
        return {k: _value(x, attrs) if type(x) in (dict, list) else x for k, x in v.items()}
    if type(v) is list:
        return [_value(x, attrs) if type(x) in (dict, list) else x for x in v]
    return v
