"""The server's one store writer: a bounded queue, one thread, group commits; reads from the same database.

Every POSTed batch is queued; one thread takes whatever is waiting (up to ``group_rows`` rows)
and writes it in ONE transaction the writer owns, each batch through
:func:`~lineage_listener.store.upsert.write_batch` (deduped, so a replay adds nothing, also within
a group), then commits once. Each request is answered when
its group has committed (200, ``new_edges`` its own), so N waiting jobs cost one commit rather
than N opens, commits and closes. A group that fails is rolled back and its batches written
one by one: a batch that fails alone on a healthy store is refused (422) and sinks no other.

The store stays open while batches keep coming, and reads take cursors of that same
database instance (DuckDB's MVCC: a read sees the last commit and never waits for a write).
Other processes (a Spark job writing the file directly, a ``duckdb`` shell) still get it: the
writer lets go as soon as no batch waits (by default before it answers, so a client that got
its 200 finds the file free unless others are writing; ``release_idle`` seconds later if set,
which saves reopening under a steady trickle; a batch may ask for longer with ``keep_open``, as a
Kafka consumer does while its topic flows), and at the latest after ``hold`` seconds of
holding it (it then stays away ``HANDOVER`` seconds). While the writer holds it, a direct
writer waits (its lock timeout) and then spools; the spool is ingested the next time the
writer opens the store: nothing is lost, it is late.

The queue is bounded in rows (``queue_rows``): past it, a POST is answered 503 with
Retry-After, never an unbounded backlog. A store that cannot be opened or written (locked by
another process past ``lock_timeout``, unwritable, needs a person) sends the batches to the
spool beside it (202), as ``StoreWriter`` does.
"""
from __future__ import annotations

import contextlib
import logging
from concurrent.futures import Future
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from lineage_listener.ownthread import OwnThread
from lineage_listener.store import spool
from lineage_listener.store.batch import Batch
from lineage_listener.store.connection import (ATTACH_SAFE, ATTACHED, StoreError, StoreNeedsAction,
                                                 connect_writable, open_readonly, release)
from lineage_listener.store.upsert import commit_batch, write_batch

log = logging.getLogger(__name__)

#: Seconds the writer stays away after letting go at ``hold``: a process waiting for the store gets its turn.
HANDOVER = 0.2
#: Seconds a client is asked to wait when the queue is full, at least and at most (else: the time the
#: writer needs for what waits, at the rate it has been writing).
RETRY_AFTER = (2, 60)

#: An answer: HTTP status and JSON body.
Answer = tuple[int, dict[str, Any]]


