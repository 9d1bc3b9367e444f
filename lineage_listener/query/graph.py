"""Lineage edges as ``networkx.DiGraph`` objects, and questions over them.

Nodes are ``(dataset, column)`` tuples, edges point source -> target (data
flow). A step stored as several distinct edges (it is both a copy and a filter
key, or its expression changed) is one graph edge: its attributes describe the
preferred one (direct before indirect, then the latest) and ``records`` lists
them all, each with its first and last capture and how many captures it had
(``captures``). Which runs captured a step is a question of its own
(:meth:`~lineage_listener.query.store.LineageStore.captures`): a job that ran
every day for a year has 365.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import networkx as nx

from lineage_listener.query.expand import Edge, Node

#: strongest first (docs/reference/semantics.md, "Transform types")
TRANSFORM_RANK = {"aggregate": 0, "derived": 1, "rename": 2, "identity": 3}

_RECORD_FIELDS = ("transform", "kind", "expression", "masking", "query_id", "run_id",
                  "captured_at", "dataset_level", "first_seen", "captures", "edge_id")


def build_graph(start: Node, edges: Iterable[Edge], direction: str) -> nx.DiGraph:
    """A DiGraph of ``edges`` around ``start``; node attribute ``depth`` is the hop count.

    >>> g = build_graph(("t", "a"), [], "upstream")
    >>> list(g.nodes(data=True))
    [(('t', 'a'), {'dataset': 't', 'column': 'a', 'depth': 0})]
    """
    g = nx.DiGraph(start=start, direction=direction)
    g.add_node(start, dataset=start[0], column=start[1], depth=0)
    for e in edges:
        far = e.source if direction == "upstream" else e.target
        for node in (e.source, e.target):
            if node not in g:
                g.add_node(node, dataset=node[0], column=node[1], depth=e.hop)
        g.nodes[far]["depth"] = min(g.nodes[far]["depth"], e.hop)
        record = {f: getattr(e, f) for f in _RECORD_FIELDS}
        if g.has_edge(e.source, e.target):
            data = g.edges[e.source, e.target]
            if record not in data["records"]:
                data["records"].append(record)
            data["hop"] = min(data["hop"], e.hop)
        else:
            g.add_edge(e.source, e.target, records=[record], hop=e.hop)
    for _, _, data in g.edges(data=True):
        data["records"].sort(key=lambda r: r["captured_at"])
        best = min(data["records"], key=_preference)
        data.update(best)
        data["masking"] = any(r["masking"] for r in data["records"])
        data["transforms"] = sorted({r["transform"] for r in data["records"]})
        data["runs"] = sorted({r["run_id"] for r in data["records"] if r["run_id"] is not None})
        data["captures"] = sum(r["captures"] for r in data["records"])
        data["first_seen"] = min((r["first_seen"] or r["captured_at"] for r in data["records"]), default=None)
    return g


def _preference(record: dict) -> tuple:
    return (record["kind"] != "direct", TRANSFORM_RANK.get(record["transform"], 9),
            -record["captured_at"].timestamp())


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


def masking_status(g: nx.DiGraph, start: Node) -> dict[Node, str]:
    """For each column downstream of ``start``: ``masked`` when every path crosses a
    masking edge, ``unmasked`` when none does, ``partly`` otherwise.

    >>> g = nx.DiGraph()
    >>> g.add_edge(("s", "ssn"), ("t", "h"), masking=True)
    >>> masking_status(g, ("s", "ssn"))
    {('t', 'h'): 'masked'}
    """
    clear = nx.subgraph_view(g, filter_edge=lambda u, v: not g.edges[u, v].get("masking"))
    unmasked = nx.descendants(clear, start) if start in clear else set()
    down = nx.descendants(g, start)
    through_mask: set[Node] = set()
    for u, v, m in g.edges(data="masking"):
        if m and (u == start or u in down) and v not in through_mask:
            through_mask |= {v} | nx.descendants(g, v)
    out = {}
    for node in down:
        if node in unmasked:
            out[node] = "partly" if node in through_mask else "unmasked"
        else:
            out[node] = "masked"
    return out


def graph_data(g: nx.DiGraph) -> dict[str, Any]:
    """The graph as plain data: start, nodes with depth, edges with every capture."""
    return {
        "start": {"dataset": g.graph["start"][0], "column": g.graph["start"][1]},
        "direction": g.graph["direction"],
        "nodes": [{"dataset": n[0], "column": n[1], "depth": d["depth"]}
                  for n, d in sorted(g.nodes(data=True), key=lambda x: (x[1]["depth"], x[0]))],
        "edges": [{"source": {"dataset": u[0], "column": u[1]},
                   "target": {"dataset": v[0], "column": v[1]},
                   **{k: d[k] for k in ("hop", "transform", "kind", "expression", "masking",
                                        "query_id", "run_id", "captured_at", "first_seen", "dataset_level",
                                        "captures")},
                   "runs": d["runs"]}
                  for u, v, d in sorted(g.edges(data=True), key=lambda e: (e[2]["hop"], e[0], e[1]))],
    }
