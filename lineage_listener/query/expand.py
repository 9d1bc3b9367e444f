"""Multi-hop expansion of column lineage, run in DuckDB one hop at a time.

Each hop is one query: the frontier's dataset names go in as a list, DuckDB
semi-joins ``column_lineage`` on the dataset (cheap: a hash filter pushed into
the scan) and keeps the edges of the frontier's columns plus the
dataset-level indirect edges (null ``target_column``). Only the rows found
come back to Python, so a depth-10 question over ten million edges reads a
few thousand rows, never the whole table.

Edges are returned in data-flow direction (source -> target) for both
directions of travel.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import duckdb

from lineage_listener.query import nested
from lineage_listener.query.names import Aliases

log = logging.getLogger(__name__)

Node = tuple[str, str]
Direction = Literal["upstream", "downstream"]

_COLUMNS = ("target_dataset, target_column, source_dataset, source_column, transform, kind, "
            "expression, masking, query_id, run_id, captured_at")


@dataclass(frozen=True)
class Edge:
    """One lineage step found by the expansion, with canonical dataset names."""

    source: Node
    target: Node
    hop: int                    # 1 = adjacent to the start column
    transform: str
    kind: str
    expression: str | None
    masking: bool
    query_id: str
    run_id: str
    captured_at: datetime
    dataset_level: bool         # stored with a null target_column (applies to every column)


#: Queries whose write Spark rejected: their edges stay in the store (for audit) but name a
#: target that may never have been written, so graph questions leave them out by default.
FAILED_WRITES = "SELECT query_id FROM queries WHERE status = 'failed' AND target_dataset IS NOT NULL"


@dataclass(frozen=True)
class Filters:
    """Which edges count: a capture time window, direct edges only, failed writes or not."""

    since: datetime | None = None
    until: datetime | None = None
    direct_only: bool = False
    include_failed: bool = False

    def sql(self) -> tuple[str, dict]:
        parts, params = [], {}
        if self.since is not None:
            parts.append("captured_at >= $since")
            params["since"] = self.since
        if self.until is not None:
            parts.append("captured_at <= $until")
            params["until"] = self.until
        if self.direct_only:
            parts.append("kind = 'direct'")
        if not self.include_failed:
            parts.append(f"query_id NOT IN ({FAILED_WRITES})")
        return "".join(f" AND {p}" for p in parts), params


def _hop_sql(direction: Direction, filters: Filters) -> tuple[str, dict]:
    extra, params = filters.sql()
    if direction == "upstream":
        near, near_col, far, far_col = "target_dataset", "target_column", "source_dataset", "source_column"
        match_col = f"({near_col} IS NULL OR ({near}, {near_col}) IN (SELECT d, c FROM f))"
    else:
        near, near_col, far, far_col = "source_dataset", "source_column", "target_dataset", "target_column"
        match_col = f"({near}, {near_col}) IN (SELECT d, c FROM f)"
    # Two phases in one statement: find the matching row ids scanning only the
    # name columns, then read the full rows of those ids (DuckDB does not
    # defer the wide columns by itself; this is ~3x faster on 10M rows).
    sql = f"""
        WITH f AS (SELECT unnest($d) AS d, unnest($c) AS c),
        hit AS MATERIALIZED (
            SELECT rowid AS r FROM column_lineage
            WHERE {near} IN (SELECT d FROM f) AND {match_col}
              AND {far} IS NOT NULL {"AND " + far_col + " IS NOT NULL" if direction == "upstream" else ""}
              {extra})
        SELECT {_COLUMNS} FROM column_lineage WHERE rowid IN (SELECT r FROM hit)"""
    return sql, params


def expand(con: duckdb.DuckDBPyConnection, start: Node, direction: Direction,
           depth: int | None = None, filters: Filters = Filters(),
           aliases: Aliases | None = None) -> list[Edge]:
    """All edges reachable from ``start`` (a canonical node) within ``depth`` hops.

    Cycles terminate: every node is expanded once, at its smallest hop count.

    >>> edges = expand(con, ("spark_catalog.db.report", "total"), "upstream", depth=10)  # doctest: +SKIP
    """
    aliases = aliases or Aliases(con)
    sql, params = _hop_sql(direction, filters)
    seen: set[Node] = {start}
    frontier: list[Node] = [start]
    found: list[Edge] = []
    hop = 0
    while frontier and (depth is None or hop < depth):
        hop += 1
        rows = _fetch(con, sql, params, frontier, aliases)
        edges = list(_edges(con, rows, frontier, direction, hop, aliases))
        edges += nested.fallback(frontier, edges, direction, lambda nodes, hop=hop: list(
            _edges(con, _fetch(con, sql, params, nodes, aliases), nodes, direction, hop, aliases)))
        found.extend(edges)
        far = [e.source if direction == "upstream" else e.target for e in edges]
        frontier = sorted({n for n in far if n not in seen})
        seen.update(frontier)
        log.debug("%s hop %d: %d rows, %d new columns", direction, hop, len(rows), len(frontier))
    return found


def _fetch(con, sql: str, params: dict, frontier: list[Node], aliases: Aliases) -> list[tuple]:
    aliases.resolve(d for d, _ in frontier)
    ds, cs = [], []
    for dataset, column in frontier:
        for name in aliases.names(dataset):
            ds.append(name)
            cs.append(column)
    return con.execute(sql, {**params, "d": ds, "c": cs}).fetchall()


def _edges(con, rows: list[tuple], frontier: list[Node], direction: Direction, hop: int,
           aliases: Aliases) -> Iterator[Edge]:
    aliases.resolve(name for r in rows for name in (r[0], r[2]))
    by_dataset: dict[str, list[str]] = {}
    for dataset, column in frontier:
        by_dataset.setdefault(dataset, []).append(column)
    wide: dict[str, list[str]] = {}
    if direction == "downstream":
        targets = {aliases.canonical(r[0]) for r in rows if r[1] is None}
        wide = columns_of(con, targets, aliases)
    for (t_ds, t_col, s_ds, s_col, transform, kind, expression, masking, query_id, run_id,
         captured_at) in rows:
        t_ds, s_ds = aliases.canonical(t_ds), aliases.canonical(s_ds)
        if t_col is not None:
            targets = [t_col]
        elif direction == "upstream":
            targets = by_dataset.get(t_ds, [])     # the frontier columns of that dataset
        else:
            targets = wide.get(t_ds, [])           # every known column of the target
        for column in targets:
            yield Edge((s_ds, s_col), (t_ds, column), hop, transform, kind, expression,
                       bool(masking), query_id, run_id, captured_at, t_col is None)


def columns_of(con: duckdb.DuckDBPyConnection, datasets: set[str], aliases: Aliases) -> dict[str, list[str]]:
    """Every known column of each canonical dataset: ``dataset_columns``, else direct edge targets."""
    if not datasets:
        return {}
    names = {name: ds for ds in datasets for name in aliases.names(ds)}
    out: dict[str, set[str]] = {}
    for name, column in con.execute(
            "SELECT dataset, column_name FROM dataset_columns WHERE dataset IN (SELECT unnest($n))",
            {"n": sorted(names)}).fetchall():
        out.setdefault(names[name], set()).add(column)
    missing = sorted(n for n, ds in names.items() if ds not in out)
    if missing:
        for name, column in con.execute(
                """SELECT DISTINCT target_dataset, target_column FROM column_lineage
                   WHERE target_dataset IN (SELECT unnest($n)) AND target_column IS NOT NULL""",
                {"n": missing}).fetchall():
            out.setdefault(names[name], set()).add(column)
    return {ds: sorted(cols) for ds, cols in out.items()}
