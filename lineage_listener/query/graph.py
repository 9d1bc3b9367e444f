"""Lineage edges as ``networkx.DiGraph`` objects, and questions over them.

Nodes are ``(dataset, column)`` tuples, edges point source -> target (data
flow). A step stored as several distinct edges (it is both a copy and a filter
key, or its expression changed) is one graph edge: its attributes describe the
preferred one (direct before indirect, the strongest transform, then the latest;
records equal in those by their transform and expression) and ``records`` lists
them all, each with its first and last capture and how many captures it had
(``captures``). Which runs captured a step is a question of its own
(:meth:`~lineage_listener.query.store.LineageStore.captures`): a job that ran
every day for a year has 365.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import networkx as nx

from lineage_listener.query.types import LineageStep, Node

#: strongest first (docs/reference/semantics.md, "Transform types")
TRANSFORM_RANK = {"aggregate": 0, "derived": 1, "rename": 2, "identity": 3}

_RECORD_FIELDS = ("transform", "kind", "expression", "masking", "query_id", "run_id",
                  "captured_at", "dataset_level", "first_seen", "captures", "edge_id",
                  "earliest", "latest", "before_window", "outside", "outside_first", "outside_last", "known",
                  "guess")


def build_graph(start: Node, edges: Iterable[LineageStep], direction: str) -> nx.DiGraph:
    """A DiGraph of ``edges`` around ``start``; node attribute ``depth`` is the hop count.

    Every step found is in it; :func:`~lineage_listener.query.kept.keep` makes the graph of
    the paths the rules keep.

    >>> g = build_graph(("t", "a"), [], "upstream")
    >>> list(g.nodes(data=True))
    [(('t', 'a'), {'dataset': 't', 'column': 'a', 'depth': 0})]
    """
    g = nx.DiGraph(start=start, direction=direction)
    g.add_node(start, dataset=start[0], column=start[1], depth=0)
    made: dict[tuple, dict[str, Any]] = {}  # a stored edge's record, made once for the columns it reaches
    for e in edges:
        far = e.source if direction == "upstream" else e.target
        for node in (e.source, e.target):
            if node not in g:
                g.add_node(node, dataset=node[0], column=node[1], depth=e.hop)
        g.nodes[far]["depth"] = min(g.nodes[far]["depth"], e.hop)
        record = _record(e, made)
        if g.has_edge(e.source, e.target):
            data = g.edges[e.source, e.target]
            if record not in data["records"]:
                data["records"].append(record)
            data["hop"] = min(data["hop"], e.hop)
        else:
            g.add_edge(e.source, e.target, records=[record], hop=e.hop)
    for _, _, data in g.edges(data=True):
        summarize(data)
    return g


def _record(e: LineageStep, made: dict[tuple, dict[str, Any]]) -> dict[str, Any]:
    """``e``'s record: one dict per stored edge and capture fields, shared by the graph edges of every
    column a dataset-level edge reaches (records are never changed in place: a walk's lanes are made
    once per record; :func:`~lineage_listener.query.kept.keep`)."""
    if e.edge_id is None:
        return {f: getattr(e, f) for f in _RECORD_FIELDS}
    key = (e.edge_id, e.dataset_level, e.captured_at, e.earliest, e.latest, e.captures, e.before_window)
    record = made.get(key)
    if record is None:
        record = made[key] = {f: getattr(e, f) for f in _RECORD_FIELDS}
    return record


def summarize(data: dict[str, Any]) -> dict[str, Any]:
    """Set a graph edge's summary attributes from its ``records``: the preferred record's
    transform, kind, expression and last capture (direct before indirect, then the latest),
    ``masking`` when a record masks, all ``transforms`` and ``runs``; ``captures`` and
    ``first_seen`` count the captures in the window, or, when ``before_window`` (no record was
    captured in it), the captures before it.

    >>> from datetime import datetime
    >>> r = lambda kind, t, day: {"kind": kind, "transform": t, "masking": False, "run_id": "r",
    ...     "captured_at": datetime(2026, 1, day), "first_seen": None, "captures": 1, "before_window": False}
    >>> d = summarize({"records": [r("indirect", "filter", 3), r("direct", "identity", 2)]})
    >>> d["transform"], d["transforms"], d["captures"], d["first_seen"].day
    ('identity', ['filter', 'identity'], 2, 2)

    Records tied on kind, transform rank and time give the same summary in any order:

    >>> a, b = r("indirect", "filter", 3), r("indirect", "group_by", 3)
    >>> summarize({"records": [a, b]})["transform"], summarize({"records": [b, a]})["transform"]
    ('filter', 'filter')
    """
    records = data["records"]
    records.sort(key=lambda r: (_latest(r), _preference(r)))
    current = [r for r in records if not r.get("before_window")]
    basis = current or records
    data.update(min(basis, key=_preference))
    data["masking"] = any(r["masking"] for r in records)
    data["guess"] = all(r.get("guess", False) for r in basis)  # a guess only when no capture read the code
    data["transforms"] = sorted({r["transform"] for r in records})
    data["runs"] = sorted({r["run_id"] for r in basis if r.get("run_id") is not None})
    data["captures"] = sum(r.get("captures", 1) for r in basis)
    data["first_seen"] = min((r.get("first_seen") or r["captured_at"] for r in basis if r.get("captured_at")),
                             default=None)
    data["before_window"] = not current
    return data


def _latest(record: dict) -> float:
    return record["captured_at"].timestamp() if record.get("captured_at") else 0.0


def _preference(record: dict) -> tuple:
    """Direct before indirect, the strongest transform, the latest; records equal in all three (a
    filter and a group-by key captured together) are told apart by what they say, so the summary
    never depends on the order the store returned them in."""
    return (record["kind"] != "direct", TRANSFORM_RANK.get(record["transform"], 9), -_latest(record),
            record["transform"] or "", record.get("expression") or "", record.get("edge_id") or 0)


def origins(g: nx.DiGraph) -> list[Node]:
    """Columns with no further upstream: sources of the condensation (a cycle counts as one).

    >>> g = nx.DiGraph([(("s", "a"), ("t", "a")), (("t", "a"), ("t", "a"))])
    >>> origins(g)
    [('s', 'a')]
    """
    c = nx.condensation(g)
    members = c.graph["mapping"]
    heads = {n for n, deg in c.in_degree() if deg == 0}
    return sorted(n for n, comp in members.items() if comp in heads)


def leaves(g: nx.DiGraph) -> list[Node]:
    """Columns nothing else is derived from (sinks, cycles counted as one)."""
    return origins(g.reverse(copy=False))


def paths(g: nx.DiGraph, start: Node, direction: str, limit: int = 200) -> Iterator[list[Node]]:
    """Simple paths from ``start`` to each end column, in data-flow order, at most ``limit``.

    Upstream paths run origin -> ... -> start; downstream paths start -> ... -> leaf.
    """
    ends = origins(g) if direction == "upstream" else leaves(g)
    count = 0
    for end in ends:
        if end == start:
            continue
        src, dst = (end, start) if direction == "upstream" else (start, end)
        for path in nx.all_simple_paths(g, src, dst):
            yield path
            count += 1
            if count >= limit:
                return


#: Node attributes a walk sets (:func:`~lineage_listener.query.kept.keep`) that graph data carries.
NODE_ATTRIBUTES = ("reach", "masking", "via", "before_window")
EDGE_ATTRIBUTES = ("hop", "transform", "kind", "expression", "masking", "query_id", "run_id", "captured_at",
                   "first_seen", "dataset_level", "captures", "before_window", "guess", "history", "replaced")


def graph_data(g: nx.DiGraph) -> dict[str, Any]:
    """The graph as plain data: start, direction, nodes (depth, ``reach``, ``masking`` of copies
    downstream, ``via`` of influenced columns, ``before_window``), edges with their captures, and
    the ``window`` (``since``, ``until``, ``outside``).

    >>> g = build_graph(("t", "a"), [], "downstream")
    >>> graph_data(g)["nodes"]
    [{'dataset': 't', 'column': 'a', 'depth': 0}]
    """
    return {
        "start": {"dataset": g.graph["start"][0], "column": g.graph["start"][1]},
        "direction": g.graph["direction"],
        "window": g.graph.get("window", {"since": g.graph.get("since"), "until": g.graph.get("until"),
                                         "outside": None}),
        "nodes": [{"dataset": n[0], "column": n[1], "depth": d["depth"],
                   **{k: d[k] for k in NODE_ATTRIBUTES if k in d}}
                  for n, d in sorted(g.nodes(data=True), key=lambda x: (x[1]["depth"], x[0]))],
        "edges": [{"source": {"dataset": u[0], "column": u[1]},
                   "target": {"dataset": v[0], "column": v[1]},
                   **{k: d[k] for k in EDGE_ATTRIBUTES if k in d},
                   "runs": d["runs"]}
                  for u, v, d in sorted(g.edges(data=True), key=lambda e: (e[2]["hop"], e[0], e[1]))],
    }
