"""Multi-hop expansion of column lineage, run in DuckDB one hop at a time.

Each hop is one query: the frontier's dataset names go in as a list, DuckDB
semi-joins the distinct ``edges`` on the dataset and keeps the edges of the
frontier's columns plus the dataset-level indirect edges (null
``target_column``); each edge lists the sets of edges holding it, and the
capture rows of those sets (``edge_captures``) not of a failed write give it,
in the time window, its first and last capture, count and last query and run;
its first and last capture not after the window's end (``earliest``,
``latest``: a path may use data written before the window); and how many
captures lie outside the window. An edge with no capture at all is not in the
answer. The work grows with the distinct edges near the frontier and their
captures, not with the per-edge rows a year of daily runs would have stored.

Which of these steps a window keeps is decided by
:func:`~lineage_listener.query.kept.keep`; where an edge's bounds cannot decide
it, :func:`nearest_captures` answers exactly.

Edges are returned in data-flow direction (source -> target) for both
directions of travel.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from lineage_listener.query import nested
from lineage_listener.query.lookups import indexed
from lineage_listener.query.names import Aliases
from lineage_listener.query.types import Direction, LineageStep, Node
from lineage_listener.timewindow import window_sql

log = logging.getLogger(__name__)


_COLUMNS = ("e.target_dataset, e.target_column, e.source_dataset, e.source_column, e.transform, e.kind, "
            "e.expression, e.masking, e.edge_id, coalesce(e.guess, false) AS guess, h.*")


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
        if self.windowed:
            within, params = self.window_sql()
            on_capture.append(within)
        if self.direct_only:
            on_edge.append("e.kind = 'direct'")
        on_capture.append(self.live())
        return "".join(f" AND {p}" for p in on_edge), "".join(f" AND {p}" for p in on_capture), params

    def live(self) -> str:
        """The condition on ``edge_captures c`` leaving out failed writes (unless ``include_failed``)."""
        if self.include_failed:
            return "true"
        return f"(c.query_id IS NULL OR c.query_id NOT IN ({FAILED_WRITES}))"  # a summary row left by prune: not failed

    @property
    def windowed(self) -> bool:
        return self.since is not None or self.until is not None

    def window_sql(self, until_only: bool = False) -> tuple[str, dict[str, datetime]]:
        """The condition keeping captures ``c`` in the window (not after its end only, with
        ``until_only``: those a path may use), and its parameters."""
        return window_sql("c.captured_at", None if until_only else self.since, self.until)


#: How many of an edge's first and last capture times a walk fetches with it: a path's time that
#: falls among them is known exactly without asking the store again (daily jobs: the last days).
KNOWN_CAPTURES = 12


def _when(cond: str) -> str:
    return f" FILTER (WHERE {cond})" if cond else ""


def _usable(filters: Filters) -> str:
    """The aggregate filter keeping captures ``c`` not after the window's end (those a path may use)."""
    return _when(filters.window_sql(until_only=True)[0] if filters.until is not None else "")


def _stats_sql(filters: Filters, known: int | None = KNOWN_CAPTURES) -> str:
    """Per edge (``x.edge_id``) aggregates of its captures ``c`` not after the window's end (the
    bounds of a path's times, with the first and last ``known`` times unless None, and the last
    one's query and run: in the window when any is), how many of them lie in the window and the
    first of those, and how many captures lie outside it."""
    when, usable = _when, _usable(filters)
    out = (f"min(c.captured_at){usable} AS ok_first, max(c.captured_at){usable} AS ok_last, "
           f"sum(c.captures){usable} AS ok_n, arg_max(c.query_id, c.captured_at){usable} AS ok_query, "
           f"arg_max(c.run_id, c.captured_at){usable} AS ok_run")
    if known is not None:
        out += (f", min(c.captured_at, {known}){usable} AS ok_lows, "
                f"max(c.captured_at, {known}){usable} AS ok_highs, {known} AS ok_known")
    if not filters.windowed:
        return out
    window = filters.window_sql()[0]
    outside = when(f"NOT ({window})")
    return (f"{out}, min(c.captured_at){when(window)} AS in_first, sum(c.captures){when(window)} AS in_n, "
            f"sum(c.captures){outside} AS out_n, min(c.captured_at){outside} AS out_first, "
            f"max(c.captured_at){outside} AS out_last")


