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

from lineage_listener.plan import compact


#: The key of a compact plan's tree (:mod:`~lineage_listener.plan.compact`).
_TREE = compact.TREE

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


def from_compact(raw: dict[str, Any]) -> Node:
    """The tree of a compact plan as :func:`~lineage_listener.plan.compact.load` decodes it: the
    same tree as ``parse(compact.expand(text))``, built in one pass with no ``toJSON``-shaped
    items in between (each node's dict becomes its fields; each attribute of the table is one
    node, wherever it occurs).

    A product holding trees (``CaseWhen.branches``' pairs) keeps them as ``parse`` does: as the
    ``toJSON``-shaped items :func:`~lineage_listener.plan.compact.expand` gives.

    >>> root = from_compact({"v": 4, "attrs": [{"class": "e.A", "num-children": 0, "name": "x"}],
    ...                      "plan": {"@t": [{"class": "p.Project", "num-children": 0,
    ...                                       "projectList": [{"@t": [0]}, {"@t": [0]}]}]}})
    >>> root.name, root.trees("projectList")[0].get("name"), len(set(map(id, root.trees("projectList"))))
    ('Project', 'x', 1)
    """
    return _Compact(raw["attrs"]).tree(raw["plan"][_TREE])


class _Compact:
    """One compact plan's nodes being built: its attribute table, as nodes and as decoded."""

    __slots__ = ("raw_attrs", "attrs")

    def __init__(self, raw_attrs: list[dict[str, Any]]) -> None:
        self.raw_attrs = raw_attrs
        self.attrs: list[Node] = []  # an attribute's fields hold no attribute of the table
        attrs = []
        for a in raw_attrs:
            fields = a.copy()  # the decoded dict stays as expand shares it (products holding trees)
            attrs.append(Node(fields.pop("class", "?"), self.fields(fields), ()))
        self.attrs = attrs

    def tree(self, items: list) -> Node:
        """Build a tree from its pre-order list (iteratively, as :func:`_build`)."""
        attrs = self.attrs
        first = items[0]
        if type(first) is int:
            return attrs[first]
        end = len(items)
        pos = 1
        raw = first
        cls = raw.pop("class", "?")
        need = int(raw.get("num-children", 0))
        kids: list[Node] = []
        stack: list[tuple[str, dict, int, list[Node]]] = []
        while True:
            if len(kids) < need and pos < end:
                item = items[pos]
                pos += 1
                if type(item) is int:
                    kids.append(attrs[item])
                    continue
                stack.append((cls, raw, need, kids))
                raw = item
                cls = raw.pop("class", "?")
                need = int(raw.get("num-children", 0))
                kids = []
                continue
            node = Node(cls, self.fields(raw), tuple(kids))
            if not stack:
                return node
            cls, raw, need, kids = stack.pop()
            kids.append(node)

    def fields(self, raw: dict[str, Any]) -> dict[str, Any]:
        """``raw`` (a node's decoded dict, ``class`` taken) as its node's fields, in place."""
        raw.pop("num-children", None)
        for k, v in raw.items():
            t = type(v)
            if t is list:
                raw[k] = self.convert(v)
            elif t is dict:
                if _TREE in v and len(v) == 1:
                    raw[k] = self.tree(v[_TREE])
                elif _holds_tree(v):
                    raw[k] = compact.items(v, self.raw_attrs)
        return raw

    def convert(self, value: list) -> tuple:
        """A list field: trees become nodes, lists tuples (as :func:`_convert`)."""
        out = []
        for v in value:
            t = type(v)
            if t is dict:
                if _TREE in v and len(v) == 1:
                    v = self.tree(v[_TREE])
                elif _holds_tree(v):
                    v = compact.items(v, self.raw_attrs)
            elif t is list:
                v = self.convert(v)
            out.append(v)
        return tuple(out)


def _holds_tree(value: dict | list) -> bool:
    """Whether a compact tree is anywhere in ``value`` (a product, or a list in one)."""
    for v in value.values() if type(value) is dict else value:
        t = type(v)
        if t is dict:
            if _TREE in v or _holds_tree(v):
                return True
        elif t is list and _holds_tree(v):
            return True
    return False


def parse(text: str | list) -> Node:
    """Parse TreeNode JSON text (or the already-decoded list, or a compact plan) into a :class:`Node`."""
    items = json.loads(text) if isinstance(text, str) else text
    if isinstance(items, dict) and "v" in items:  # the bridge's compact plan text
        items = compact.expand(items)
    if not _is_tree(items):
        raise ValueError("not a Spark TreeNode JSON list")
    return _build(items)


class Plan:
    """A plan's text, decoded as far as it is asked: its tree for the walk (:attr:`root`), its
    ``toJSON``-shaped items for the fact readers (:attr:`items`).

    A compact plan's tree is built straight from its text (:func:`from_compact`, given as ``root``);
    its items are decoded only if a reader asks for them. Items once decoded are kept, and the tree
    is then built from them: a reader may patch them (fields ``toJSON`` wrote as null, read from
    the JVM), and the walk must see the patch.

    >>> text = '{"v":4,"attrs":[],"plan":{"@t":[{"class":"p.Range","num-children":0}]}}'
    >>> plan = Plan(text, root=from_compact(compact.load(text)[0]))
    >>> plan.root.name, plan.items[0]["class"]
    ('Range', 'p.Range')
    >>> Plan(None, items=[{"class": "p.Range", "num-children": 0}]).root.name
    'Range'
    """

    __slots__ = ("text", "_items", "_root")

    def __init__(self, text: str | None, items: list[dict[str, Any]] | None = None, root: Node | None = None) -> None:
        self.text = text
        self._items = items
        self._root = root

    @property
    def items(self) -> Any:
        """The ``toJSON``-shaped items (a compact plan expanded, see :func:`~lineage_listener.plan.compact.expand`)."""
        if self._items is None:
            text = self.text or "null"
            self._items = compact.expand(text) if compact.is_compact(text) else json.loads(text)
            self._root = None  # the asker may patch them: the tree is built from them from now on
        return self._items

    @property
    def root(self) -> Node:
        """The plan's tree (built once)."""
        if self._root is None:
            self._root = parse(self.items)
        return self._root
