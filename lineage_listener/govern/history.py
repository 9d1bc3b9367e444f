"""What changed over time: an application's runs, or the writes into a dataset, each compared with
the one before; only the points where the lineage changed are returned, newest first.

A run's lineage is known by the edge sets its captures wrote (``edge_captures.set_id``): two
runs with the same sets have the same edges, so a year of daily runs with unchanged lineage
costs one list comparison a day, and only the runs whose sets differ have their edges
compared (:func:`~lineage_listener.govern.diff.compare`). For a dataset, the runs are
those that wrote it, each compared with the previous run of the same application (two jobs
writing one table each keep their own history).

>>> h = app_history(open_store("lineage.duckdb"), "daily_orders", limit=5)    # doctest: +SKIP
>>> [(c["run_id"], c["previous_run_id"], c["counts"]) for c in h["changes"]]  # doctest: +SKIP
[('app-3', 'app-2', {'added': 3, 'removed': 2, 'changed': 1, 'labels': 0})]
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from lineage_listener.govern import sides
from lineage_listener.govern.diff import compare
from lineage_listener.govern.sides import Side
from lineage_listener.query.names import Aliases, closest
from lineage_listener.query.store import LineageStore, UnknownNameError
from lineage_listener.query.within import runs_sql


@dataclass(frozen=True)
class RunPoint:
    """One run in a history: its id, application, when it started, and the edge sets it wrote."""

    run_id: str
    app_name: str | None
    started: datetime | None
    sets: tuple[int, ...]


def _signatures(con: duckdb.DuckDBPyConnection, runs: Sequence[str] | None = None,
                sets: Sequence[int] | None = None) -> list[RunPoint]:
    """The chosen runs (or the runs that wrote one of ``sets``), oldest first."""
    where, params = sides.capture_where(runs=runs, sets=sets)
    rows = con.execute(f"""
        SELECT c.run_id, r.app_name, coalesce(r.started_at, min(c.captured_at)) AS t,
               list(DISTINCT c.set_id ORDER BY c.set_id)
        FROM edge_captures c LEFT JOIN runs r ON r.run_id = c.run_id
        WHERE {where} GROUP BY c.run_id, r.app_name, r.started_at ORDER BY t, c.run_id""", params).fetchall()
    return [RunPoint(r[0], r[1], r[2], tuple(r[3])) for r in rows]


def _changes(con: duckdb.DuckDBPyConnection, sequences: list[list[RunPoint]], limit: int,
             sets: Sequence[int] | None = None, targets: Sequence[str] | None = None
             ) -> tuple[list[dict[str, Any]], bool]:
    """The change points of each sequence of runs, newest first, at most ``limit`` of them; and
    whether more may exist. ``sets``/``targets``: only the edges of those sets into those datasets."""
    candidates = sorted(((seq, i) for seq in sequences for i in range(1, len(seq))
                         if seq[i].sets != seq[i - 1].sets),
                        key=lambda c: (c[0][c[1]].started or datetime.min, c[0][c[1]].run_id), reverse=True)
    found: list[dict[str, Any]] = []
    next_change: dict[int, int] = {id(seq): len(seq) for seq in sequences}  # where the lineage changed next
    for n, (seq, i) in enumerate(candidates, 1):
        cur, prev = seq[i], seq[i - 1]
        d = compare(con, _side(prev, sets, targets), _side(cur, sets, targets))
        if d.empty:  # other sets, the same edges (e.g. the queries of a run split another way)
            continue
        found.append({"run_id": cur.run_id, "app_name": cur.app_name, "started_at": cur.started,
                      "previous_run_id": prev.run_id, "previous_started_at": prev.started,
                      "runs_kept": next_change[id(seq)] - i, "counts": d.counts(), **d.data()})
        next_change[id(seq)] = i
        if len(found) >= limit:
            return found, n < len(candidates)
    return found, False


def _side(point: RunPoint, sets: Sequence[int] | None, targets: Sequence[str] | None) -> Side:
    sql, params = sides.captures_sql(runs=[point.run_id], sets=sets, targets=targets)
    return Side(f"run {point.run_id} ({sides.when(point.started)})", sql, params, (point.run_id,), point.started)


def _point(p: RunPoint | None) -> dict[str, Any] | None:
    return {"run_id": p.run_id, "app_name": p.app_name, "started_at": p.started} if p else None


def app_history(store: LineageStore, app: str, limit: int = 20) -> dict[str, Any]:
    """``app``'s runs where its lineage changed, each against the run before, newest first.

    ``runs``: how many runs captured lineage; ``first``/``last``: the first and last of them;
    each change carries the diff (``added``, ``removed``, ``changed``, ``labels``, ``counts``)
    and ``runs_kept``: how many runs, from this one on, kept its lineage.
    """
    if limit < 1:
        raise ValueError("limit must be >= 1")
    with store.connect() as con:
        known = sides.app_runs(con, app)
        seq = _signatures(con, runs=[r for r, _ in known])
        changes, more = _changes(con, [seq], limit)
    return {"app": app, "runs": len(seq), "first": _point(seq[0] if seq else None),
            "last": _point(seq[-1] if seq else None), "changes": changes, "more": more}


def dataset_history(store: LineageStore, dataset: str, limit: int = 20) -> dict[str, Any]:
    """The runs that wrote ``dataset`` where how it is written changed, each against the previous
    run of the same application, newest first (see :func:`app_history` for the items)."""
    if limit < 1:
        raise ValueError("limit must be >= 1")
    with store.connect() as con:
        aliases = Aliases(con)
        canonical = aliases.canonical(dataset)
        names = sorted(aliases.names(canonical))
        sets = [r[0] for r in con.execute("SELECT DISTINCT unnest(sets) FROM edges WHERE target_dataset IN "
                                          "(SELECT unnest($n))", {"n": names}).fetchall()]
        if not sets:
            _known_dataset(con, dataset, names)
            return {"dataset": canonical, "runs": 0, "writers": [], "changes": [], "more": False}
        points = _signatures(con, sets=sets)
        by_app: dict[str | None, list[RunPoint]] = {}
        for p in points:
            by_app.setdefault(p.app_name, []).append(p)
        changes, more = _changes(con, list(by_app.values()), limit, sets, names)
    writers = [{"app_name": app, "runs": len(seq), "first": _point(seq[0]), "last": _point(seq[-1])}
               for app, seq in sorted(by_app.items(), key=lambda a: (a[0] is None, a[0] or ""))]
    return {"dataset": canonical, "runs": len(points), "writers": writers, "changes": changes, "more": more}


def _known_dataset(con: duckdb.DuckDBPyConnection, dataset: str, names: list[str]) -> None:
    """Nothing, when the store knows the dataset (read only, never written); else UnknownNameError."""
    if con.execute("""SELECT 1 FROM datasets WHERE dataset IN (SELECT unnest($n))
                      UNION ALL SELECT 1 FROM edges WHERE source_dataset IN (SELECT unnest($n)) LIMIT 1""",
                   {"n": names}).fetchone():
        return
    known = [r[0] for r in con.execute("SELECT dataset FROM datasets").fetchall()]
    hint = closest(dataset, known)
    raise UnknownNameError(f"unknown dataset {dataset!r}"
                           + (f"; closest known: {', '.join(hint)}" if hint else "; the store has none like it"))


def applications(store: LineageStore, within: str | None = None) -> list[dict[str, Any]]:
    """Every application that captured lineage: ``app_name``, ``runs``, ``first_run_at``, ``last_run_at``;
    ``within``: of the runs that wrote or read a dataset a reader may read (:mod:`lineage_listener.query.within`)."""
    readable = f"r.run_id IN ({runs_sql()})" if within is not None else "TRUE"
    with store.connect() as con:
        rows = con.execute(f"""
            SELECT r.app_name, count(*) AS runs, min(coalesce(r.started_at, c.t)) AS first_run_at,
                   max(coalesce(r.started_at, c.t)) AS last_run_at
            FROM runs r JOIN (SELECT run_id, min(captured_at) AS t FROM edge_captures GROUP BY run_id) c
                 ON c.run_id = r.run_id
            WHERE r.app_name IS NOT NULL AND {readable} GROUP BY r.app_name ORDER BY last_run_at DESC, r.app_name""",
                           {"within": within} if within is not None else {}).fetchall()
    return [{"app_name": r[0], "runs": r[1], "first_run_at": r[2], "last_run_at": r[3]} for r in rows]