def _hop_sql(direction: Direction, filters: Filters) -> tuple[str, dict]:
    on_edge, _, params = filters.sql()
    if direction == "upstream":
        near, near_col, far, far_col = "target_dataset", "target_column", "source_dataset", "source_column"
        match_col = f"(e.{near_col} IS NULL OR (e.{near}, e.{near_col}) IN (SELECT d, c FROM f))"
    else:
        near, near_col, far, far_col = "source_dataset", "source_column", "target_dataset", "target_column"
        match_col = f"(e.{near}, e.{near_col}) IN (SELECT d, c FROM f)"
    found = f"""
        SELECT * FROM {indexed("edges", near, "SELECT d FROM f")} e
        WHERE {match_col}
          AND e.{far} IS NOT NULL {"AND e." + far_col + " IS NOT NULL" if direction == "upstream" else ""}
          {on_edge}"""
    return _with_stats("WITH f AS (SELECT unnest($d) AS d, unnest($c) AS c)", found, filters), params


def _with_stats(head: str, found: str, filters: Filters, known: int | None = KNOWN_CAPTURES,
                columns: str = _COLUMNS) -> str:
    """The query of the edges ``found`` selects (``head``: the ``WITH`` it reads), each with the
    aggregates of its captures (:func:`_stats_sql`); an edge without a usable capture is left out."""
    return f"""
        {head},
        e AS MATERIALIZED ({found}),
        h AS (
            SELECT x.edge_id AS hid, {_stats_sql(filters, known)}
            FROM (SELECT edge_id, unnest(sets) AS set_id FROM e) x
            JOIN edge_captures c ON c.set_id = x.set_id
            WHERE {filters.live()}
            GROUP BY x.edge_id)
        SELECT {columns} FROM e JOIN h ON h.hid = e.edge_id"""


def column_key(column: str) -> str:
    """A stored column name up to its first dot, without backticks: one key for a struct column and
    its fields (and possibly for other top-level columns: a coarse key, for supersets). The SQL of
    the same: :data:`COLUMN_KEY_SQL`.

    >>> column_key("s.a.b"), column_key("`s.x`.y"), column_key("amount")
    ('s', 's', 'amount')
    """
    return column.split(".", 1)[0].replace("`", "")


#: :func:`column_key` of a SQL expression.
COLUMN_KEY_SQL = "replace(split_part({}, '.', 1), '`', '')"


class Among:
    """The downstream hops among some columns (by :func:`column_key`), with their captures' aggregates
    and every capture time a path may use, read in two queries: the rows :func:`expand` fetches hop by
    hop, served from memory, each with all its times known (a walk over them asks the store nothing
    more). ``keys``: per dataset name (every name of it, aliases included), the keys of its columns;
    an edge is read when both ends are among them (or, stored with a null target column, its target
    dataset is). The times are read per set of edges (``edge_captures`` rows are per set: one job's
    edges share them), not per edge.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, keys: dict[str, set[str]], aliases: Aliases,
                 filters: Filters = Filters()) -> None:
        on_edge, _, params = filters.sql()
        pairs = sorted((d, k) for d, ks in keys.items() for k in ks)
        key = COLUMN_KEY_SQL.format
        found = f"""
            SELECT * FROM {indexed("edges", "source_dataset", "SELECT DISTINCT d FROM f")} e
            WHERE (e.source_dataset, {key("e.source_column")}) IN (SELECT d, k FROM f)
              AND ((e.target_dataset, {key("e.target_column")}) IN (SELECT d, k FROM f)
                   OR (e.target_column IS NULL AND e.target_dataset IN (SELECT d FROM f)))
              {on_edge}"""
        sql = _with_stats("WITH f AS (SELECT unnest($d) AS d, unnest($k) AS k)", found, filters, None,
                          _COLUMNS + ", e.sets")
        cur = con.execute(sql, {**params, "d": [d for d, _ in pairs], "k": [k for _, k in pairs]})
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        times = set_times(con, {s for r in rows for s in r["sets"]}, filters)
        merged: dict[tuple[int, ...], tuple[datetime, ...]] = {}   # the edges of one job share their sets
        self.rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in rows:
            sets = tuple(row["sets"])
            if sets not in merged:
                merged[sets] = _union([times.get(s, ()) for s in sets])
            row["all_times"] = merged[sets]
            self.rows.setdefault((row["source_dataset"], row["source_column"]), []).append(row)
        aliases.resolve(name for (name, _), found in self.rows.items() for r in found
                        for name in (name, r["target_dataset"]))

    def __call__(self, frontier: list[Node], aliases: Aliases) -> list[dict[str, Any]]:
        """The rows of the edges out of ``frontier`` (canonical names)."""
        return [r for dataset, column in frontier for name in sorted(aliases.names(dataset))
                for r in self.rows.get((name, column), ())]


class Remembered:
    """The rows :func:`expand` fetches hop by hop downstream within ``filters``, read for the columns
    not asked before (one query a hop, as :func:`expand` sends) and kept per column name: a column
    an earlier walk went through, over the same unchanged store, costs no query. :meth:`over` gives
    the ``among`` of one question's walk."""

    def __init__(self, filters: Filters = Filters()) -> None:
        self._sql, self._params = _hop_sql("downstream", filters)
        self._rows: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def over(self, con: duckdb.DuckDBPyConnection) -> Fetch:
        """The rows out of a frontier (canonical names), what is not kept read over ``con``."""
        def fetch(frontier: list[Node], aliases: Aliases) -> list[dict[str, Any]]:
            aliases.resolve(d for d, _ in frontier)
            keys = sorted({(name, column) for dataset, column in frontier for name in aliases.names(dataset)})
            todo = [k for k in keys if k not in self._rows]
            if todo:
                cur = con.execute(self._sql, {**self._params, "d": [d for d, _ in todo], "c": [c for _, c in todo]})
                names = [d[0] for d in cur.description]
                found: dict[tuple[str, str], list[dict[str, Any]]] = {k: [] for k in todo}
                for r in cur.fetchall():
                    row = dict(zip(names, r))
                    found[(row["source_dataset"], row["source_column"])].append(row)
                self._rows.update(found)
            return [r for k in keys for r in self._rows[k]]
        return fetch


