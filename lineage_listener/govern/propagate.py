"""Labels along a lineage graph: functions over plain ``networkx.DiGraph`` objects.

The graph is the one :func:`~lineage_listener.query.graph.build_graph` makes: nodes are
``(dataset, column)``, edges point source -> target and hold ``records`` (each stored edge of
that step: ``transform``, ``kind``, ``expression``, ``masking``, ``first_seen``,
``captured_at`` (the last capture), ``edge_id``, ``query_id``, ``run_id``).

The rules (docs/reference/semantics.md):

- a label travels along direct edges (identity, rename, derived, aggregate) that do not mask;
  a masking edge (a built-in masking function, or one the user declared) makes a *masked*
  copy, which does not carry it; an indirect edge (filter, join, group_by, sort, window,
  conditional) carries nothing: what lies past one is only *influenced*;
- a path never runs backwards in time: a hop carries only what its upstream hop wrote
  earlier (some capture of the upstream edge is not later than some capture of the
  downstream edge). Each column's earliest arrival is found as in Dijkstra's algorithm,
  with capture times as distances, so a column is reached exactly when a time-respecting
  path reaches it;
- in a window (``since``), a path counts when its last hop was captured in the window; the
  hops before it may be older;
- a column whose declaration says it does not carry a label (a review: ``!pii``) does not
  carry it, nor any kind of it, and passes neither on.

>>> import networkx as nx
>>> from datetime import datetime as T
>>> g = nx.DiGraph()
>>> rec = lambda tr, kind="direct", masking=False, day=1: {"transform": tr, "kind": kind, "masking": masking,
...     "expression": None, "first_seen": T(2026, 1, day), "captured_at": T(2026, 1, day), "edge_id": None,
...     "query_id": "q", "run_id": "r"}
>>> g.add_edge(("raw", "email"), ("clean", "email"), records=[rec("identity", day=1)])
>>> g.add_edge(("clean", "email"), ("export", "h"), records=[rec("derived", masking=True, day=2)])
>>> g.add_edge(("clean", "email"), ("ltv", "total"), records=[rec("group_by", kind="indirect", day=2)])
>>> g.add_edge(("clean", "email"), ("old", "email"), records=[rec("identity", day=1)])
>>> found = propagate(g, {("raw", "email"): {"pii.email": True}})
>>> sorted((n, r.state) for n, r in found["pii.email"].items())  # doctest: +NORMALIZE_WHITESPACE
[(('clean', 'email'), 'copy'), (('export', 'h'), 'masked'), (('ltv', 'total'), 'influenced'),
 (('old', 'email'), 'copy')]
>>> [h.transform for h in found["pii.email"][("export", "h")].hops]
['identity', 'derived']
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from itertools import count

import networkx as nx

from lineage_listener.govern.masking import masks_by, normalise
from lineage_listener.govern.patterns import is_kind_of

Node = tuple[str, str]

COPY, MASKED, INFLUENCED = 0, 1, 2
STATES = ("copy", "masked", "influenced")
_DAWN = datetime.min

#: Every capture time of a stored edge (by ``edge_id``), oldest first: the exact lookup a path
#: needs when an edge's first and last capture cannot decide whether it carried a value.
CaptureTimes = Callable[[int], list[datetime]]


@dataclass(frozen=True)
class Hop:
    """One step of a path, and the capture of it the path goes through."""

    source: Node
    target: Node
    transform: str
    kind: str
    expression: str | None
    masking: bool               # masks (built-in or declared function)
    captured_at: datetime       # the capture this path uses
    first_seen: datetime | None
    last_seen: datetime
    edge_id: int | None
    query_id: str | None        # the edge's last capture's; :func:`~lineage_listener.govern.reach.pin` pins it
    run_id: str | None


@dataclass(frozen=True)
class Reached:
    """How a label reaches a column: ``state`` copy / masked / influenced, from ``origin``."""

    label: str
    node: Node
    state: str
    origin: Node
    hops: tuple[Hop, ...]
    arrival: datetime           # when the label's data first got there along this path

    @property
    def via(self) -> list[str]:
        """The indirect transforms on the path (what makes it an influence)."""
        return sorted({h.transform for h in self.hops if h.kind != "direct"})


def step(state: int, record: Mapping, source_column: str, masking: frozenset[str]) -> int:
    """The state after crossing ``record``: an indirect edge influences, a masking one masks.

    >>> step(COPY, {"kind": "direct", "masking": True}, "x", frozenset())
    1
    >>> step(MASKED, {"kind": "indirect", "masking": False}, "x", frozenset())
    2
    """
    if record.get("kind") != "direct":
        return INFLUENCED
    if state == COPY and masks_by(record, source_column, masking):
        return MASKED
    return state


def earliest(record: Mapping, after: datetime, times: CaptureTimes | None = None,
             since: datetime | None = None) -> datetime | None:
    """The first capture of ``record`` not before ``after`` (nor ``since``), or None: the bounds
    (first and last capture) decide most cases, ``times`` the rest.

    >>> from datetime import datetime as T
    >>> r = {"first_seen": T(2026, 1, 1), "captured_at": T(2026, 1, 9), "edge_id": 7}
    >>> earliest(r, T(2025, 1, 1)), earliest(r, T(2026, 2, 1))
    (datetime.datetime(2026, 1, 1, 0, 0), None)
    >>> earliest(r, T(2026, 1, 5), lambda eid: [T(2026, 1, 1), T(2026, 1, 6), T(2026, 1, 9)])
    datetime.datetime(2026, 1, 6, 0, 0)
    """
    bound = max(after, since) if since is not None else after
    first = record.get("first_seen") or record["captured_at"]
    last = record["captured_at"]
    if last < bound:
        return None
    if first >= bound:
        return first
    if times is not None and record.get("edge_id") is not None:
        return next((t for t in times(record["edge_id"]) if t >= bound), last)
    return last


def roles(declared: Mapping[Node, Mapping[str, bool]], label: str) -> tuple[set[Node], set[Node]]:
    """The columns declared to carry ``label`` (seeds) and those declared not to (a review of it or
    of a more general label: ``!pii`` stops ``pii.email``)."""
    seeds, stops = set(), set()
    for node, labels in declared.items():
        if labels.get(label) is True:
            seeds.add(node)
        elif any(value is False and is_kind_of(label, other) for other, value in labels.items()):
            stops.add(node)
    return seeds, stops


def propagate(g: nx.DiGraph, declared: Mapping[Node, Mapping[str, bool]], masking: Iterable[str] = (),
              times: CaptureTimes | None = None, since: datetime | None = None,
              labels: Iterable[str] | None = None) -> dict[str, dict[Node, Reached]]:
    """Per label, every column of ``g`` it reaches from its declared columns, at its best state
    (copy, else masked, else influenced) with the earliest path to it; declared columns are not
    included. ``declared``: per column, label -> value (the effective declarations)."""
    names = normalise(masking)
    wanted = set(labels) if labels is not None else {lb for d in declared.values() for lb, v in d.items() if v}
    out: dict[str, dict[Node, Reached]] = {}
    for label in sorted(wanted):
        seeds, stops = roles(declared, label)
        if seeds:
            out[label] = _reach(g, label, seeds, stops, names, times, since)
    return out


def _reach(g: nx.DiGraph, label: str, seeds: set[Node], stops: set[Node], masking: frozenset[str],
           times: CaptureTimes | None, since: datetime | None) -> dict[Node, Reached]:
    best: dict[tuple[Node, int], tuple[datetime, tuple[Node, int] | None, Hop | None]] = {}
    tie = count()
    heap: list = []
    for s in seeds:
        if s in g:
            best[(s, COPY)] = (_DAWN, None, None)
            heap.append((_DAWN, next(tie), s, COPY))
    heapq.heapify(heap)
    while heap:
        arrival, _, u, state = heapq.heappop(heap)
        if best[(u, state)][0] < arrival:
            continue
        for _, v, data in g.out_edges(u, data=True):
            if v in stops or v in seeds:
                continue
            for record in data.get("records") or [data]:
                new = step(state, record, u[1], masking)
                t = earliest(record, arrival, times)
                if t is None:
                    continue
                old = best.get((v, new))
                if old is None or t < old[0]:
                    best[(v, new)] = (t, (u, state), _hop(u, v, record, t, masking))
                    heapq.heappush(heap, (t, next(tie), v, new))
    finals = best if since is None else _in_window(g, best, seeds, stops, masking, times, since)
    found: dict[Node, Reached] = {}
    for (node, state), (arrival, pred, hop) in sorted(finals.items(), key=lambda kv: (kv[0][1], kv[1][0])):
        if node in seeds or node in found or hop is None:
            continue
        hops = _path(best, pred) + (hop,)
        found[node] = Reached(label, node, STATES[state], hops[0].source, hops, arrival)
    return found


def _in_window(g: nx.DiGraph, best: dict, seeds: set[Node], stops: set[Node], masking: frozenset[str],
               times: CaptureTimes | None, since: datetime) -> dict:
    """Per column and state, a last hop captured since ``since`` after its source got the data."""
    kept: dict = {}
    for (u, state), (arrival, _, _) in best.items():
        for _, v, data in g.out_edges(u, data=True):
            if v in stops or v in seeds:
                continue
            for record in data.get("records") or [data]:
                new = step(state, record, u[1], masking)
                t = earliest(record, arrival, times, since)
                if t is None:
                    continue
                old = kept.get((v, new))
                if old is None or t < old[0]:
                    kept[(v, new)] = (t, (u, state), _hop(u, v, record, t, masking))
    return kept


def _path(best: dict, key: tuple[Node, int] | None) -> tuple[Hop, ...]:
    hops: list[Hop] = []
    seen = set()
    while key is not None and key not in seen:
        seen.add(key)
        _, pred, hop = best[key]
        if hop is not None:
            hops.append(hop)
        key = pred
    return tuple(reversed(hops))


def _hop(u: Node, v: Node, record: Mapping, t: datetime, masking: frozenset[str]) -> Hop:
    return Hop(u, v, record["transform"], record["kind"], record.get("expression"),
               record.get("kind") == "direct" and masks_by(record, u[1], masking), t,
               record.get("first_seen"), record["captured_at"], record.get("edge_id"), record.get("query_id"),
               record.get("run_id"))


def path_rows(reached: Reached) -> list[list]:
    """The path as ``[[dataset, column, transform], ...]`` from the labelled column (transform null)
    to the column reached (each transform: of the edge into that column)."""
    if not reached.hops:
        return [[reached.node[0], reached.node[1], None]]
    rows = [[reached.hops[0].source[0], reached.hops[0].source[1], None]]
    rows += [[h.target[0], h.target[1], h.transform] for h in reached.hops]
    return rows