class QueueFull(Exception):
    """The queue holds ``queue_rows`` rows already: the client should retry after ``retry_after`` s."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class Settings:
    """How the writer groups batches and when it lets the store go (``serve`` options)."""

    group_rows: int = 10_000  # at most this many rows in one transaction (a bigger batch goes alone)
    queue_rows: int = 50_000  # rows waiting at most (seconds of work, under clients' timeouts); then 503
    release_idle: float = 0.0  # let the store go after this long without a batch (0: as soon as none waits)
    hold: float = 10.0  # ... and at the latest after holding it this long
    lock_timeout: float = 10.0  # wait this long for another process's lock before spooling


@dataclass
class _Item:
    batch: Batch
    rows: int
    answer: Callable[[Answer], None]
    result: Answer | None = field(default=None)
    #: run in the batch's transaction after its rows (e.g. a Kafka consumer's offsets: both or neither)
    also: Callable[[Any], None] | None = None
    quiet: bool = False  # the caller says itself that a batch was refused (no ERROR line here)
    keep_open: float = 0.0  # keep the store open this long after the batch (more of its kind coming)

    def reply(self, status: int, body: dict[str, Any]) -> None:
        """Decide the answer (sent by :meth:`send`, after the store is let go if it is to be)."""
        if self.result is None:
            self.result = (status, body)

    def send(self) -> None:
        self.answer(self.result or (500, {"detail": "the batch was not written"}))


class GroupWriter:
    """Queue, writer thread and the store's one open database; see the module docstring."""

    def __init__(self, store: Path, settings: Settings | None = None) -> None:
        self.store = store
        self.settings = settings or Settings()
        self._queue: deque[_Item] = deque()
        self._queued_rows = 0
        #: work on the open store between two groups (:meth:`maintain`), each with the future it answers
        self._tasks: deque[tuple[Callable[[duckdb.DuckDBPyConnection], Any], Future]] = deque()
        self._thread = OwnThread("lineage-store-writer", self._run)
        self._cond = self._thread.cond  # the queue, the open store and the counts are the thread's state
        # the open store (writer thread's connection), the root of readers' cursors, and who uses it
        self._db: duckdb.DuckDBPyConnection | None = None
        self._reads_root: duckdb.DuckDBPyConnection | None = None
        #: The in-memory database the store is attached to while open, as capture's writer attaches it
        #: (``connection.open_writable``: DuckDB then reads the file's headers after it has locked it).
        self._host: duckdb.DuckDBPyConnection | None = duckdb.connect() if ATTACH_SAFE else None
        self._turn: contextlib.ExitStack | None = None
        self._readers = 0
        self._switching = False  # opening or closing: new reads wait
        self._opened_at = 0.0
        self._keep_until = 0.0  # monotonic time until which an idle writer keeps the store (``keep_open``)
        self._warned = False
        self._writing = self._writing_rows = 0
        self._committing = False
        self._rate = 0.0  # rows written per second, recent groups weighted most
        self._counts = {"batches": 0, "groups": 0, "refused": 0, "spooled": 0, "opened": 0,
                        "split": 0, "withdrawn": 0}
        #: Called on the writer thread with the batches of each commit: must only hand them on (a
        #: policy watch queues them for its own thread), never slow the writer.
        self.on_commit: list[Callable[[list[Batch]], None]] = []

    def stats(self) -> dict[str, Any]:
        """Counters since start (``batches`` written, ``groups`` committed, groups ``split`` (failed, written one
        by one), batches ``refused``, ``spooled`` and ``withdrawn`` (their client gone before they were taken), times the store was ``opened``), batches ``queued``, rows
        queued and being written, whether the store is ``open``."""
        with self._cond:
            return {**self._counts, "queued": len(self._queue), "queued_rows": self._queued_rows,
                    "writing": self._writing, "writing_rows": self._writing_rows, "committing": self._committing,
                    "open": self._db is not None}

    # -- the queue ---------------------------------------------------------------------
    def full(self) -> int:
        """0 while the queue takes batches, else the seconds a client should wait before it retries."""
        with self._cond:
            return self._retry_after_locked() if self._queued_rows >= self.settings.queue_rows else 0

    def _retry_after_locked(self) -> int:
        """Seconds the writer needs for the rows waiting, at its recent rate, within ``RETRY_AFTER``."""
        need = (self._queued_rows + self._writing_rows) / self._rate if self._rate else 0
        return int(min(RETRY_AFTER[1], max(RETRY_AFTER[0], need + 0.999)))

    def submit(self, batch: Batch, answer: Callable[[Answer], None],
               also: Callable[[Any], None] | None = None, quiet: bool = False, keep_open: float = 0.0) -> _Item:
        """Queue ``batch``; ``answer((status, body))`` is called from the writer thread once it is
        in the store (200), spooled (202) or refused (422). ``also(con)`` runs in the same transaction,
        after the batch's rows (not when it is spooled); ``quiet``: the caller logs a refusal itself;
        ``keep_open``: seconds the writer keeps the store open after it when no batch waits (more are
        coming: the next one neither reopens the store nor waits for reads of a connection of their own;
        ``hold`` still bounds it). Raises :class:`QueueFull`."""
        rows = len(batch)
        with self._cond:
            if self._queue and self._queued_rows + rows > self.settings.queue_rows:
                wait = self._retry_after_locked()
                raise QueueFull(f"{self._queued_rows} rows are waiting to be written (at most "
                                f"{self.settings.queue_rows}); retry in {wait} s", wait)
            if self._thread.stopping:
                raise QueueFull("the server is stopping", RETRY_AFTER[1])
            item = _Item(batch, rows, answer, also=also, quiet=quiet, keep_open=keep_open)
            self._queue.append(item)
            self._queued_rows += rows
            self._thread.start_locked()
            return item

    def maintain(self, task: Callable[[duckdb.DuckDBPyConnection], Any], timeout: float | None = None) -> Any:
        """``task(con)`` on the writer thread, between two groups, with the store open (its own
        transactions, or none for a ``CHECKPOINT``); what it returns, or raises what it raised. Work on the
        whole store such as a prune goes through here: in this process a second connection would attach
        the file beside the writer's, which DuckDB refuses while the writer holds it. Raises
        :class:`~lineage_listener.store.connection.StoreError` when the store cannot be opened and
        :class:`QueueFull` when the writer is stopping."""
        done: Future = Future()
        with self._cond:
            if self._thread.stopping:
                raise QueueFull("the server is stopping", RETRY_AFTER[1])
            self._tasks.append((task, done))
            self._thread.start_locked()
        return done.result(timeout)

    def withdraw(self, item: _Item) -> bool:
        """Take a batch out of the queue before it is written (its client has gone: it resends, and work
        for nobody would only lengthen everyone's wait). False when the writer has it already."""
        with self._cond:
            try:
                self._queue.remove(item)
            except ValueError:
                return False
            self._queued_rows -= item.rows
            self._counts["withdrawn"] += 1
            return True

    def close(self, timeout: float = 60.0) -> None:
        """Write what is queued, let the store go, stop the thread."""
        self._thread.stop(timeout)

    def _take(self) -> list[_Item] | None:
        """The next group: whatever waits, up to ``group_rows`` rows (None: stop; empty: only tasks wait).
        Lets the store go when idle for ``release_idle`` seconds."""
        idle_since = time.monotonic()
        with self._cond:
            while not self._queue:
                if self._tasks:
                    return []
                if self._thread.stopping:
                    return None
                if self._db is None:
                    self._cond.wait()
                    continue
                left = max(idle_since + self.settings.release_idle, self._keep_until) - time.monotonic()
                if left <= 0:
                    self._release_locked()
                else:
                    self._cond.wait(left)  # also woken by reads ending: the deadline stays
            group, rows = [], 0
            while self._queue and (not group or rows + self._queue[0].rows <= self.settings.group_rows):
                item = self._queue.popleft()
                group.append(item)
                rows += item.rows
            self._queued_rows -= rows
            self._writing, self._writing_rows = len(group), rows
            keep = max(item.keep_open for item in group)
            if keep > 0:
                self._keep_until = max(self._keep_until, time.monotonic() + keep)
            return group

    def _run(self) -> None:
        while True:
            self._run_tasks()
            group = self._take()
            if group is None:
                with self._cond:
                    self._release_locked()
                    host, self._host = self._host, None
                    tasks, self._tasks = list(self._tasks), deque()
                for _, done in tasks:
                    done.set_exception(QueueFull("the server is stopping", RETRY_AFTER[1]))
                if host is not None:
                    host.close()
                return
            if not group:
                continue
            started = time.monotonic()
            try:
                self._write(group)
            except Exception as exc:  # noqa: BLE001 - the thread must live; every request gets an answer
                log.exception("lineage-listener: store writer failed")
                for item in group:
                    item.reply(500, {"detail": f"writing failed: {str(exc)[:200]}"})
            finally:
                with self._cond:
                    rate = self._writing_rows / max(time.monotonic() - started, 1e-3)
                    self._rate = rate if not self._rate else 0.8 * self._rate + 0.2 * rate
                    self._writing = self._writing_rows = 0
                    if self.settings.release_idle <= 0 and not self._queue and time.monotonic() >= self._keep_until:
                        self._release_locked()  # nothing waits: the store is free when the answers go
                for item in group:
                    item.send()

    def _run_tasks(self) -> None:
        """Every waiting :meth:`maintain` task, one after the other, on the open store."""
        while True:
            with self._cond:
                if not self._tasks:
                    return
                task, done = self._tasks.popleft()
            if not done.set_running_or_notify_cancel():
                continue
            con = self._open()
            if con is None:
                done.set_exception(StoreError(f"cannot open store {self.store} (see the log)"))
                continue
            try:
                done.set_result(task(con))
            except BaseException as exc:  # noqa: BLE001 - the caller gets it; the writer goes on
                with contextlib.suppress(duckdb.Error):
                    con.execute("ROLLBACK")
                done.set_exception(exc)
            finally:
                with self._cond:
                    if (self.settings.release_idle <= 0 and not self._queue and not self._tasks
                            and time.monotonic() >= self._keep_until):
                        self._release_locked()

    # -- writing -----------------------------------------------------------------------
    def _write(self, group: list[_Item]) -> None:
        if self._db is not None and time.monotonic() - self._opened_at > self.settings.hold:
            with self._cond:
                self._release_locked()
            time.sleep(HANDOVER)  # a process waiting for the store gets it now
        con = self._open()
        if con is None:
            for item in group:
                self._spool(item, "the store cannot be opened")
            return
        try:
            counts = self._write_group(con, group)
            self._committed(len(group))
            self._tell([item.batch for item in group])
        except Exception as exc:  # noqa: BLE001 - one batch of the group, or the store
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            if len(group) > 1:
                self._count("split")
                log.info("lineage-listener: a group of %d batches failed (%s); writing them one by one",
                         len(group), str(exc).splitlines()[0][:200])
            for item in group:
                self._write_alone(item)
            return
        for item, new in zip(group, counts):
            item.reply(200, {"written": True, "rows": item.rows, "new_edges": new})

    def _write_group(self, con: duckdb.DuckDBPyConnection, items: list[_Item]) -> list[int]:
        """Every batch through ``write_batch`` in one transaction; the new edges of each."""
        con.execute("BEGIN TRANSACTION")  # rolled back by the caller when anything here fails
        counts = []
        for item in items:
            counts.append(write_batch(con, item.batch))
            if item.also is not None:
                item.also(con)
        with self._cond:
            self._committing = True
        try:
            con.execute("COMMIT")
        except BaseException:
            with self._cond:
                self._committing = False
            raise
        return counts  # still "committing" in stats until counted

    def _write_alone(self, item: _Item) -> None:
        con = self._db if self._db is not None else self._open()
        if con is None:
            self._spool(item, "the store cannot be opened")
            return
        try:
            new = self._write_group(con, [item])[0]
            self._committed(1)
            self._tell([item.batch])
            item.reply(200, {"written": True, "rows": item.rows, "new_edges": new})
            return
        except Exception as exc:  # noqa: BLE001
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            error = str(exc).splitlines()[0][:300]
            if self._healthy(con) and not isinstance(exc, (duckdb.IOException, OSError)):
                (log.info if item.quiet else log.error)(
                    "lineage-listener: refused a batch of %d rows that cannot be written: %s", item.rows, error)
                self._count("refused")
                item.reply(422, {"detail": f"this batch cannot be written to the store: {error}"})
                return
        log.error("lineage-listener: writing to %s failed: %s", self.store, error)
        with self._cond:
            self._release_locked()
        self._spool(item, error)

    def _tell(self, batches: list[Batch]) -> None:
        for listener in self.on_commit:
            try:
                listener(batches)
            except Exception:  # noqa: BLE001 - a listener's failure is its own, never the write's
                log.exception("lineage-listener: a commit listener failed")

    def _count(self, what: str) -> None:
        with self._cond:
            self._counts[what] += 1

    def _committed(self, batches: int) -> None:
        with self._cond:  # at once: stats never show half a commit's counts
            self._counts["groups"] += 1
            self._counts["batches"] += batches
            self._committing = False

    @staticmethod
    def _healthy(con: duckdb.DuckDBPyConnection) -> bool:
        try:
            con.execute("SELECT 1").fetchone()
            return True
        except duckdb.Error:
            return False

    def _spool(self, item: _Item, reason: str) -> None:
        """202 once the batch is in the spool beside the store; 503 when no spool folder is writable."""
        if spool.write(self.store, item.batch) is None:
            item.reply(503, {"detail": f"the store cannot be written ({reason}) and no spool folder either"})
            return
        self._count("spooled")
        if not self._warned:
            self._warned = True
            log.warning("lineage-listener: store %s not writable now (%s); batches are spooled beside it and "
                        "written when it is", self.store, reason)
        item.reply(202, {"written": False, "rows": item.rows, "new_edges": None})

    # -- the open store ------------------------------------------------------------------
    def _open(self) -> duckdb.DuckDBPyConnection | None:
        """The store, opened (after the turn lock, waiting for reads of a read-only connection to end) if
        it is not; ingests what was spooled. None when it cannot be opened within ``lock_timeout``."""
        if self._db is not None:
            return self._db
        with self._cond:
            self._switching = True
            while self._readers:
                self._cond.wait()
        try:
            deadline = time.monotonic() + self.settings.lock_timeout
            turn = contextlib.ExitStack()
            if not turn.enter_context(spool.turn(self.store, lambda: deadline)):
                turn.close()
                return None
            try:
                con = connect_writable(self.store, lambda: deadline, self._host)
            except StoreNeedsAction as exc:
                log.error("lineage-listener: %s; run `lineage-listener doctor --store %s`", exc, self.store)
                turn.close()
                return None
            except (duckdb.Error, OSError) as exc:
                log.warning("lineage-listener: cannot open store %s: %s", self.store, str(exc).splitlines()[0])
                turn.close()
                return None
            except BaseException:
                turn.close()
                raise
            try:
                spool.ingest(con, self.store, commit_batch)
            except Exception as exc:  # noqa: BLE001 - a spooled batch that fails waits; new ones go on
                log.error("lineage-listener: a spooled batch of %s could not be written (kept): %s", self.store, exc)
            self._db, self._reads_root, self._turn = con, self._cursor(con), turn
            self._opened_at = time.monotonic()
            self._count("opened")
            if self._warned:
                log.warning("lineage-listener: store %s writable again", self.store)
                self._warned = False
            return con
        finally:
            with self._cond:
                self._switching = False
                self._cond.notify_all()

    def _release_locked(self) -> None:
        """Close the store and drop the turn lock, once no read uses a cursor of it (holding ``_cond``)."""
        if self._db is None:
            return
        self._switching = True
        while self._readers:
            self._cond.wait()
        try:
            with contextlib.suppress(duckdb.Error):
                self._reads_root.close()
            try:
                release(self._db, self._host, self.store)
            except duckdb.Error as exc:  # still attached: a new in-memory database for the next open
                log.warning("lineage-listener: closing store %s failed: %s", self.store,
                            (str(exc).splitlines() or [type(exc).__name__])[0][:200])
                self._host = duckdb.connect()
        finally:
            self._db = self._reads_root = None
            if self._turn is not None:
                self._turn.close()
                self._turn = None
            self._switching = False
            self._cond.notify_all()

    def _cursor(self, con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
        """A cursor of the open store: a new connection of its database, on the store (attached to the
        in-memory host, it names the store as its default database, as the writer's connection does)."""
        cursor = con.cursor()
        if self._host is not None and self._db is self._host:
            cursor.execute(f"USE {ATTACHED}")
        return cursor

    # -- reads ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def reading(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one read: a cursor of the open store (sees the last commit, never waits for
        a write), or a read-only connection of its own while the writer does not hold the store."""
        with self._cond:
            while self._switching:
                self._cond.wait()
            cursor = self._cursor(self._reads_root) if self._reads_root is not None else None
            self._readers += 1
        try:
            con = cursor if cursor is not None else open_readonly(self.store)
            try:
                yield con
            finally:
                con.close()
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()