#: One hop's rows out of a frontier of columns (canonical names): :class:`Among`, :meth:`Remembered.over`.
Fetch = Callable[[list[Node], Aliases], list[dict[str, Any]]]


def set_times(con: duckdb.DuckDBPyConnection, set_ids: Iterable[int], filters: Filters = Filters()
              ) -> dict[int, tuple[datetime, ...]]:
    """Per set of edges, the distinct times of its captures a path may use (not after the window's
    end, failed writes left out unless ``filters`` include them), oldest first, in one query: the
    times :func:`nearest_captures` would search, read once."""
    ids = sorted(set(set_ids))
    if not ids:
        return {}
    params = {"s": ids, **filters.window_sql(until_only=True)[1]}
    rows = con.execute(f"""
        SELECT c.set_id, list(DISTINCT c.captured_at ORDER BY c.captured_at){_usable(filters)}
        FROM {indexed("edge_captures", "set_id", "SELECT unnest($s)")} c
        WHERE {filters.live()}
        GROUP BY c.set_id""", params).fetchall()
    return {set_id: tuple(found) for set_id, found in rows}


def _union(times: list[tuple[datetime, ...]]) -> tuple[datetime, ...]:
    """Sorted distinct times of several sorted distinct tuples (the one tuple itself when alone).

    >>> _union([(1, 3), (2, 3)]), _union([(1, 3)])
    ((1, 2, 3), (1, 3))
    """
    if len(times) == 1:
        return times[0]
    return tuple(sorted(set().union(*times)))


def captures(con: duckdb.DuckDBPyConnection, edge_ids: list[int], filters: Filters = Filters()
             ) -> dict[int, list[tuple[str | None, str | None, datetime]]]:
    """Every capture of each edge, (query_id, run_id, captured_at) oldest first, within ``filters``:
    what a question about runs asks (who wrote this, in which runs), not what a walk needs."""
    if not edge_ids:
        return {}
    _, on_capture, params = filters.sql()
    out: dict[int, list[tuple]] = {}
    for eid, query_id, run_id, captured_at in con.execute(
            f"""WITH s AS (SELECT edge_id, unnest(sets) AS set_id FROM edges WHERE edge_id IN (SELECT unnest($ids)))
                SELECT s.edge_id, c.query_id, c.run_id, c.captured_at
                FROM s JOIN {indexed("edge_captures", "set_id", "SELECT set_id FROM s")} c ON c.set_id = s.set_id
                WHERE true {on_capture}
                ORDER BY c.captured_at, c.query_id""", {**params, "ids": sorted(set(edge_ids))}).fetchall():
        out.setdefault(eid, []).append((query_id, run_id, captured_at))
    return out


