"""Retention: drop per-run records older than a cut-off; every edge keeps its first and last time.

What goes: ``queries`` rows captured before the cut-off (with their ``query_starts``,
``openlineage_sent``, ``write_statistics`` and ``read_statistics`` rows), their ``edge_captures``
rows, ``runs`` left with no query, and old ``capture_errors``. A stream whose last batch is after the cut-off keeps its query.

What stays: ``edges`` and ``edge_sets``, ``datasets`` and ``dataset_columns`` (with their
first/last seen), and, for each set of edges, at most two summary ``edge_captures`` rows
(no query; the first and the last pruned capture time, ``captures`` the number of rows
they stand for). So ``lineage_edge_history`` still says when each edge was first and
last seen and how often, and a walk without a window still finds it; a question about
runs before the cut-off has no answer any more.

The audit of a lineage server (``audit_log``) has a cut-off of its own (``--keep-audit``, default
:data:`KEEP_AUDIT`); ``keep`` None prunes the audit only.

>>> import duckdb; from lineage_listener.store.schema import ensure_schema
>>> con = duckdb.connect(); _ = ensure_schema(con)
>>> prune(con, datetime(2025, 1, 1))
Pruned(queries=0, captures=0, runs=0, capture_errors=0, orphan_sets=0, orphan_edges=0, audit=0)
>>> _ = con.execute("INSERT INTO audit_log (requested_at, identity) VALUES ('2024-01-01', 'ann'), ('2025-06-01', 'ann')")
>>> prune(con, None, audit_cutoff=datetime(2025, 1, 1)).audit, con.execute("SELECT count(*) FROM audit_log").fetchone()
(1, (1,))
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import duckdb

from lineage_listener.timewindow import parse_time, utcnow
from lineage_listener.store.connection import ATTACH_SAFE, StoreError, connect_writable, release

_AGE = re.compile(r"^\s*\d+(\.\d+)?\s*[smhdw]\s*$", re.IGNORECASE)
#: How long the audit is kept unless said otherwise (``--keep-audit``).
KEEP_AUDIT = timedelta(days=400)


@dataclass(frozen=True)
class Pruned:
    """Rows removed per table (``captures``: per-run capture rows, before summary rows were added)."""

    queries: int
    captures: int
    runs: int
    capture_errors: int
    orphan_sets: int
    orphan_edges: int
    audit: int = 0


_OLD_QUERIES = """
    SELECT q.query_id FROM queries q
    WHERE q.captured_at < $cutoff
      AND NOT EXISTS (SELECT 1 FROM streams s WHERE s.query_id = q.query_id AND s.last_batch_at >= $cutoff)"""


def prune(con: duckdb.DuckDBPyConnection, cutoff: datetime | None, dry_run: bool = False,
          audit_cutoff: datetime | None = None) -> Pruned:
    """Drop what is older than ``cutoff`` (naive UTC; None: no lineage record) and audit rows older than
    ``audit_cutoff`` (None: none) in one transaction; what was (or would be) removed."""
    con.execute("BEGIN TRANSACTION")
    try:
        audit = 0
        if audit_cutoff is not None:
            audit = con.execute("SELECT count(*) FROM audit_log WHERE requested_at < $c",
                                {"c": audit_cutoff}).fetchone()[0]
            if audit and not dry_run:
                con.execute("DELETE FROM audit_log WHERE requested_at < $c", {"c": audit_cutoff})
        if cutoff is None:
            con.execute("ROLLBACK" if dry_run else "COMMIT")
            return Pruned(0, 0, 0, 0, 0, 0, audit)
        con.execute(f"CREATE OR REPLACE TEMP TABLE _old_queries AS {_OLD_QUERIES}", {"cutoff": cutoff})
        # Capture rows of old queries, and summary rows already before the cut-off, become summaries.
        con.execute("""CREATE OR REPLACE TEMP TABLE _old_captures AS
            SELECT rowid AS r, set_id, captured_at, captures, query_id FROM edge_captures
            WHERE query_id IN (SELECT query_id FROM _old_queries)
               OR (query_id IS NULL AND captured_at < $cutoff)""", {"cutoff": cutoff})
        counts = {
            "queries": _count(con, "_old_queries"),
            "captures": con.execute("SELECT count(*) FROM _old_captures WHERE query_id IS NOT NULL").fetchone()[0],
            "runs": con.execute(
                """SELECT count(*) FROM runs r WHERE coalesce(r.ended_at, r.started_at) < $cutoff
                   AND NOT EXISTS (SELECT 1 FROM queries q WHERE q.run_id = r.run_id
                                   AND q.query_id NOT IN (SELECT query_id FROM _old_queries))""",
                {"cutoff": cutoff}).fetchone()[0],
            "capture_errors": con.execute("SELECT count(*) FROM capture_errors WHERE captured_at < $cutoff",
                                          {"cutoff": cutoff}).fetchone()[0],
        }
        if not dry_run:
            _summarise(con)
            con.execute("DELETE FROM edge_captures WHERE rowid IN (SELECT r FROM _old_captures)")
            for table in ("query_starts", "openlineage_sent", "write_statistics", "read_statistics", "queries"):
                con.execute(f"DELETE FROM {table} WHERE query_id IN (SELECT query_id FROM _old_queries)")
            con.execute("""DELETE FROM runs WHERE coalesce(ended_at, started_at) < $cutoff
                           AND run_id NOT IN (SELECT run_id FROM queries WHERE run_id IS NOT NULL)""",
                        {"cutoff": cutoff})
            con.execute("DELETE FROM capture_errors WHERE captured_at < $cutoff", {"cutoff": cutoff})
        counts.update(_orphans(con, dry_run))
        con.execute("DROP TABLE _old_queries; DROP TABLE _old_captures")
        con.execute("ROLLBACK" if dry_run else "COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return Pruned(**counts, audit=audit)


def _summarise(con: duckdb.DuckDBPyConnection) -> None:
    """Per set, the old rows become a first-time row (1 capture) and a last-time row (the rest)."""
    con.execute("""
        INSERT INTO edge_captures (query_id, run_id, set_id, captured_at, captures)
        SELECT NULL, NULL, set_id, min(captured_at), 1 FROM _old_captures GROUP BY set_id
        UNION ALL
        SELECT NULL, NULL, set_id, max(captured_at), sum(captures) - 1 FROM _old_captures
        GROUP BY set_id HAVING sum(captures) > 1""")


def _orphans(con: duckdb.DuckDBPyConnection, dry_run: bool) -> dict[str, int]:
    """Sets no capture row names any more (a query's edges moved to a table's name) and edges in no set."""
    sets = "SELECT DISTINCT set_id FROM edge_sets WHERE set_id NOT IN (SELECT set_id FROM edge_captures)"
    n_sets = con.execute(f"SELECT count(*) FROM ({sets})").fetchone()[0]
    if not dry_run and n_sets:
        con.execute(f"DELETE FROM edge_sets WHERE set_id IN ({sets})")
    edges = "SELECT edge_id FROM edges WHERE edge_id NOT IN (SELECT edge_id FROM edge_sets)"
    n_edges = con.execute(f"SELECT count(*) FROM ({edges})").fetchone()[0]
    if not dry_run and n_edges:
        con.execute(f"DELETE FROM edges WHERE edge_id IN ({edges})")
    return {"orphan_sets": n_sets, "orphan_edges": n_edges}


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def parse_keep(text: str) -> timedelta:
    """A retention such as ``400d``, ``52w`` or ``36h``.

    >>> parse_keep("400d")
    datetime.timedelta(days=400)
    """
    now = datetime(2000, 1, 1)
    try:
        then = parse_time(text, now=now)
    except ValueError:
        then = None
    if then is None or not _AGE.match(text):
        raise ValueError(f"cannot read retention {text!r}: give an age such as 400d, 52w or 36h")
    return now - then


def prune_store(path: str | Path, keep: timedelta | None, dry_run: bool = False, wait: float = 30.0,
                keep_audit: timedelta | None = KEEP_AUDIT) -> Pruned:
    """:func:`prune` the store at ``path``, keeping ``keep`` of history (None: all of it) and ``keep_audit``
    of its audit (None: all of it); waits up to ``wait`` s for a busy store.

    The store is attached to an in-memory database of its own, as the capture writer attaches it
    (:func:`~lineage_listener.store.connection.open_writable`), so its headers are read under its lock.
    """
    if not Path(path).exists():  # a mistyped path: never a new store (a dry run least of all)
        raise StoreError(f"no store at {path}: capture has not written there yet (check --store)")
    deadline = time.monotonic() + wait
    host = duckdb.connect() if ATTACH_SAFE else None
    try:
        try:
            con = connect_writable(path, lambda: deadline, host)
        except duckdb.Error as exc:
            raise StoreError(f"cannot prune {path}: {str(exc).splitlines()[0]}") from None
        try:
            return prune_open(con, keep, dry_run, keep_audit)
        finally:
            release(con, host, path)
    finally:
        if host is not None:
            host.close()


def prune_open(con: duckdb.DuckDBPyConnection, keep: timedelta | None, dry_run: bool = False,
               keep_audit: timedelta | None = KEEP_AUDIT) -> Pruned:
    """:func:`prune` a store already open for writing on ``con`` (a lineage server's writer holds it),
    keeping ``keep`` of history and ``keep_audit`` of its audit (None: all of it), then checkpoint it."""
    now = utcnow()
    done = prune(con, None if keep is None else now - keep, dry_run, None if keep_audit is None else now - keep_audit)
    if not dry_run:
        con.execute("CHECKPOINT")  # freed blocks are reused by later writes
    return done
