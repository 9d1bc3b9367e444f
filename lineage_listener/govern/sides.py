"""The two sides of a lineage diff: which edges a run, a time window, a whole store or a list of
edges holds, each as a query over the store (compared in DuckDB: :mod:`~lineage_listener.govern.diff`).

A side is a set of distinct edges (target and source column, transform, kind, expression,
masking), each with its last capture in the side. A run's edges are those of its captures
(``edge_captures`` -> ``edge_sets`` -> ``edges``); writes Spark rejected
(``queries.status = 'failed'``) are left out, as graph questions leave them out. The work
grows with the captures chosen and the edges of their sets, never with the whole history.

>>> Window.parse("2025-03-01..2025-03-07").until
datetime.datetime(2025, 3, 7, 23, 59, 59, 999999)
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import duckdb

from lineage_listener.query.expand import FAILED_WRITES
from lineage_listener.query.names import Aliases, closest
from lineage_listener.query.store import UnknownNameError
from lineage_listener.timewindow import parse_time, window_sql
from lineage_listener.store.edge_ids import EDGE_COLUMNS

#: What a side's query returns: an edge, and the capture it was (last) seen in.
SIDE_COLUMNS = (*EDGE_COLUMNS, "query_id", "run_id", "captured_at")


class DistinctEdge(NamedTuple):
    """One distinct edge, its :data:`EDGE_COLUMNS` (``target_column`` None: dataset level;
    ``target_dataset`` None: a driver read)."""

    target_dataset: str | None
    target_column: str | None
    source_dataset: str
    source_column: str
    transform: str
    kind: str
    expression: str | None
    masking: bool


@dataclass(frozen=True)
class Side:
    """One side of a diff: a label saying what was chosen, and the query that returns its edges
    (:data:`SIDE_COLUMNS`, dataset names as stored) with its parameters.

    ``db``: the schema the query reads, ``""`` for the store itself, ``"other."`` for a store
    attached under that name (its dataset aliases are read there too).
    """

    label: str
    sql: str
    params: dict[str, Any] = field(default_factory=dict)
    runs: tuple[str, ...] = ()
    started: datetime | None = None
    db: str = ""
    #: Which of the store's queries (``q``) are the side's writes: a condition and its parameters
    #: (their row counts are compared: :mod:`~lineage_listener.govern.volumes`); none by default.
    writes: tuple[str, dict[str, Any]] = ("false", {})

    def data(self, edges: int | None = None) -> dict[str, Any]:
        return {"label": self.label, "runs": list(self.runs), "edges": edges}


#: A side with no edges.
NOTHING_SQL = "SELECT " + ", ".join(f"NULL::{'BOOLEAN' if c == 'masking' else 'TIMESTAMP' if c == 'captured_at' else 'TEXT'}"
                                    f" AS {c}" for c in SIDE_COLUMNS) + " WHERE false"


@dataclass(frozen=True)
class Window:
    """A time window ``FROM..TO``; either end may be open.

    >>> Window.parse("..2025-03-07").since is None
    True
    """

    text: str
    since: datetime | None
    until: datetime | None

    @classmethod
    def parse(cls, text: str) -> "Window":
        start, sep, end = text.partition("..")
        if not sep:
            raise ValueError(f"bad window {text!r}: write it FROM..TO (2025-03-01..2025-03-07, 14d..7d, "
                             "2025-03-01T12:00.., ..7d)")
        try:
            since, until = parse_time(start.strip() or None), parse_time(end.strip() or None, end=True)
        except ValueError as exc:
            raise ValueError(f"bad window {text!r}: {exc}") from None
        if since is not None and until is not None and since > until:
            raise ValueError(f"bad window {text!r}: it starts after it ends")
        return cls(text, since, until)


def capture_where(db: str = "", runs: Sequence[str] | None = None, app: str | None = None,
                  window: Window | None = None, sets: Sequence[int] | None = None,
                  key: str = "") -> tuple[str, dict[str, Any]]:
    """Conditions on ``edge_captures c`` choosing captures (all but failed writes when nothing is
    given): of these runs, of application ``app``'s runs, within ``window``, of these edge
    ``sets``. ``key`` suffixes parameter names (several such conditions in one statement)."""
    failed = FAILED_WRITES.replace("FROM queries", f"FROM {db}queries")
    where, params = [f"(c.query_id IS NULL OR c.query_id NOT IN ({failed}))"], {}

    def bind(name: str, value: Any) -> str:
        params[name + key] = value
        return "$" + name + key
    if runs is not None:
        where.append(f"c.run_id IN (SELECT unnest({bind('runs', list(runs))}))")
    if app is not None:
        where.append(f"c.run_id IN (SELECT run_id FROM {db}runs WHERE app_name = {bind('app', app)})")
    if window is not None:
        within, bounds = window_sql("c.captured_at", window.since, window.until, key)
        where.append(within)
        params.update(bounds)
    if sets is not None:
        where.append(f"c.set_id IN (SELECT unnest({bind('sets', list(sets))}))")
    return " AND ".join(where), params


def captures_sql(db: str = "", runs: Sequence[str] | None = None, app: str | None = None,
                 window: Window | None = None, sets: Sequence[int] | None = None,
                 targets: Sequence[str] | None = None, key: str = "") -> tuple[str, dict[str, Any]]:
    """The query of a side made of the captures :func:`capture_where` chooses: each distinct edge
    with its last capture; only edges into ``targets`` (names as stored) when given."""
    where, params = capture_where(db, runs, app, window, sets, key)
    into = ""
    if targets is not None:
        params["targets" + key] = list(targets)
        into = f" WHERE e.target_dataset IN (SELECT unnest($targets{key}))"
    sql = f"""
        SELECT {", ".join(f"e.{c}" for c in EDGE_COLUMNS)}, m.query_id, m.run_id, m.captured_at
        FROM (SELECT s.edge_id, arg_max(c.query_id, c.captured_at) AS query_id,
                     arg_max(c.run_id, c.captured_at) AS run_id, max(c.captured_at) AS captured_at
              FROM (SELECT set_id, query_id, run_id, captured_at FROM {db}edge_captures c WHERE {where}) c
              JOIN {db}edge_sets s ON s.set_id = c.set_id GROUP BY s.edge_id) m
        JOIN {db}edges e ON e.edge_id = m.edge_id{into}"""
    return sql, params


def edges_side(label: str, edges: Iterable[DistinctEdge]) -> Side:
    """A side holding the given edges (a preview's: not captured, so no capture)."""
    edges = list(edges)
    columns = list(zip(*edges)) if edges else [()] * len(EDGE_COLUMNS)
    params = {f"e{i}": list(values) for i, values in enumerate(columns)}
    types = {"masking": "BOOLEAN"}
    sql = "SELECT " + ", ".join(f"CAST(unnest($e{i}) AS {types.get(c, 'TEXT')}) AS {c}" for i, c in enumerate(EDGE_COLUMNS)) \
        + ", NULL::TEXT AS query_id, NULL::TEXT AS run_id, NULL::TIMESTAMP AS captured_at"
    return Side(label, sql, params)


# -- choosing runs -------------------------------------------------------------------------

def app_runs(con: duckdb.DuckDBPyConnection, app: str, db: str = "") -> list[tuple[str, datetime | None]]:
    """Runs of application ``app`` that captured lineage, oldest first, with their start time;
    :class:`UnknownNameError` naming the closest applications when there is none."""
    rows = con.execute(
        f"""SELECT r.run_id, coalesce(r.started_at, min(c.captured_at)) AS t
            FROM {db}runs r JOIN {db}edge_captures c ON c.run_id = r.run_id
            WHERE r.app_name = $app GROUP BY r.run_id, r.started_at ORDER BY t, r.run_id""", {"app": app}).fetchall()
    if rows:
        return [(r[0], r[1]) for r in rows]
    apps = [r[0] for r in con.execute(f"SELECT DISTINCT app_name FROM {db}runs WHERE app_name IS NOT NULL").fetchall()]
    if app in apps:
        raise UnknownNameError(f"application {app!r} has no captured lineage in this store")
    raise UnknownNameError(f"unknown application {app!r}" + _hint(app, apps))


def run_info(con: duckdb.DuckDBPyConnection, run_id: str, app: str | None = None,
             db: str = "") -> tuple[str | None, datetime | None]:
    """``(app_name, started_at)`` of a run; :class:`UnknownNameError` when the store has no such
    run (or it is not a run of ``app``), naming the closest known run ids."""
    found = con.execute(f"""SELECT r.app_name, coalesce(r.started_at, (SELECT min(captured_at) FROM {db}edge_captures
                                                                      WHERE run_id = r.run_id))
                            FROM {db}runs r WHERE r.run_id = $r""", {"r": run_id}).fetchone()
    if found is None:
        scope = "WHERE app_name = $app" if app is not None else ""
        known = [r[0] for r in con.execute(f"SELECT run_id FROM {db}runs {scope} ORDER BY started_at DESC",
                                           {"app": app} if app is not None else {}).fetchall()]
        raise UnknownNameError(f"unknown run {run_id!r}" + _hint(run_id, known))
    if app is not None and found[0] != app:
        raise UnknownNameError(f"run {run_id!r} is a run of application {found[0]!r}, not of {app!r}")
    return found[0], found[1]


def _hint(name: str, known: list[str]) -> str:
    hint = closest(name, known) or sorted(known)[:5]
    return f"; closest known: {', '.join(hint)}" if hint else "; the store has none"


def when(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S") if t else "?"


def run_side(con: duckdb.DuckDBPyConnection, run_id: str, app: str | None = None, db: str = "") -> Side:
    """The edges run ``run_id`` captured."""
    app_name, started = run_info(con, run_id, app, db)
    sql, params = captures_sql(db, runs=[run_id])
    return Side(f"run {run_id}" + (f" of {app_name}" if app_name else "") + f" ({when(started)})", sql, params,
                (run_id,), started, db, ("q.run_id = $run", {"run": run_id}))


def window_side(con: duckdb.DuckDBPyConnection, window: Window, app: str | None = None) -> Side:
    """The edges captured within ``window`` (by ``app``'s runs only, when given)."""
    if app is not None:
        app_runs(con, app)  # an unknown application is an error, not an empty side
    sql, params = captures_sql(app=app, window=window)
    where, values = capture_where(app=app, window=window)
    runs = tuple(r[0] for r in con.execute(
        f"SELECT DISTINCT run_id FROM edge_captures c WHERE {where} AND run_id IS NOT NULL ORDER BY 1",
        values).fetchall())
    span = f"{when(window.since) if window.since else 'the start'} .. {when(window.until) if window.until else 'now'}"
    within, bounds = window_sql("q.captured_at", window.since, window.until)
    writes = (f"q.captured_at IS NOT NULL AND {within}"  # a write without a time is in no window, open or not
              " AND ($app IS NULL OR q.run_id IN (SELECT run_id FROM runs WHERE app_name = $app))",
              {**bounds, "app": app})
    return Side(f"captures {span}" + (f" of {app}" if app else ""), sql, params, runs, window.since, writes=writes)


def latest_side(con: duckdb.DuckDBPyConnection, app: str | None, where: str, db: str = "") -> Side:
    """``app``'s last run in a store, else everything the store holds."""
    if app is None:
        sql, params = captures_sql(db)
        return Side(f"all lineage of {where}", sql, params, db=db, writes=("true", {}))
    side = run_side(con, app_runs(con, app, db)[-1][0], app, db)
    return Side(f"{side.label} in {where}", side.sql, side.params, side.runs, side.started, db, side.writes)


def last_writes(con: duckdb.DuckDBPyConnection, datasets: Iterable[str], app: str | None = None) -> Side:
    """How each of ``datasets`` was last written: the edges into it of the last run (of ``app``,
    when given) whose captures wrote it. A dataset never written adds nothing."""
    aliases = Aliases(con)
    parts, params, runs = [], {}, []
    names = sorted(set(datasets))
    for i, dataset in enumerate(names):
        stored = sorted(aliases.names(aliases.canonical(dataset)))
        sets = [r[0] for r in con.execute("SELECT DISTINCT unnest(sets) FROM edges WHERE target_dataset IN "
                                          "(SELECT unnest($n))", {"n": stored}).fetchall()]
        if not sets:
            continue
        where, values = capture_where(app=app, sets=sets)
        last = con.execute(f"SELECT run_id FROM edge_captures c WHERE {where} ORDER BY captured_at DESC LIMIT 1",
                           values).fetchone()
        if last is None:
            continue
        sql, bound = captures_sql(runs=[last[0]], sets=sets, targets=stored, key=str(i))
        parts.append(sql)
        params.update(bound)
        runs.append(last[0])
    return Side(f"captured: the last write of {len(parts)} of {len(names)} datasets" + (f" by {app}" if app else ""),
                " UNION ALL ".join(parts) or NOTHING_SQL, params, tuple(dict.fromkeys(runs)))