def captures_at(con: duckdb.DuckDBPyConnection, asked: Iterable[tuple[int, datetime]], filters: Filters = Filters()
                ) -> dict[tuple[int, datetime], tuple[str, str | None]]:
    """The query and run of the capture of each ``(edge_id, time)`` asked, within ``filters``, in one
    query: the capture a path uses (the first by query id when several share the time; captures
    without a query, summaries left by prune, do not answer)."""
    asked = sorted(set(asked))
    if not asked:
        return {}
    _, on_capture, params = filters.sql()
    rows = con.execute(f"""
        WITH q AS (SELECT unnest($e) AS edge_id, unnest($t) AS t),
        x AS (SELECT q.edge_id, q.t, unnest(e.sets) AS set_id FROM q JOIN edges e ON e.edge_id = q.edge_id)
        SELECT x.edge_id, x.t, min(c.query_id), arg_min(c.run_id, c.query_id)
        FROM x JOIN {indexed("edge_captures", "set_id", "SELECT set_id FROM x")} c
             ON c.set_id = x.set_id AND c.captured_at = x.t
        WHERE c.query_id IS NOT NULL {on_capture}
        GROUP BY x.edge_id, x.t""", {**params, "e": [e for e, _ in asked], "t": [t for _, t in asked]}).fetchall()
    return {(eid, t): (query_id, run_id) for eid, t, query_id, run_id in rows}


def nearest_captures(con: duckdb.DuckDBPyConnection, asked: list[tuple[tuple[int, ...], datetime, str]],
                     filters: Filters = Filters()) -> list[datetime | None]:
    """Exact capture times for a batch of questions, one query: ``(edge_ids, t, "next")`` the first
    capture of those edges at or after ``t``, ``(edge_ids, t, "prev")`` the last at or before ``t``
    (not after the window's end, failed writes left out unless ``filters`` include them).
    A summary row left by prune counts as captures at its first and last time."""
    if not asked:
        return []
    idx, ids, ts, ops = [], [], [], []
    for i, (edge_ids, t, op) in enumerate(asked):
        for eid in edge_ids:
            idx.append(i)
            ids.append(eid)
            ts.append(t)
            ops.append(op)
    usable, bounds = filters.window_sql(until_only=True)
    params = {"i": idx, "e": ids, "t": ts, "o": ops, **bounds}
    rows = con.execute(f"""
        WITH q AS (SELECT unnest($i) AS i, unnest($e) AS edge_id, unnest($t) AS t, unnest($o) AS op),
        x AS (SELECT q.i, q.t, q.op, unnest(e.sets) AS set_id FROM q JOIN edges e ON e.edge_id = q.edge_id)
        SELECT x.i, CASE WHEN x.op = 'next' THEN min(c.captured_at) FILTER (WHERE c.captured_at >= x.t)
                         ELSE max(c.captured_at) FILTER (WHERE c.captured_at <= x.t) END
        FROM x JOIN {indexed("edge_captures", "set_id", "SELECT set_id FROM x")} c ON c.set_id = x.set_id
        WHERE {filters.live()} AND {usable}
        GROUP BY x.i, x.t, x.op""", params).fetchall()
    found = dict(rows)
    return [found.get(i) for i in range(len(asked))]


def expand(con: duckdb.DuckDBPyConnection, start: Node | list[Node], direction: Direction,
           depth: int | None = None, filters: Filters = Filters(),
           aliases: Aliases | None = None, among: Fetch | None = None,
           columns: dict[str, list[str]] | None = None) -> list[LineageStep]:
    """All edges reachable from ``start`` (a canonical node, or a list of them) within ``depth`` hops.

    Cycles terminate: every node is expanded once, at its smallest hop count. A walk goes on
    through edges captured not after the window's end; upstream, the start's own writes must
    lie in the window (the hops before them may be older: see :mod:`lineage_listener.query.kept`).

    ``among``: the hops read beforehand (downstream, within ``filters``: :class:`Among`), or kept
    from earlier walks (:class:`Remembered`), instead of a query a hop; ``columns``: the known
    columns of datasets read before (:func:`columns_of`), added to.

    >>> edges = expand(con, ("spark_catalog.db.report", "total"), "upstream", depth=10)  # doctest: +SKIP
    """
    aliases = aliases or Aliases(con)
    sql, params = _hop_sql(direction, filters)

    def fetch(nodes: list[Node]) -> list[dict[str, Any]]:
        return among(nodes, aliases) if among is not None else _fetch(con, sql, params, nodes, aliases)
    frontier: list[Node] = sorted(set(start)) if isinstance(start, list) else [start]
    seen: set[Node] = set(frontier)
    found: list[LineageStep] = []
    hop = 0
    while frontier and (depth is None or hop < depth):
        hop += 1
        rows = fetch(frontier)
        edges = list(_edges(con, rows, frontier, direction, hop, aliases, columns))
        edges += nested.fallback(frontier, edges, direction, lambda nodes, hop=hop: list(
            _edges(con, fetch(nodes), nodes, direction, hop, aliases, columns)))
        found.extend(edges)
        far = [e.source if direction == "upstream" else e.target for e in edges
               if e.latest is not None and not (hop == 1 and direction == "upstream" and e.before_window)]
        frontier = sorted({n for n in far if n not in seen})
        seen.update(frontier)
        log.debug("%s hop %d: %d rows, %d new columns", direction, hop, len(rows), len(frontier))
    return found


