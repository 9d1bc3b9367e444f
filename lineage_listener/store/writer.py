"""Write batches to the DuckDB store: one transaction each, retry while locked, spool otherwise.

The store file is opened for each batch and closed right after, so other
processes (another job, a user's ``duckdb`` shell) can use it in between. If the
file stays locked past ``lock_timeout`` or cannot be written at all, the batch is
appended to a spool file beside the store (``<store>.spool/``, or a temp folder
when that is unwritable); the next successful write ingests the spool first.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import duckdb

from lineage_listener.store.batch import Batch
from lineage_listener.store import captures, labels, retarget, spool
from lineage_listener.store.connection import StoreNeedsAction, connect_writable, is_config_conflict, transaction
from lineage_listener.store.rows import (INSTRUCTIONS, LABEL_ROWS, TABLES, EdgeRow, QueryStarted, Retarget,
                                         RunReopened, RunRow, StreamRow, row_of)
from lineage_listener import redact

log = redact.logger(__name__)

def _fold_streams(rows: list[StreamRow]) -> list[StreamRow]:
    """One row per stream plan from its micro-batches' rows: batch range and count (ids seen once)."""
    out: dict[str, StreamRow] = {}
    seen: dict[str, set] = {}
    for r in rows:
        ids = seen.setdefault(r.query_id, set())
        new = r.first_batch_id not in ids and r.last_batch_id not in ids
        ids.update((r.first_batch_id, r.last_batch_id))
        old = out.get(r.query_id)
        if old is None:
            out[r.query_id] = r
            continue
        out[r.query_id] = r._replace(first_batch_id=min(old.first_batch_id, r.first_batch_id),
                                     last_batch_id=max(old.last_batch_id, r.last_batch_id),
                                     first_batch_at=min(old.first_batch_at, r.first_batch_at),
                                     last_batch_at=max(old.last_batch_at, r.last_batch_at),
                                     batch_count=old.batch_count + (r.batch_count if new else 0))
    return list(out.values())


def _typed(cls: Any, rows: list[tuple]) -> list[Any]:
    """Rows of type ``cls``: a plain tuple (put into a batch's rows directly) becomes one, shorter
    ones (spooled or sent by an older version) get nulls; a stream's micro-batch rows fold into one
    row per stream plan."""
    if any(type(r) is not cls for r in rows):
        rows = [r if type(r) is cls else row_of(cls.TABLE, r) for r in rows]
    return _fold_streams(rows) if cls is StreamRow else rows


def _rounds(cls: Any, rows: list[tuple]) -> list[list[tuple]]:
    """Upsert rows in rounds that touch each key once (one statement may not touch a row twice):
    the n-th row of a key goes in round n, so the table's merge rule (the row type's ``MERGE``) joins a
    key's rows in their order, exactly as if they had come in separate batches (``first_seen`` stays the
    earliest of the batch, a null never clears a value given earlier in it).

    >>> [[r[1] for r in part] for part in _rounds(RunRow, [("a", 1), ("b", 2), ("a", 3), ("a", 4)])]
    [[1, 2], [3], [4]]
    """
    if not cls.KEY or cls is StreamRow:
        return [rows] if rows else []
    idx = [cls._fields.index(k) for k in cls.KEY]
    rounds: list[list[tuple]] = []
    seen: dict[tuple, int] = {}
    for r in rows:
        key = tuple(r[i] for i in idx)
        n = seen.get(key, 0)
        seen[key] = n + 1
        if n == len(rounds):
            rounds.append([])
        rounds[n].append(r)
    return rounds


_TYPES: dict[str, dict[str, str]] = {}


def _column_types(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """SQL types of ``table``'s columns, read once per process (the schema is fixed per version)."""
    if table not in _TYPES:
        _TYPES[table] = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                         "WHERE table_name = ?", [table]).fetchall())
    return _TYPES[table]


def write_batch(con: duckdb.DuckDBPyConnection, batch: Batch) -> int:
    """Write ``batch`` in the transaction its caller owns (:func:`commit_batch` for one of its own);
    the number of new edges.

    Idempotent: writing a batch twice adds no edge twice. Edges a query already has in
    the store are skipped, so a replayed batch adds nothing and later events of a run
    add what they newly carry (:mod:`~lineage_listener.store.captures`).
    """
    folded = retarget.fold(batch.rows)  # a CTAS's path renamed in memory when its inner write is here
    new_edges = 0
    _reopen(con, folded.get(RunReopened.TABLE, []))
    for table, cls in TABLES.items():
        if cls in INSTRUCTIONS or cls in LABEL_ROWS:
            continue
        rows = _typed(cls, folded.get(table, []))
        if cls is EdgeRow:
            new_edges = captures.write_edges(con, rows)
        elif rows:
            _insert(con, cls, rows)
    _set_started(con, folded.get(QueryStarted.TABLE, []))
    labels.write_labels(con, {cls.TABLE: folded.get(cls.TABLE, []) for cls in LABEL_ROWS})
    _retarget(con, folded.get(Retarget.TABLE, []))
    return new_edges


