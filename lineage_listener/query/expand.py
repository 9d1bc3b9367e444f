"""Multi-hop expansion of column lineage, run in DuckDB one hop at a time.

Each hop is one query: the frontier's dataset names go in as a list, DuckDB
semi-joins the distinct ``edges`` on the dataset and keeps the edges of the
frontier's columns plus the dataset-level indirect edges (null
``target_column``); each edge lists the sets of edges holding it, and the
capture rows of those sets (``edge_captures``) within the time window and not of
a failed write give it its first and last capture, count and last query and
run. An edge with no such capture is not in the answer, so windows are exact (an
edge seen on day 3 and day 30 is not in days 10-20). The work grows with the
distinct edges near the frontier and their captures, not with the per-edge rows
a year of daily runs would have stored.

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

_COLUMNS = ("e.target_dataset, e.target_column, e.source_dataset, e.source_column, e.transform, e.kind, "
            "e.expression, e.masking, h.query_id, h.run_id, h.last_seen, h.first_seen, h.captures, e.edge_id")


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
    query_id: str               # the last capture's (in the window)
    run_id: str
    captured_at: datetime       # the last capture (in the window)
    dataset_level: bool         # stored with a null target_column (applies to every column)
    first_seen: datetime | None = None  # the first capture (in the window)
    captures: int = 1           # how many captures (in the window)
    edge_id: int | None = None  # the row of ``edges``; its captures: :func:`captures`


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

    def sql(self) -> tuple[str, str, dict]:
        """Conditions on ``edges e`` and on ``edge_captures c`` (each `` AND ...``), and parameters."""
        on_edge, on_capture, params = [], [], {}
        if self.since is not None:
            on_capture.append("c.captured_at >= $since")
            params["since"] = self.since
        if self.until is not None:
            on_capture.append("c.captured_at <= $until")
            params["until"] = self.until
        if self.direct_only:
            on_edge.append("e.kind = 'direct'")
        if not self.include_failed:  # a summary row left by prune has no query: never a failed one
            on_capture.append(f"(c.query_id IS NULL OR c.query_id NOT IN ({FAILED_WRITES}))")
        return "".join(f" AND {p}" for p in on_edge), "".join(f" AND {p}" for p in on_capture), params


def _hop_sql(direction: Direction, filters: Filters) -> tuple[str, dict]:
    on_edge, on_capture, params = filters.sql()
    if direction == "upstream":
        near, near_col, far, far_col = "target_dataset", "target_column", "source_dataset", "source_column"
        match_col = f"(e.{near_col} IS NULL OR (e.{near}, e.{near_col}) IN (SELECT d, c FROM f))"
    else:
        near, near_col, far, far_col = "source_dataset", "source_column", "target_dataset", "target_column"
        match_col = f"(e.{near}, e.{near_col}) IN (SELECT d, c FROM f)"
    sql = f"""
        WITH f AS (SELECT unnest($d) AS d, unnest($c) AS c),
        e AS MATERIALIZED (
            SELECT * FROM edges e
            WHERE e.{near} IN (SELECT d FROM f) AND {match_col}
              AND e.{far} IS NOT NULL {"AND e." + far_col + " IS NOT NULL" if direction == "upstream" else ""}
              {on_edge}),
        h AS (
            SELECT x.edge_id, min(c.captured_at) AS first_seen, max(c.captured_at) AS last_seen,
                   sum(c.captures) AS captures, arg_max(c.query_id, c.captured_at) AS query_id,
                   arg_max(c.run_id, c.captured_at) AS run_id
            FROM (SELECT edge_id, unnest(sets) AS set_id FROM e) x
            JOIN edge_captures c ON c.set_id = x.set_id
            WHERE true {on_capture}
            GROUP BY x.edge_id)
        SELECT {_COLUMNS} FROM e JOIN h ON h.edge_id = e.edge_id"""
    return sql, params


def captures(con: duckdb.DuckDBPyConnection, edge_ids: list[int], filters: Filters = Filters()
             ) -> dict[int, list[tuple[str | None, str | None, datetime]]]:
    """Every capture of each edge, (query_id, run_id, captured_at) oldest first, within ``filters``:
    what a question about runs asks (who wrote this, in which runs), not what a walk needs."""
    if not edge_ids:
        return {}
    _, on_capture, params = filters.sql()
    out: dict[int, list[tuple]] = {}
    for eid, query_id, run_id, captured_at in con.execute(
            f"""SELECT s.edge_id, c.query_id, c.run_id, c.captured_at
                FROM (SELECT edge_id, unnest(sets) AS set_id FROM edges WHERE edge_id IN (SELECT unnest($ids))) s
                JOIN edge_captures c ON c.set_id = s.set_id
                WHERE true {on_capture}
                ORDER BY c.captured_at, c.query_id""", {**params, "ids": sorted(set(edge_ids))}).fetchall():
        out.setdefault(eid, []).append((query_id, run_id, captured_at))
    return out


def expand(con: duckdb.DuckDBPyConnection, start: Node | list[Node], direction: Direction,
           depth: int | None = None, filters: Filters = Filters(),
           aliases: Aliases | None = None) -> list[Edge]:
    """All edges reachable from ``start`` (a canonical node, or a list of them) within ``depth`` hops.

    Cycles terminate: every node is expanded once, at its smallest hop count.

    >>> edges = expand(con, ("spark_catalog.db.report", "total"), "upstream", depth=10)  # doctest: +SKIP
    """
    aliases = aliases or Aliases(con)
    sql, params = _hop_sql(direction, filters)

    def fetch(nodes: list[Node]) -> list[tuple]:
        return _fetch(con, sql, params, nodes, aliases)
    frontier: list[Node] = sorted(set(start)) if isinstance(start, list) else [start]
    seen: set[Node] = set(frontier)
    found: list[Edge] = []
    hop = 0
    while frontier and (depth is None or hop < depth):
        hop += 1
        rows = fetch(frontier)
        edges = list(_edges(con, rows, frontier, direction, hop, aliases))
        edges += nested.fallback(frontier, edges, direction, lambda nodes, hop=hop: list(
            _edges(con, fetch(nodes), nodes, direction, hop, aliases)))
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
         captured_at, first_seen, count, eid) in rows:
        t_ds, s_ds = aliases.canonical(t_ds), aliases.canonical(s_ds)
        if t_col is not None:
            targets = [t_col]
        elif direction == "upstream":
            targets = by_dataset.get(t_ds, [])     # the frontier columns of that dataset
        else:
            targets = wide.get(t_ds, [])           # every known column of the target
        for column in targets:
            yield Edge((s_ds, s_col), (t_ds, column), hop, transform, kind, expression,
                       bool(masking), query_id, run_id, captured_at, t_col is None, first_seen, int(count), eid)


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
                """SELECT DISTINCT target_dataset, target_column FROM edges
                   WHERE target_dataset IN (SELECT unnest($n)) AND target_column IS NOT NULL""",
                {"n": missing}).fetchall():
            out.setdefault(names[name], set()).add(column)
    return {ds: sorted(cols) for ds, cols in out.items()}
