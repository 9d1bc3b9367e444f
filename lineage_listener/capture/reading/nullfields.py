"""Plan fields ``toJSON`` wrote as null, read from the JVM plan and patched into the plan JSON.

``toJSON`` writes null for a ``Seq`` it cannot convert (a Scala ``Vector`` of rows): the walk would
lose the lineage those expressions carry (:data:`~lineage_listener.plan.classes.EXPRESSION_FIELDS`),
so each such field is read from the JVM object at the same place in the plan.
"""
from __future__ import annotations

import json
from typing import Any

from py4j.java_gateway import JavaObject

from lineage_listener import redact
from lineage_listener.capture.jvm import jvm_call_failed, opt, seq
from lineage_listener.plan.classes import EXPRESSION_FIELDS, READ_FROM_JVM
from lineage_listener.plan.scan import json_leaves

log = redact.logger(__name__)


def null_fields(items: Any) -> list[dict[str, Any]]:
    """Plan nodes of ``items`` with a needed field written as null (see
    :func:`~lineage_listener.plan.scan.json_leaves`).

    >>> null_fields([{"class": "a.Project", "num-children": 0, "projectList": None}])[0]["class"]
    'a.Project'
    """
    nulls: list[dict[str, Any]] = []
    for _ in json_leaves(items, nulls):
        pass
    return nulls


def _is_tree(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict) and "class" in value[0]


def child_path(items: list[dict], position: int) -> list[int]:
    """Child indexes leading from the root to the node at ``position`` of a pre-order list.

    >>> child_path([{"num-children": 2}, {"num-children": 0}, {"num-children": 1},
    ...             {"num-children": 0}], 3)
    [1, 0]
    """
    path: list[int] = []
    stack: list[list[int]] = []  # [children still to come, index of the next child]
    for i, item in enumerate(items[: position + 1]):
        if stack:
            top = stack[-1]
            path = path[: len(stack) - 1] + [top[1]]
            top[0] -= 1
            top[1] += 1
        if i == position:
            return path
        stack.append([int(item.get("num-children", 0)), 0])
        while stack and stack[-1][0] == 0:
            stack.pop()
    return path


Step = tuple[str, Any]  # ("child", k) | ("field", name) | ("item", j)


def path_to(items: list[dict], target: dict) -> list[Step] | None:
    """How to reach ``target`` (a node dict somewhere in ``items``) from the plan's root on the
    JVM: child indexes, fields holding a nested tree (a command's ``query``, a subquery's
    ``plan``) and positions in fields holding a list of trees.

    >>> sub = [{"class": "a.Expand", "num-children": 0, "projections": None}]
    >>> items = [{"class": "a.Cmd", "num-children": 1}, {"class": "a.Filter", "num-children": 0,
    ...          "condition": [{"class": "e.ScalarSubquery", "num-children": 0, "plan": sub}]}]
    >>> path_to(items, sub[0])
    [('child', 0), ('field', 'condition'), ('field', 'plan')]
    """
    stack: list[tuple[list[dict], list[Step]]] = [(items, [])]
    while stack:
        tree, prefix = stack.pop()
        for pos, node in enumerate(tree):
            if not isinstance(node, dict):
                continue
            here: list[Step] | None = None
            if node is target:
                return prefix + [("child", k) for k in child_path(tree, pos)]
            for key, value in node.items():
                nested = [(value, [])] if _is_tree(value) else [
                    (v, [("item", j)]) for j, v in enumerate(value) if _is_tree(v)] if isinstance(value, list) else []
                for sub, extra in nested:
                    if here is None:
                        here = prefix + [("child", k) for k in child_path(tree, pos)]
                    stack.append((sub, here + [("field", key)] + extra))
    return None


def _jvm_json(value: Any) -> Any:
    """A JVM field value as ``toJSON`` would have written it: a tree as its pre-order list,
    a ``Seq`` (of ``Seq``s...) as a list, an ``Option`` as its value; scalars as they are."""
    if not isinstance(value, JavaObject):
        return value
    try:
        return json.loads(str(value.toJSON()))  # an expression (a TreeNode)
    except jvm_call_failed():
        pass
    try:
        if value.getClass().getName().startswith(("scala.Some", "scala.None")):
            return _jvm_json(opt(value))
    except jvm_call_failed():
        return None
    return [_jvm_json(v) for v in seq(value)]


def _follow(node: Any, steps: list[Step]) -> Any:
    for kind, arg in steps:
        if kind == "child":
            node = node.children().apply(arg)
        elif kind == "field":
            node = getattr(node, arg)()
            if isinstance(node, JavaObject) and node.getClass().getName().startswith("scala.Some"):
                node = node.get()
        else:
            node = node.apply(arg)
    return node


def repair_null_fields(plan: Any, items: Any, nulls: list[dict[str, Any]]) -> list[Any]:
    """Read from the JVM plan every needed field ``toJSON`` wrote as null in the node dicts
    ``nulls`` (found by :func:`json_leaves`), patch them in place and mark them
    (:data:`~lineage_listener.plan.classes.READ_FROM_JVM`). Returns the values read.
    A field that cannot be read stays null (the walk records it)."""
    read = []
    for node in nulls:
        steps = path_to(items, node)
        short = str(node.get("class", "")).rsplit(".", 1)[-1]
        for name in EXPRESSION_FIELDS.get(short, ()):
            if name not in node or node[name] is not None or steps is None:
                continue
            try:
                value = _jvm_json(getattr(_follow(plan, steps), name)())
            except jvm_call_failed() as exc:
                log.debug("could not read %s.%s from the JVM: %s", short, name, exc)
                continue
            if value is not None:
                node[name] = value
                node.setdefault(READ_FROM_JVM, []).append(name)
                read.append(value)
    return read