def commit_batch(con: duckdb.DuckDBPyConnection, batch: Batch) -> int:
    """:func:`write_batch` in a transaction of its own: all of ``batch`` or, when it fails, none of it."""
    with transaction(con):
        return write_batch(con, batch)


def _insert(con: duckdb.DuckDBPyConnection, cls: Any, rows: list[tuple]) -> None:
    """Column-wise: one statement per table and round, each column bound as a list and unnested;
    an upsert by the row type's ``KEY`` and ``MERGE``."""
    types = _column_types(con, cls.TABLE)
    values = ", ".join(f"CAST(unnest(${i + 1}) AS {types[c]})" for i, c in enumerate(cls._fields))
    sql = f"INSERT INTO {cls.TABLE} ({', '.join(cls._fields)}) SELECT {values}"
    if cls.MERGE:
        sql += f" ON CONFLICT ({', '.join(cls.KEY)}) DO UPDATE SET {cls.MERGE}"
    for part in _rounds(cls, rows):
        con.execute(sql, [list(column) for column in zip(*part)])


def _retarget(con: duckdb.DuckDBPyConnection, rows: list[Retarget]) -> None:
    """Retargets whose inner write went in an earlier batch: its edges name the table now."""
    for query_id, target, previous in rows:
        captures.retarget(con, query_id, target)
        if previous:
            _forget_unused_path(con, previous)


