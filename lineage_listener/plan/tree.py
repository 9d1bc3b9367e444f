"""Spark TreeNode JSON -> a typed tree of frozen nodes.

``LogicalPlan.toJSON()`` and ``Expression.toJSON()`` both emit a pre-order list
of nodes, each a dict with ``class``, ``num-children`` and its fields. A field
holding a nested tree (an expression inside a plan node, a plan inside a
subquery expression) is itself such a list; a field holding a list of trees is
a list of such lists. Integer fields that name children stay integers.

>>> t = parse('[{"class": "a.Project", "num-children": 1, "child": 0}, '
...           '{"class": "a.Range", "num-children": 0}]')
>>> t.name, t.children[0].name
('Project', 'Range')
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


#: Short names of the Spark classes met so far (a few hundred at most).
_SHORT: dict[str, str] = {}


@dataclass(frozen=True, eq=False)
class Node:
    """One plan node or expression: its Spark class, fields and children."""

    cls: str
    fields: Mapping[str, Any] = field(repr=False)
    children: tuple["Node", ...] = ()

    @property
    def name(self) -> str:
        """Short class name, without package or Scala ``$``: ``Project`` (once per class)."""
        short = _SHORT.get(self.cls)
        if short is None:
            short = _SHORT[self.cls] = self.cls.rsplit(".", 1)[-1].rstrip("$")
        return short

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)

    def trees(self, key: str) -> tuple["Node", ...]:
        """The field ``key`` as a tuple of trees (empty when absent or not trees)."""
        value = self.fields.get(key)
        if isinstance(value, Node):
            return (value,)
        if isinstance(value, tuple) and all(isinstance(v, Node) for v in value):
            return value
        return ()

    def walk(self) -> Iterator["Node"]:
        """This node and its children, pre-order (not descending into fields)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    @property
    def expr_id(self) -> int | None:
        """``exprId.id`` of an attribute or alias, else None."""
        eid = self.fields.get("exprId")
        return eid.get("id") if isinstance(eid, dict) else None


def _is_tree(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict) and "class" in value[0]


def _convert(value: list, shared: dict[int, Node]) -> Any:
    """A list field: a nested tree becomes a node; lists (of trees, of lists...) become tuples.

    Only lists come here (the caller tests ``type(v) is list``: most fields are scalars,
    and a 300-step plan has ~300,000 of them).
    """
    if value and type(value[0]) is dict and "class" in value[0]:
        if len(value) == 1 and id(value[0]) in shared:
            return shared[id(value[0])]
        return _build(value, shared)
    return tuple([_convert(v, shared) if type(v) is list else v for v in value])


def _build(items: list[dict], shared: dict[int, Node] | None = None) -> Node:
    """Build a tree from a pre-order list (iteratively: deep plans must not recurse).

    A leaf dict met again (the compact reader shares each attribute's dict, see
    :mod:`~lineage_listener.plan.compact`) gives the node built the first time (``shared``,
    by the dict's id: the items outlive the build).
    """
    shared = {} if shared is None else shared
    end = len(items)
    raw = items[0]
    pos = 1
    need = int(raw.get("num-children", 0))
    kids: list[Node] = []
    # The nodes above the current one, each with its children so far.
    stack: list[tuple[dict, int, list[Node]]] = []
    while True:
        if len(kids) < need and pos < end:
            stack.append((raw, need, kids))
            raw = items[pos]
            pos += 1
            need = int(raw.get("num-children", 0))
            kids = []
            continue
        if kids:
            node = _node(raw, tuple(kids), shared)
        else:
            node = shared.get(id(raw))
            if node is None:
                node = shared[id(raw)] = _node(raw, (), shared)
        if not stack:
            return node
        raw, need, kids = stack.pop()
        kids.append(node)


def _node(raw: dict, children: tuple[Node, ...], shared: dict[int, Node]) -> Node:
    """One node of ``raw``'s fields (list fields converted: nested trees become nodes)."""
    fields = raw.copy()
    fields.pop("class", None)
    fields.pop("num-children", None)
    for k, v in fields.items():
        if type(v) is list:
            fields[k] = _convert(v, shared)
    return Node(raw.get("class", "?"), fields, children)


def parse(text: str | list) -> Node:
    """Parse TreeNode JSON text (or the already-decoded list, or a compact plan) into a :class:`Node`."""
    items = json.loads(text) if isinstance(text, str) else text
    if isinstance(items, dict) and "v" in items:  # the bridge's compact plan text
        from lineage_listener.plan.compact import expand
        items = expand(items)
    if not _is_tree(items):
        raise ValueError("not a Spark TreeNode JSON list")
    return _build(items)
