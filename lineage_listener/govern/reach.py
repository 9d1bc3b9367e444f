"""The lineage graphs label propagation needs, read from a store, and the captures behind a path.

A label question about some columns walks upstream from them (where could a label come
from?); a question about the whole store walks downstream from every declared column. Both are
the query layer's multi-hop expansion (:func:`~lineage_listener.query.expand.expand`), many
start columns at once, into the graph :func:`~lineage_listener.query.graph.build_graph` makes.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import duckdb
import networkx as nx

from lineage_listener.govern.propagate import Hop
from lineage_listener.query.expand import Direction, Edge, Filters, Node, captures, expand
from lineage_listener.query.graph import build_graph
from lineage_listener.query.names import Aliases


def walk(con: duckdb.DuckDBPyConnection, starts: Iterable[Node], direction: Direction,
         until: datetime | None = None, direct_only: bool = False, aliases: Aliases | None = None,
         extra: Iterable[Edge] = ()) -> nx.DiGraph:
    """The graph of every edge reachable from ``starts`` in ``direction`` (captured until ``until``),
    with ``extra`` edges (not in the store: a preview's) joined in and walked on from."""
    aliases = aliases or Aliases(con)
    filters = Filters(until=until, direct_only=direct_only)
    starts = sorted(set(starts))
    extra = list(extra)
    edges = expand(con, starts, direction, filters=filters, aliases=aliases) if starts else []
    seen = set(starts) | {e.source for e in edges} | {e.target for e in edges}
    while extra:
        edges += extra
        ends = {e.target if direction == "downstream" else e.source for e in extra}
        new = sorted(ends - seen)
        seen |= ends
        extra = []
        if new:
            more = expand(con, new, direction, filters=filters, aliases=aliases)
            seen |= {e.source for e in more} | {e.target for e in more}
            edges += more
    first = starts[0] if starts else ("", "")
    g = build_graph(first, edges, direction)
    if not starts:
        g.remove_node(first)
    for node in starts:
        g.add_node(node, dataset=node[0], column=node[1], depth=0)
    return g


class CaptureBook:
    """Every capture of the edges a path crosses, read once per edge (lazily, for the few edges
    whose first and last capture cannot decide), and the query that made a given capture."""

    def __init__(self, con: duckdb.DuckDBPyConnection, until: datetime | None = None) -> None:
        self.con = con
        self._filters = Filters(until=until)
        self._rows: dict[int, list[tuple[str | None, str | None, datetime]]] = {}

    def load(self, edge_ids: Iterable[int]) -> None:
        todo = sorted({e for e in edge_ids if e is not None and e not in self._rows})
        if todo:
            found = captures(self.con, todo, self._filters)
            for eid in todo:
                self._rows[eid] = found.get(eid, [])

    def times(self, edge_id: int) -> list[datetime]:
        """Capture times of ``edge_id``, oldest first (the exact lookup of a time-respecting path)."""
        self.load([edge_id])
        return [t for _, _, t in self._rows[edge_id]]

    def pin(self, hops: Iterable[Hop]) -> list[dict]:
        """Each hop as plain data, with the query and run of the capture the path goes through."""
        hops = list(hops)
        self.load(h.edge_id for h in hops)
        out = []
        for h in hops:
            query_id, run_id = h.query_id, h.run_id
            for q, r, t in self._rows.get(h.edge_id, []) if h.edge_id is not None else []:
                if t == h.captured_at and q is not None:
                    query_id, run_id = q, r
                    break
            out.append({"source": list(h.source), "target": list(h.target), "transform": h.transform,
                        "kind": h.kind, "expression": h.expression, "masking": h.masking, "query_id": query_id,
                        "run_id": run_id, "captured_at": h.captured_at, "first_seen": h.first_seen,
                        "last_seen": h.last_seen})
        return out


def applications(con: duckdb.DuckDBPyConnection, run_ids: Iterable[str | None]) -> dict[str, str | None]:
    """The application name of each run."""
    ids = sorted({r for r in run_ids if r})
    if not ids:
        return {}
    return dict(con.execute("SELECT run_id, app_name FROM runs WHERE run_id IN (SELECT unnest($r))",
                            {"r": ids}).fetchall())