def _reopen(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    """Clear the end of runs captured again (before the batch's own ``runs`` rows, which may end them)."""
    if rows:
        con.execute("UPDATE runs SET ended_at = NULL WHERE run_id IN (SELECT unnest(?)) AND ended_at IS NOT NULL",
                    [[r[0] for r in rows]])


def _set_started(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    """Keep when queries started (the earliest time given) and set the duration of those that ended."""
    if not rows:
        return
    ids = [r[0] for r in rows]
    starts = [r for r in rows if r[1] is not None]
    if starts:
        con.execute("""INSERT INTO query_starts SELECT unnest(?), CAST(unnest(?) AS TIMESTAMP)
                       ON CONFLICT (query_id) DO UPDATE SET started_at = least(query_starts.started_at,
                                                                               excluded.started_at)""",
                    [[r[0] for r in starts], [r[1] for r in starts]])
    con.execute("""UPDATE queries q SET duration_ms = date_diff('millisecond', s.started_at, q.captured_at)
                   FROM query_starts s WHERE q.query_id = s.query_id AND q.query_id IN (SELECT unnest(?))
                   AND q.status <> 'running' AND q.captured_at >= s.started_at""", [ids])


def _forget_unused_path(con: duckdb.DuckDBPyConnection, dataset: str) -> None:
    """Drop a ``path`` dataset no edge or query names any more (a table's location seen first).

    The edges naming it are found through the indexes on either end, their captures through
    each edge's list of sets: no scan of the store's history.
    """
    used = con.execute(
        """WITH held AS (SELECT unnest(sets) AS set_id FROM edges WHERE target_dataset = $1
                         UNION ALL SELECT unnest(sets) AS set_id FROM edges WHERE source_dataset = $1)
           SELECT EXISTS (SELECT 1 FROM edge_captures c WHERE c.set_id IN (SELECT set_id FROM held))
               OR EXISTS (SELECT 1 FROM queries WHERE target_dataset = $1)""", [dataset]).fetchone()[0]
    if not used:
        con.execute("DELETE FROM dataset_columns WHERE dataset = $1 AND EXISTS "
                    "(SELECT 1 FROM datasets WHERE dataset = $1 AND kind = 'path')", [dataset])
        con.execute("DELETE FROM datasets WHERE dataset = $1 AND kind = 'path'", [dataset])


def _why(exc: BaseException) -> str:
    """Why the store could not be opened, in one line."""
    if is_config_conflict(exc):
        return ("this process has it open with another configuration, e.g. a read-only connection: close "
                "that connection while capture writes, or open it after flush() or disable()")
    return str(exc).splitlines()[0][:200]


class StoreWriter:
    """Writes batches to one store file; never raises to its caller.

    Where a batch goes, in order: the store; else a spool file; else memory (at most
    ``max_held_rows`` rows, the oldest batches dropped beyond, counted). Whatever waits
    is written first on the next write that reaches the store, and a drop is recorded
    there as a ``capture_errors`` row.
    """

    def __init__(self, path: str | os.PathLike, lock_timeout: float = 10.0,
                 max_held_rows: int = 200_000) -> None:
        self.path = Path(path).expanduser().absolute()
        self.lock_timeout = lock_timeout
        self.max_held_rows = max_held_rows
        self._held: list[Batch] = []
        self._dropped_rows = 0
        self._dropped_queries = 0
        self._warned: set[str] = set()
        #: Edges the last :meth:`write` added to the store (0 when all were there already).
        self.new_edges = 0

    # -- spool ---------------------------------------------------------------------
    def spool_dirs(self) -> list[Path]:
        return spool.dirs(self.path)

    def spooled(self) -> list[Path]:
        return spool.pending(self.path)

    def waiting(self) -> bool:
        """True while spooled or held lineage is not in the store yet."""
        return bool(self._held) or bool(self.spooled())

    def _spool(self, batch: Batch, reason: str, needs_action: bool = False) -> Path | None:
        final = spool.write(self.path, batch)
        if final is not None:
            if needs_action:
                self._warn("spool", f"{reason}; a person must act: run `lineage-listener doctor --store "
                                    f"{self.path}`. Captured lineage is spooled to {final.parent} meanwhile")
            else:
                self._warn("spool", f"lineage store {self.path} not writable now ({reason}); spooled captured "
                                    f"lineage to {final.parent}, it will be written when the store is writable")
            return final
        self._hold(batch)
        return None

    def _hold(self, batch: Batch) -> None:
        self._held.append(batch)
        held = sum(len(b) for b in self._held)
        while held > self.max_held_rows and len(self._held) > 1:
            old = self._held.pop(0)
            held -= len(old)
            self._dropped_rows += len(old)
            self._dropped_queries += len(old.query_ids())
            log.error("lineage-listener: memory bound of %d rows reached with store %s and every spool folder "
                      "unwritable: dropped %d rows of %d queries (%d rows dropped so far)", self.max_held_rows,
                      self.path, len(old), len(old.query_ids()), self._dropped_rows)
        self._warn("held", f"cannot write store {self.path} nor any spool folder ({', '.join(map(str, self.spool_dirs()))}); "
                           f"holding {held} rows in memory (at most {self.max_held_rows}) and retrying")

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("lineage-listener: %s", message)

    # -- writing -------------------------------------------------------------------
    def write(self, batch: Batch, wait: float | None = None) -> bool:
        """Write ``batch`` (after anything spooled or held). True if it reached the store."""
        start = time.monotonic()

        def deadline() -> float:  # read on every retry: hurry() may shorten lock_timeout meanwhile
            return start + (self.lock_timeout if wait is None else wait)
        with spool.turn(self.path, deadline) as got_turn:
            try:
                if not got_turn:
                    raise TimeoutError(f"other writers held {self.path} for {self.lock_timeout:.0f} s")
                con = connect_writable(self.path, deadline)
            except StoreNeedsAction as exc:
                self._park(batch, str(exc), needs_action=True)
                return False
            except Exception as exc:  # noqa: BLE001 - locked past the deadline, or unwritable
                self._park(batch, _why(exc))
                return False
            try:
                self._ingest_spool(con)
                self._write_held(con)
                try:
                    self.new_edges = commit_batch(con, batch) if len(batch) else 0
                except Exception as exc:  # noqa: BLE001 - a batch that cannot be written sinks only itself
                    if not spool.is_content_error(exc):
                        raise
                    self.new_edges = 0
                    return not self._quarantine(con, batch, exc, "a captured batch")
                self._warned.difference_update({"spool", "held"})
                return True
            except Exception as exc:  # noqa: BLE001
                log.error("lineage-listener: writing to %s failed: %s", self.path, exc)
                self._park(batch, str(exc)[:200])
                return False
            finally:
                con.close()

    def _park(self, batch: Batch, reason: str, needs_action: bool = False) -> None:
        """Keep ``batch`` (and anything held) for later: spool it, or hold it in memory."""
        held, self._held = self._held, []
        for b in [*held, batch]:
            if len(b):
                self._spool(b, reason, needs_action)

    def _quarantine(self, con: duckdb.DuckDBPyConnection, batch: Batch, exc: BaseException, what: str) -> bool:
        """Write ``batch`` query by query; keep what still fails as a ``.bad`` spool file (recorded).
        True if something could not be written."""
        failed = spool.salvage(con, batch, commit_batch)
        if failed is None:
            return False
        kept = spool.write(self.path, failed, suffix=".bad")
        spool.quarantined(con, what, failed, exc, str(kept) if kept else None)
        return True

    def _write_held(self, con: duckdb.DuckDBPyConnection) -> None:
        while self._held:
            try:
                commit_batch(con, self._held[0])
            except Exception as exc:  # noqa: BLE001 - a held batch that cannot be written blocks nothing
                if not spool.is_content_error(exc):
                    raise
                self._quarantine(con, self._held[0], exc, "a batch held in memory")
            self._held.pop(0)
        if self._dropped_rows:
            text = (f"{self._dropped_rows} captured rows of {self._dropped_queries} queries were dropped: "
                    f"neither the store nor any spool folder was writable and {self.max_held_rows} rows "
                    f"were already held in memory")
            con.execute("INSERT INTO capture_errors VALUES (current_timestamp::TIMESTAMP, NULL, NULL, 'store', ?)",
                        [text])
            log.warning("lineage-listener: store %s writable again; recorded that %s", self.path, text)
            self._dropped_rows = self._dropped_queries = 0

    def _ingest_spool(self, con: duckdb.DuckDBPyConnection) -> int:
        return spool.ingest(con, self.path, commit_batch)
