"""Copies, influence and masking: what a path of lineage steps carries from its start.

Each stored edge (a *record* of a graph edge, see :mod:`lineage_listener.query.graph`) is
one of three *lanes*:

- ``clear``: a direct edge (identity, rename, derived, aggregate) without masking: the
  target holds the source's values;
- ``masked``: a direct edge through a hashing or masking function (or a count);
- ``influenced``: an indirect edge (filter, join, group_by, sort, window, conditional):
  the source decided which rows or groups the target has, not what values it holds.

A path's *state* is its strongest lane (``clear`` < ``masked`` < ``influenced``): a path
of direct steps is a *copy* (masked when one of its steps masks), a path with one indirect
step only *influences* its end. A column reached by several paths has the set of their
states: it is a copy when some path is, ``unmasked`` when every copy path is clear,
``masked`` when every copy path masks, ``partly`` otherwise; a column reached only
through indirect steps is ``influenced``, never a copy and never "unmasked".
See docs/reference/semantics.md (copies and influence, masking).

>>> lane({"kind": "direct", "masking": False})
'clear'
>>> combine(combine("clear", "masked"), "clear")
'masked'
>>> reach({"clear", "influenced"}), masking({"clear", "masked", "influenced"})
('copy', 'partly')
>>> reach({"influenced"}), masking({"influenced"})
('influenced', None)
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import networkx as nx

CLEAR, MASKED, INFLUENCED = "clear", "masked", "influenced"
#: Lanes and path states, weakest first: a path's state is the strongest lane on it.
LANES = (CLEAR, MASKED, INFLUENCED)
_RANK = {s: i for i, s in enumerate(LANES)}

#: Node attribute ``reach`` relative to the walk's start.
START, COPY = "start", "copy"


def lane(record: Mapping[str, Any]) -> str:
    """The lane of one stored edge: ``influenced`` (indirect), ``masked`` or ``clear`` (direct).

    >>> lane({"kind": "indirect", "masking": True})
    'influenced'
    >>> lane({"kind": "direct", "masking": True})
    'masked'
    """
    if record["kind"] != "direct":
        return INFLUENCED
    return MASKED if record["masking"] else CLEAR


def combine(state: str, step: str) -> str:
    """The state of a path extended by a step of lane ``step``: the stronger of the two.

    >>> combine("masked", "influenced"), combine("clear", "clear")
    ('influenced', 'clear')
    """
    return state if _RANK[state] >= _RANK[step] else step


def reach(states: Iterable[str]) -> str | None:
    """``copy`` when some path is direct, ``influenced`` when all are indirect, None without paths.

    >>> reach(["masked"]), reach([])
    ('copy', None)
    """
    states = set(states)
    if states & {CLEAR, MASKED}:
        return COPY
    return INFLUENCED if states else None


def masking(states: Iterable[str]) -> str | None:
    """Masking of a copy: ``unmasked`` (every direct path clear), ``masked`` (every direct path
    masks) or ``partly``; None when no path is direct (an influenced column is never unmasked).

    >>> masking(["clear"]), masking(["masked", "influenced"]), masking(["clear", "masked"])
    ('unmasked', 'masked', 'partly')
    """
    states = set(states)
    clear, masked = CLEAR in states, MASKED in states
    if clear and masked:
        return "partly"
    if clear:
        return "unmasked"
    return "masked" if masked else None


def copies(g: nx.DiGraph) -> list[tuple[str, str]]:
    """Nodes of an annotated graph (``reach`` set by a walk) that hold a copy of its start.

    >>> g = nx.DiGraph()
    >>> g.add_node(("t", "a"), reach="copy")
    >>> g.add_node(("t", "b"), reach="influenced")
    >>> copies(g), influenced(g)
    ([('t', 'a')], [('t', 'b')])
    """
    return sorted(n for n, r in g.nodes(data="reach") if r == COPY)


def influenced(g: nx.DiGraph) -> list[tuple[str, str]]:
    """Nodes of an annotated graph that its start only influenced (see :func:`copies`)."""
    return sorted(n for n, r in g.nodes(data="reach") if r == INFLUENCED)
