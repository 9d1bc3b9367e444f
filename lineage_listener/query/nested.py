"""Nested struct fields in multi-hop questions: the struct column's edges stand for its fields.

A field ``s.x`` has edges of its own when the query that wrote or read it named it
(``struct(a AS x) AS s`` writes ``s.x <- a``; ``SELECT s.x`` reads ``s.x``).

- Upstream, a field with no edge of its own (the whole struct was copied, or written by a
  form the walker keeps whole) follows the edges of the nearest enclosing struct column
  that has some.
- Downstream, every query that read the whole struct read the field too: the edges of
  every enclosing struct column are followed as well as the field's own.

Either way a struct edge stands for the field like this:

- a copy of the whole struct (``identity`` / ``rename``) carries the field along:
  ``t.s <- u.s`` stands for ``t.s.x <- u.s.x``;
- any other edge stands as it is: ``t.s <- a`` (derived) gives ``t.s.x <- a``.

Upstream, dataset-level edges (filters, joins of the writing query) already reach every
column and are not repeated; downstream, a struct used as a filter or join key is a use of
its fields too.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from lineage_listener.lineage import column_path
from lineage_listener.query.types import Direction, LineageStep, Node


#: Direct edges that copy a value unchanged: a struct copied whole carries its fields along.
COPIES = ("identity", "rename")


def ancestors(node: "Node") -> list[tuple["Node", list[str]]]:
    """``(struct column, field path below it)`` for each enclosing struct, nearest first.

    >>> ancestors(("t", "s.a.b"))
    [(('t', 's.a'), ['b']), (('t', 's'), ['a', 'b'])]
    >>> ancestors(("t", "`s.x`"))
    []
    """
    segments = column_path.split(node[1])
    return [((node[0], column_path.join(segments[:k])), segments[k:]) for k in range(len(segments) - 1, 0, -1)]


def _carry(column: str | None, below: list[str]) -> str | None:
    if column is None:
        return None
    return column_path.join(column_path.split(column) + below)


def fallback(frontier: Iterable["Node"], found: list["LineageStep"], direction: "Direction",
             fetch: Callable[[list["Node"]], list["LineageStep"]]) -> list["LineageStep"]:
    """Edges of enclosing struct columns standing in for the nested fields of ``frontier``
    (upstream: only for fields ``found`` gave no edge of their own).

    ``fetch`` returns one hop's edges for a list of nodes (the caller's own query).
    """
    own = {e.target for e in found if not e.dataset_level} if direction == "upstream" else set()
    wanted = {node: ancestors(node) for node in frontier if node not in own}
    wanted = {node: up for node, up in wanted.items() if up}
    if not wanted:
        return []
    parents = sorted({parent for up in wanted.values() for parent, _ in up})
    by_parent: dict["Node", list["LineageStep"]] = {}
    for e in fetch(parents):
        if e.dataset_level and direction == "upstream":  # already found for the field's own dataset
            continue
        near = e.target if direction == "upstream" else e.source
        by_parent.setdefault(near, []).append(e)
    out: list["LineageStep"] = []
    for node, up in wanted.items():
        for parent, below in up:  # upstream: the nearest enclosing struct with edges answers
            edges = by_parent.get(parent)
            if not edges:
                continue
            for e in edges:
                copy = e.kind == "direct" and e.transform in COPIES and not e.dataset_level
                if direction == "upstream":
                    source = (e.source[0], _carry(e.source[1], below)) if copy else e.source
                    out.append(replace(e, source=source, target=node))
                else:
                    target = (e.target[0], _carry(e.target[1], below)) if copy else e.target
                    out.append(replace(e, source=node, target=target))
            if direction == "upstream":
                break
    return out
