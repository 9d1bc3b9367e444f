"""The compact plan text of the bridge jar's ``PlanReader`` -> the items ``toJSON`` would give.

``PlanReader`` (``jvm_bridge/.../PlanReader.java``) writes what ``LogicalPlan.toJSON()``
writes, field by field, but each distinct attribute once, in a table::

    {"v": 1, "attrs": [{attribute node}, ...], "plan": {"@t": [node or attribute index, ...]}}

A tree (the plan, or an expression or plan in a field) is ``{"@t": [...]}``: its pre-order
list of nodes, an integer standing for an attribute of the table. :func:`expand` turns it
into the pre-order list of dicts that ``json.loads(plan.toJSON())`` gives, every occurrence
of an attribute being the same dict, so the fact readers and :func:`~lineage_listener.plan.tree.parse`
work on it unchanged (``parse`` builds one :class:`~lineage_listener.plan.tree.Node` per shared dict).

>>> items = expand('{"v":1,"attrs":[{"class":"e.A","num-children":0,"name":"x"}],'
...                '"plan":{"@t":[{"class":"p.Project","num-children":0,"projectList":'
...                '[{"@t":[0]},{"@t":[0]}]}]}}')
>>> items[0]["projectList"][0][0]["name"], items[0]["projectList"][0][0] is items[0]["projectList"][1][0]
('x', True)
"""
from __future__ import annotations

import json
from typing import Any

#: The encoding version this decoder reads (``PlanReader.VERSION``).
VERSION = 1
TREE = "@t"


class CompactError(ValueError):
    """The text is not a compact plan this decoder reads."""


def is_compact(text: str) -> bool:
    """Whether ``text`` is a compact plan (``toJSON`` text starts with ``[``)."""
    return text.lstrip()[:1] == "{"


def expand(text: str | dict) -> list[dict[str, Any]]:
    """The ``toJSON``-shaped pre-order list of the compact plan ``text`` (attributes shared)."""
    if isinstance(text, dict):  # already decoded (a replayed envelope): expand in Python
        return _expand_decoded(text)
    # The attribute table comes first: decode it, then the plan with a hook that expands each
    # tree as json.loads builds it (no second pass over the plan). Inside JSON strings a quote
    # is escaped, so the first ``,"plan":`` is the separator.
    head, sep, tail = text.partition(',"plan":')
    if not sep:  # not as PlanReader writes it (spaces...): the general way
        try:
            return _expand_decoded(json.loads(text))
        except ValueError as exc:
            raise CompactError(f"not a compact plan: {exc}") from None
    try:
        raw = json.loads(head + "}")
    except ValueError as exc:
        raise CompactError(f"not a compact plan: {exc}") from None
    if not isinstance(raw, dict) or raw.get("v") != VERSION:
        raise CompactError(f"not a version-{VERSION} compact plan")
    attrs: list[dict[str, Any]] = [_node(a, []) for a in raw["attrs"]]

    def hook(d: dict[str, Any]) -> Any:
        if TREE in d and len(d) == 1:
            return [attrs[i] if type(i) is int else i for i in d[TREE]]
        return d

    plan = json.loads(tail[:-1], object_hook=hook)
    if not (isinstance(plan, list) and plan):
        raise CompactError("compact plan without a tree")
    return plan


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
