"""A scan of plan JSON items: every node dict once, and the source leaves and null fields among them.

The plan JSON is a pre-order list of node dicts per tree, with nested trees (a command's query, a
subquery's plan) inside fields; these functions see every node of all of them.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lineage_listener.plan.classes import EXPRESSION_FIELDS, SOURCE_LEAVES


def dicts(items: Any) -> Iterator[dict[str, Any]]:
    """Every dict of plan JSON items, each once (the compact reader's items share each attribute's
    dict), parents before their children."""
    stack = [items]
    seen: set[int] = set()
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict) and id(value) not in seen:
            seen.add(id(value))
            yield value
            stack.extend(v for v in value.values() if isinstance(v, (list, dict)))


def json_leaves(items: Any, nulls: list[dict[str, Any]] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(first output exprId, node dict)`` of every source leaf in plan JSON, subqueries included.

    In the same pass, plan nodes with a needed field written as null (see
    :data:`~lineage_listener.plan.classes.EXPRESSION_FIELDS`) are appended to ``nulls``.
    """
    for value in dicts(items):
        cls = value.get("class")
        short = cls.rsplit(".", 1)[-1] if isinstance(cls, str) else ""
        if short in SOURCE_LEAVES:
            output = value.get("output") or (value.get("dataCols") or []) + (value.get("partitionCols") or [])
            if output and isinstance(output[0], list) and output[0]:
                eid = output[0][0].get("exprId", {}).get("id")
                if eid is not None:
                    yield eid, value
        elif nulls is not None and short in EXPRESSION_FIELDS and any(
                name in value and value[name] is None for name in EXPRESSION_FIELDS[short]):
            nulls.append(value)


def null_fields(items: Any) -> list[dict[str, Any]]:
    """Plan nodes of ``items`` with a needed field written as null (see :func:`json_leaves`)."""
    nulls: list[dict[str, Any]] = []
    for _ in json_leaves(items, nulls):
        pass
    return nulls