def _fetch(con, sql: str, params: dict, frontier: list[Node], aliases: Aliases) -> list[dict[str, Any]]:
    aliases.resolve(d for d, _ in frontier)
    ds, cs = [], []
    for dataset, column in frontier:
        for name in aliases.names(dataset):
            ds.append(name)
            cs.append(column)
    cur = con.execute(sql, {**params, "d": ds, "c": cs})
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _times(r: dict[str, Any]) -> dict[str, Any]:
    """An edge's capture fields from its aggregates: in the window, else before it (``before_window``).

    The last capture not after the window's end is the window's last one when the window has any."""
    known = ((r["all_times"],) if r["all_times"] else ()) if "all_times" in r else \
        _known(r["ok_lows"], r["ok_highs"], r["ok_known"])
    last = {"earliest": r["ok_first"], "latest": r["ok_last"], "known": known, "query_id": r["ok_query"],
            "run_id": r["ok_run"], "captured_at": r["ok_last"]}
    if "in_n" not in r:   # no window: every capture is in it
        return {**last, "first_seen": r["ok_first"], "captures": int(r["ok_n"])}
    outside = {"outside": int(r["out_n"] or 0), "outside_first": r["out_first"], "outside_last": r["out_last"]}
    if r["in_n"]:
        return {**last, **outside, "first_seen": r["in_first"], "captures": int(r["in_n"])}
    if r["ok_n"]:
        return {**last, **outside, "first_seen": r["ok_first"], "captures": int(r["ok_n"]), "before_window": True}
    return {**outside, "earliest": None, "latest": None, "known": (), "query_id": None, "run_id": None,
            "captured_at": r["out_last"], "first_seen": r["out_first"],
            "captures": 0}  # captured after the window only: no path can use it


def _known(lows: list[datetime] | None, highs: list[datetime] | None, limit: int = KNOWN_CAPTURES
           ) -> tuple[tuple[datetime, ...], ...]:
    """``(lows, highs)``: an edge's first and last capture times, distinct, oldest first; one tuple of
    them all when it has fewer than ``limit`` (the most read of each).

    >>> _known([3, 1, 1], [3, 1, 1])
    ((1, 3),)
    """
    if not lows:
        return ()
    if len(lows) < limit:
        return (tuple(sorted(set(lows))),)
    return tuple(sorted(set(lows))), tuple(sorted(set(highs)))


def _edges(con, rows: list[dict[str, Any]], frontier: list[Node], direction: Direction, hop: int,
           aliases: Aliases, columns: dict[str, list[str]] | None = None) -> Iterator[LineageStep]:
    aliases.resolve(name for r in rows for name in (r["target_dataset"], r["source_dataset"]))
    by_dataset: dict[str, list[str]] = {}
    for dataset, column in frontier:
        by_dataset.setdefault(dataset, []).append(column)
    wide: dict[str, list[str]] = {}
    if direction == "downstream":
        targets = {aliases.canonical(r["target_dataset"]) for r in rows if r["target_column"] is None}
        wide = columns_of(con, targets, aliases, columns)
    for r in rows:
        t_ds, s_ds, t_col = aliases.canonical(r["target_dataset"]), aliases.canonical(r["source_dataset"]), \
            r["target_column"]
        if t_col is not None:
            targets = [t_col]
        elif direction == "upstream":
            targets = by_dataset.get(t_ds, [])     # the frontier columns of that dataset
        else:
            targets = wide.get(t_ds, [])           # every known column of the target
        times = _times(r)
        for column in targets:
            yield LineageStep((s_ds, r["source_column"]), (t_ds, column), hop, r["transform"], r["kind"],
                       r["expression"], bool(r["masking"]), dataset_level=t_col is None, edge_id=r["edge_id"],
                       guess=bool(r["guess"]), **times)


def columns_of(con: duckdb.DuckDBPyConnection, datasets: set[str], aliases: Aliases,
               known: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Every known column of each canonical dataset: ``dataset_columns``, else direct edge targets.
    ``known``: what earlier calls read (over the same unchanged store), used and added to."""
    if known is not None:
        todo = {ds for ds in datasets if ds not in known}
        if todo:
            found = columns_of(con, todo, aliases)
            known.update((ds, found.get(ds, [])) for ds in todo)
        return {ds: known[ds] for ds in datasets if known[ds]}
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
