"""The current state of datasets: the writes that replaced each, and the lineage graph split by them.

A write that replaces a dataset (``queries.write_mode`` ``replace``: an overwrite, CTAS, RTAS,
``INSERT OVERWRITE`` of the whole table) starts a new *epoch* of it: the data written into it
before is gone. Appends, MERGE / UPDATE / DELETE and partition overwrites change no epoch
(docs/reference/semantics.md, "Current state").

A path carries data of its first column into its last one when each hop read its source in the
epoch the hop before it wrote (no replacing write of that dataset in between), and a column holds
it *now* when the last hop wrote into the column's current epoch. :func:`by_epoch` turns a walk's
graph into one whose nodes are ``(dataset, column, epoch)``, each hop's captures on the edge
between the epochs it read and wrote: the query layer's time rules
(:func:`~lineage_listener.query.kept.keep`) then hold within epochs, and what reaches a column's
current epoch is what it holds now.

>>> from datetime import datetime as dt
>>> r = Replaces({"t": (dt(2026, 1, 5),)}, {"t": ("q5",)})
>>> r.epoch("t", dt(2026, 1, 4)), r.epoch("t", dt(2026, 1, 5)), r.current("t"), r.current("u")
(0, 1, 1, 0)
>>> g = nx.DiGraph()
>>> rec = lambda day, edge_id: {"kind": "direct", "masking": False, "transform": "identity",
...     "earliest": dt(2026, 1, day), "latest": dt(2026, 1, day), "captured_at": dt(2026, 1, day),
...     "edge_id": edge_id}
>>> g.add_edge(("s", "a"), ("t", "a"), records=[rec(3, 1), rec(6, 2)])
>>> split = by_epoch(g, r, {1: (dt(2026, 1, 3),), 2: (dt(2026, 1, 6),)})
>>> sorted(split.edges)
[(('s', 'a', 0), ('t', 'a', 0)), (('s', 'a', 0), ('t', 'a', 1))]
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb
import networkx as nx

from lineage_listener.query.expand import Filters
from lineage_listener.query.names import Aliases
from lineage_listener.query.types import Node
from lineage_listener.timewindow import window_sql

#: A column in one epoch of its dataset: ``(dataset, column, epoch)``, epoch 0 before the first replace.
EpochNode = tuple[str, str, int]


@dataclass(frozen=True)
class Replaces:
    """Per canonical dataset, when its replacing writes were captured (oldest first) and their queries;
    ``partial``: per dataset, the last overwrite of some partitions after its last replace (the
    store cannot tell which partitions it replaced: the earlier writes' edges stay)."""

    times: Mapping[str, tuple[datetime, ...]]
    queries: Mapping[str, tuple[str, ...]]
    partial: Mapping[str, tuple[datetime, str]] = field(default_factory=dict)

    def epoch(self, dataset: str, t: datetime | None) -> int:
        """The epoch of ``dataset`` at ``t``, as written then (a replace captured at ``t`` starts it)."""
        times = self.times.get(dataset, ())
        if not times:
            return 0
        return len(times) if t is None else bisect_right(times, t)

    def read_at(self, dataset: str, t: datetime) -> int:
        """The epoch a query captured at ``t`` read ``dataset`` in: a write replacing the dataset it
        reads (``INSERT OVERWRITE t SELECT ... FROM t``) read the epoch before its own."""
        return bisect_left(self.times.get(dataset, ()), t)

    def current(self, dataset: str) -> int:
        return len(self.times.get(dataset, ()))

    def last(self, dataset: str) -> tuple[datetime, str] | None:
        """When ``dataset`` was last replaced, and by which query (None: never)."""
        times = self.times.get(dataset)
        return (times[-1], self.queries[dataset][-1]) if times else None

    def __bool__(self) -> bool:
        return bool(self.times)

    def with_replaced(self, datasets: Iterable[str], at: datetime, query_id: str) -> "Replaces":
        """These replaces and ``datasets`` replaced at ``at`` by ``query_id`` (a preview's writes)."""
        times, queries = dict(self.times), dict(self.queries)
        for d in datasets:
            times[d] = (*times.get(d, ()), at)
            queries[d] = (*queries.get(d, ()), query_id)
        return Replaces(times, queries, {d: p for d, p in self.partial.items() if d not in set(datasets)})


def replaces(con: duckdb.DuckDBPyConnection, aliases: Aliases, until: datetime | None = None,
             datasets: Iterable[str] | None = None) -> Replaces:
    """The replacing writes of the store (failed writes left out), up to ``until``, by canonical dataset
    name, and the overwrites of some partitions after them; of ``datasets`` (canonical names) only
    when given."""
    only = ""
    within, bounds = window_sql("captured_at", None, until)
    params: dict[str, Any] = {**bounds}
    if datasets is not None:
        params["n"] = sorted({n for d in datasets for n in aliases.names(d)})
        only = "AND target_dataset IN (SELECT unnest($n))"
    rows = con.execute(
        f"""SELECT target_dataset, captured_at, query_id, write_mode FROM queries
            WHERE write_mode IN ('replace', 'partitions') AND status = 'succeeded' AND target_dataset IS NOT NULL
              AND {within} {only}
            ORDER BY captured_at, query_id""", params).fetchall()
    aliases.resolve(r[0] for r in rows)
    times: dict[str, list[datetime]] = {}
    queries: dict[str, list[str]] = {}
    partial: dict[str, tuple[datetime, str]] = {}
    for target, at, query_id, mode in rows:
        dataset = aliases.canonical(target)
        if mode == "replace":
            times.setdefault(dataset, []).append(at)
            queries.setdefault(dataset, []).append(query_id)
            partial.pop(dataset, None)
        else:
            partial[dataset] = (at, query_id)
    return Replaces({d: tuple(t) for d, t in times.items()}, {d: tuple(q) for d, q in queries.items()}, partial)


def edge_times(con: duckdb.DuckDBPyConnection, edge_ids: Iterable[int], filters: Filters = Filters()
               ) -> dict[int, tuple[datetime, ...]]:
    """Every distinct capture time of each edge (oldest first) a path may use within ``filters``."""
    ids = sorted(set(edge_ids))
    if not ids:
        return {}
    usable, bounds = filters.window_sql(until_only=True)
    rows = con.execute(f"""
        WITH x AS (SELECT edge_id, unnest(sets) AS set_id FROM edges WHERE edge_id IN (SELECT unnest($ids)))
        SELECT x.edge_id, list(DISTINCT c.captured_at ORDER BY c.captured_at)
        FROM x JOIN edge_captures c ON c.set_id = x.set_id
        WHERE {filters.live()} AND {usable}
        GROUP BY x.edge_id""", {"ids": ids, **bounds}).fetchall()
    return {edge_id: tuple(times) for edge_id, times in rows}


def split_ids(g: nx.DiGraph, r: Replaces) -> set[int]:
    """The edges of ``g`` whose captures :func:`by_epoch` needs one by one: those into or out of a
    dataset that was replaced."""
    return {rec["edge_id"] for u, v, d in g.edges(data=True) if r.times.get(u[0]) or r.times.get(v[0])
            for rec in d.get("records", ()) if rec.get("edge_id") is not None}


def by_epoch(g: nx.DiGraph, r: Replaces, times: Mapping[int, tuple[datetime, ...]]) -> nx.DiGraph:
    """``g`` with its columns split by the epochs of their datasets (:data:`EpochNode`): each capture
    of an edge lies on the edge from its source's epoch to its target's epoch at the capture's time,
    its records cut to those captures (``times``: every capture time of the edges into or out of a
    replaced dataset, :func:`edge_times`; a record with no edge id, a preview's, at its own time).
    Columns of datasets never replaced are in epoch 0 and keep their records as they are."""
    out = nx.DiGraph(**g.graph)
    for node, data in g.nodes(data=True):
        out.add_node((*node, r.current(node[0])), **data)
    for u, v, data in g.edges(data=True):
        records = data.get("records") or [data]
        if not (r.times.get(u[0]) or r.times.get(v[0])):
            out.add_edge((*u, 0), (*v, 0), **data)
            continue
        parts: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for rec in records:
            at = _times_of(rec, times)
            groups: dict[tuple[int, int], list[datetime]] = {}
            for t in at:
                groups.setdefault((r.read_at(u[0], t), r.epoch(v[0], t)), []).append(t)
            for key, ts in groups.items():
                parts.setdefault(key, []).append(_cut(rec, ts))
            if not at and "latest" not in rec:   # a record without capture times: usable in every epoch
                parts.setdefault((r.current(u[0]), r.current(v[0])), []).append(rec)
        for (eu, ev), recs in parts.items():
            out.add_edge((*u, eu), (*v, ev), **{**data, "records": recs})
    return out


def _times_of(rec: Mapping[str, Any], times: Mapping[int, tuple[datetime, ...]]) -> tuple[datetime, ...]:
    if rec.get("edge_id") is not None and rec["edge_id"] in times:
        return times[rec["edge_id"]]
    if rec.get("latest") is None:
        return ()
    known = rec.get("known") or ()
    return tuple(sorted(set(known[0]) | set(known[-1]))) if known else tuple(
        sorted({t for t in (rec.get("earliest"), rec.get("latest")) if t is not None}))


def _cut(rec: Mapping[str, Any], ts: list[datetime]) -> dict[str, Any]:
    """``rec`` holding only the captures at ``ts`` (sorted): every one known."""
    ts = sorted(ts)
    return {**rec, "earliest": ts[0], "latest": ts[-1], "captured_at": ts[-1], "known": (tuple(ts),),
            "first_seen": ts[0], "captures": len(ts), "before_window": False}


def mark_history(g: nx.DiGraph, r: Replaces) -> nx.DiGraph:
    """Mark what of ``g`` (a walk's graph) a later replacing write of the target made history: each
    record captured only before the target's last replace gets ``history`` (that write's
    ``query_id`` and ``captured_at``; None: its data is still there); an edge gets ``history`` when
    all its records have it, and ``replaced``, the transforms only such records hold."""
    for u, v, d in g.edges(data=True):
        last = r.last(v[0])
        records = d.get("records") or [d]
        for rec in records:
            latest = rec.get("latest") or rec.get("captured_at")
            rec["history"] = {"query_id": last[1], "captured_at": last[0]} \
                if last is not None and latest is not None and latest < last[0] else None
        d["history"] = records[0]["history"] if all(rec["history"] for rec in records) else None
        d["replaced"] = sorted({rec["transform"] for rec in records if rec["history"]}
                               - {rec["transform"] for rec in records if not rec["history"]})
    return g


def in_epoch(node: Node, epoch: int) -> EpochNode:
    return (node[0], node[1], epoch)


def column(node: tuple) -> Node:
    """The column of an epoch node (a plain column as it is)."""
    return (node[0], node[1])
