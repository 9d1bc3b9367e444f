"""Labels along a lineage graph: functions over plain ``networkx.DiGraph`` objects.

The graph is the one :func:`~lineage_listener.query.graph.build_graph` makes: nodes are
``(dataset, column)``, edges point source -> target and hold ``records`` (each stored edge of
that step, with its capture times). A label walks downstream from the columns declared to carry
it by the query layer's rules (:func:`~lineage_listener.query.kept.keep`; docs/reference/semantics.md,
"Labels"):

- a label travels along copies: direct edges (identity, rename, derived, aggregate) that do not
  mask; a masked copy (a built-in masking function, or one the user declared:
  :mod:`~lineage_listener.govern.masking`) does not carry it; what lies past an indirect edge
  (filter, join, group_by, sort, window, conditional) is only *influenced*;
- a path never runs backwards in time, and in a window a path counts when its last step was
  captured in the window (the steps before it may be older);
- a column whose declaration says it does not carry a label (a review: ``!pii``) does not carry
  it, nor any kind of it, and passes neither on.

Each column reached says how (``copy``, ``masked`` or ``influenced``: a copy when some path is a
clear copy, masked when every copy path masks) and why: the earliest such path back to a labelled
column, each hop with the capture it uses.

>>> import networkx as nx
>>> g = nx.DiGraph()
>>> rec = lambda tr, kind="direct", masking=False: {"transform": tr, "kind": kind, "masking": masking,
...     "expression": None, "edge_id": None, "query_id": "q", "run_id": "r"}
>>> g.add_edge(("raw", "email"), ("clean", "email"), records=[rec("identity")])
>>> g.add_edge(("clean", "email"), ("export", "h"), records=[rec("derived", masking=True)])
>>> g.add_edge(("clean", "email"), ("ltv", "total"), records=[rec("group_by", kind="indirect")])
>>> found = propagate(g, {("raw", "email"): {"pii.email": True}})
>>> sorted((n, r.state) for n, r in found["pii.email"].items())  # doctest: +NORMALIZE_WHITESPACE
[(('clean', 'email'), 'copy'), (('export', 'h'), 'masked'), (('ltv', 'total'), 'influenced')]
>>> [h.transform for h in found["pii.email"][("export", "h")].hops]
['identity', 'derived']
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

import networkx as nx

from lineage_listener.govern.masking import masks_by, normalise
from lineage_listener.govern.patterns import is_kind_of
from lineage_listener.query.copies import CLEAR, INFLUENCED, MASKED, lane
from lineage_listener.query.current import Replaces, by_epoch, column
from lineage_listener.query.kept import Lanes, Lookup, keep, path

Node = tuple[str, str]

#: How a label reaches a column, from a path's state (docs/reference/semantics.md, "Labels").
STATE = {CLEAR: "copy", MASKED: "masked", INFLUENCED: "influenced"}


@dataclass(frozen=True)
class Hop:
    """One step of a path, and the capture of it the path goes through."""

    source: Node
    target: Node
    transform: str
    kind: str
    expression: str | None
    masking: bool               # masks (built-in or declared function)
    captured_at: datetime | None  # the capture this path uses (None: an edge without captures)
    first_seen: datetime | None
    last_seen: datetime | None
    edge_id: int | None
    query_id: str | None        # the edge's last capture's; :meth:`~lineage_listener.govern.reach.CaptureBook.pin`
    run_id: str | None          # pins the capture's own


@dataclass(frozen=True)
class Reached:
    """How a label reaches a column: ``state`` copy / masked / influenced, from ``origin``."""

    label: str
    node: Node
    state: str
    origin: Node
    hops: tuple[Hop, ...]
    via: tuple[str, ...] = ()   # the indirect transforms on the paths of an influenced column


def roles(declared: Mapping[Node, Mapping[str, bool]], label: str) -> tuple[set[Node], set[Node]]:
    """The columns declared to carry ``label`` (seeds) and those declared not to (a review of it or
    of a more general label: ``!pii`` stops ``pii.email``).

    >>> roles({("t", "a"): {"pii.email": True}, ("u", "a"): {"pii": False}}, "pii.email")
    ({('t', 'a')}, {('u', 'a')})
    """
    seeds, stops = set(), set()
    for node, labels in declared.items():
        if labels.get(label) is True:
            seeds.add(node)
        elif any(value is False and is_kind_of(label, other) for other, value in labels.items()):
            stops.add(node)
    return seeds, stops


def with_masking(g: nx.DiGraph, masking: Iterable[str]) -> nx.DiGraph:
    """``g`` where each record that masks through a declared function says so (``masking`` true):
    the graph itself when no function is declared or none applies.

    >>> g = nx.DiGraph()
    >>> g.add_edge(("s", "e"), ("t", "h"), records=[{"kind": "direct", "masking": False,
    ...                                               "expression": "my_hash(e)"}])
    >>> with_masking(g, ["my_hash"]).edges[("s", "e"), ("t", "h")]["records"][0]["masking"]
    True
    """
    names = normalise(masking)
    if not names:
        return g
    changed = {}
    for u, v, d in g.edges(data=True):
        records = d.get("records") or [d]
        if any(r.get("kind") == "direct" and not r.get("masking") and masks_by(r, u[1], names) for r in records):
            changed[(u, v)] = [{**r, "masking": True} if r.get("kind") == "direct" and masks_by(r, u[1], names)
                               else r for r in records]
    if not changed:
        return g
    out = g.copy()
    for (u, v), records in changed.items():
        out.edges[u, v]["records"] = records
    return out


def propagate(g: nx.DiGraph, declared: Mapping[Node, Mapping[str, bool]], masking: Iterable[str] = (),
              lookup: Lookup | None = None, since: datetime | None = None, until: datetime | None = None,
              labels: Iterable[str] | None = None, at: Iterable[Node] | None = None,
              current: Replaces | None = None, times: Mapping[int, tuple[datetime, ...]] | None = None
              ) -> dict[str, dict[Node, Reached]]:
    """Per label, every column of ``g`` it reaches from its declared columns, at its best state
    (copy, else masked, else influenced) with the earliest path to it; declared columns are not
    included. ``declared``: per column, label -> value (the effective declarations); ``lookup``:
    exact capture times (:func:`~lineage_listener.query.expand.nearest_captures`); ``at``: only
    those columns (the paths of no other are traced).

    ``current``: what the columns hold now (docs/reference/semantics.md, "Current state"): the
    replacing writes of the datasets, and ``times``, every capture time of the edges of replaced
    datasets (:func:`~lineage_listener.query.current.edge_times`). A path then reads each column in
    the epoch its hop into it wrote, and a column is reached when its current epoch is."""
    g = with_masking(g, masking)
    wanted = set(labels) if labels is not None else {lb for d in declared.values() for lb, v in d.items() if v}
    split = by_epoch(g, current, times or {}) if current else None
    walked_all = split if split is not None else g
    epochs: dict[Node, list[tuple]] = {}
    for n in walked_all.nodes:
        epochs.setdefault(column(n), []).append(n)
    targets = None if at is None else set(at)
    judged = None if split is None else {n for n in split.nodes if n[2] == current.current(n[0])
                                         and (targets is None or column(n) in targets)}
    out: dict[str, dict[Node, Reached]] = {}
    made: Lanes = {}  # each edge's lanes, made once for every label's walk
    for label in sorted(wanted):
        seeds, stops = roles(declared, label)
        seeds = {n for s in seeds for n in epochs.get(s, ())}
        stopped = {n for s in stops for n in epochs.get(s, ())}
        if seeds:
            walked = walked_all.subgraph(n for n in walked_all.nodes if n not in stopped) if stopped else walked_all
            k = keep(walked, sorted(seeds), "downstream", since, until, lookup, arrivals=True, made=made)
            out[label] = _reached(k, label, seeds, targets if judged is None else judged)
    return out


def _reached(k: nx.DiGraph, label: str, seeds: set, at: set | None) -> dict[Node, Reached]:
    found: dict[Node, Reached] = {}
    for node, data in k.nodes(data=True):
        arrived = data.get("arrivals")
        if node in seeds or not arrived or (at is not None and node not in at):
            continue
        state = next(s for s in (CLEAR, MASKED, INFLUENCED) if s in arrived)
        hops = tuple(_hop(k, u, v, name, at) for u, v, name, at in path(k, node, state))
        found[column(node)] = Reached(label, column(node), STATE[state], hops[0].source, hops,
                                      tuple(data.get("via", ())) if state == INFLUENCED else ())
    return found


def _hop(k: nx.DiGraph, u: tuple, v: tuple, name: str, at: datetime | None) -> Hop:
    """The hop of a path over graph edge ``u -> v`` in lane ``name``, by the record captured at ``at``."""
    records = [r for r in k.edges[u, v].get("records") or [k.edges[u, v]] if lane(r) == name]
    r = next((r for r in records if at is not None and any(at in times for times in r.get("known", ()))), None) \
        or next((r for r in records if at is not None and r.get("earliest") is not None
                 and r["earliest"] <= at <= r["latest"]), records[0])
    return Hop(column(u), column(v), r["transform"], r["kind"], r.get("expression"), bool(r.get("masking")), at,
               r.get("first_seen"), r.get("captured_at"), r.get("edge_id"), r.get("query_id"), r.get("run_id"))


def path_rows(reached: Reached) -> list[list]:
    """The path as ``[[dataset, column, transform], ...]`` from the labelled column (transform null)
    to the column reached (each transform: of the edge into that column)."""
    if not reached.hops:
        return [[reached.node[0], reached.node[1], None]]
    rows = [[reached.hops[0].source[0], reached.hops[0].source[1], None]]
    rows += [[h.target[0], h.target[1], h.transform] for h in reached.hops]
    return rows
