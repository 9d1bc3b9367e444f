"""Capture's store writer: each batch in one transaction of its own, retry while locked, spool otherwise;
and :class:`BatchWriter`, what every writer capture writes through has.

The store file is opened for each batch and closed right after, so other
processes (another job, a user's ``duckdb`` shell) can use it in between: it is
attached to an in-memory database the writer keeps, and detached after the batch
(a new DuckDB instance per batch would build DuckDB's whole catalog each time). If the
file stays locked past ``lock_timeout`` or cannot be written at all, the batch is
appended to a spool file beside the store (``<store>.spool/``, or a temp folder
when that is unwritable); the next successful write ingests the spool first.
"""
from __future__ import annotations

import os
import time
import weakref
from pathlib import Path
from typing import Protocol, runtime_checkable

import duckdb

from lineage_listener.store.batch import Batch
from lineage_listener.store import spool
from lineage_listener.store.connection import (ATTACH_SAFE, StoreNeedsAction, connect_writable, is_config_conflict,
                                                 release)
from lineage_listener.store.upsert import commit_batch
from lineage_listener import redact

log = redact.logger(__name__)


@runtime_checkable
class BatchWriter(Protocol):
    """Where capture's batches go: a store file (:class:`StoreWriter`), a lineage server
    (:class:`~lineage_listener.store.remote.RemoteWriter`), a Kafka topic
    (:class:`~lineage_listener.kafka.publish.KafkaWriter`), or a store or server and a topic
    (:class:`~lineage_listener.kafka.publish.Both`). A writer never raises to its caller: what it
    cannot deliver now it spools (or holds) and delivers first on a later write.

    The capture loop (:mod:`~lineage_listener.capture.pipeline`) uses these members. A writer may
    also have, read where present: ``close()`` (deliver or release what it holds, at the end of
    capture), ``batch_interval`` (seconds a batch's first rows wait for more) and
    ``waits_on_network`` (a write mostly waits, so it is paced by its CPU time); a writer given to
    ``Capture(writer=...)`` also has ``describe()``, the destination as logs name it.

    >>> isinstance(StoreWriter("lineage.duckdb"), BatchWriter)
    True
    >>> from lineage_listener.store.remote import RemoteWriter
    >>> isinstance(RemoteWriter("http://127.0.0.1:1"), BatchWriter)
    True
    """

    #: Where its spooled batches wait (the store file, or a pseudo path for a server or a topic).
    path: Path
    #: Seconds a write waits for its destination (a store's lock, a server, a broker) by default;
    #: capture shortens it when the process exits.
    lock_timeout: float

    def write(self, batch: Batch, wait: float | None = None) -> bool:
        """Deliver what waits, then ``batch`` (waiting at most ``wait`` seconds, default
        ``lock_timeout``); True when everything got through."""
        ...

    def waiting(self) -> bool:
        """True while lineage it spooled or holds has not got through yet."""
        ...

    def spooled(self) -> list[Path]:
        """The spool files waiting to be delivered."""
        ...

#: Writers with an in-memory database open (:meth:`StoreWriter._host_connection`): a forked child inherits them.
_with_host: weakref.WeakSet[StoreWriter] = weakref.WeakSet()


def _keep_inherited_hosts() -> None:
    """In a forked child: keep each writer's inherited in-memory database alive for good, unused.

    DuckDB crashes a process (SIGSEGV) that tears down a database it inherited through a fork, e.g.
    the child's interpreter at a normal exit. So the child holds one more reference to each, never
    dropped; its writers take new databases."""
    hosts = [writer._host for writer in list(_with_host) if writer._host is not None]
    if not hosts:  # most forks: nothing inherited, nothing to import
        return
    import ctypes

    for writer in list(_with_host):
        writer._host = None
    for host in hosts:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(host))


os.register_at_fork(after_in_child=_keep_inherited_hosts)


def _why(exc: BaseException) -> str:
    """Why the store could not be opened, in one line."""
    if is_config_conflict(exc):
        return ("this process has it open with another configuration, e.g. a read-only connection: close "
                "that connection while capture writes, or open it after flush() or disable()")
    return str(exc).splitlines()[0][:200]


class StoreWriter:
    """Writes batches to one store file (a :class:`BatchWriter`); never raises to its caller.

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
        #: Why the last batch that did not reach the store did not, and the spool file it went to.
        self.parked: tuple[str, Path | None] | None = None
        self._host: duckdb.DuckDBPyConnection | None = None  # the store is attached to it per batch

    def close(self) -> None:
        """Close the in-memory database batches are written through (the store is closed already)."""
        host, self._host = self._host, None
        if host is not None:
            host.close()

    def _host_connection(self) -> duckdb.DuckDBPyConnection | None:
        """The in-memory database the store is attached to; None before DuckDB 1.4 (a connection per
        batch then: earlier versions let two databases of one process open the same file).

        It runs statements on one thread: a batch's statements are small, and DuckDB's worker threads
        would only add their hand-offs (about a seventh of a write's CPU, ``docs/performance.md``)."""
        if self._host is None and ATTACH_SAFE:
            self._host = duckdb.connect(config={"threads": 1})
            _with_host.add(self)
        return self._host

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
                host = self._host_connection()
                con = connect_writable(self.path, deadline, host)
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
                try:
                    release(con, host, self.path)
                except duckdb.Error as exc:  # still attached: a new in-memory database for the next batch
                    log.warning("lineage-listener: closing store %s failed: %s", self.path,
                                (str(exc).splitlines() or [type(exc).__name__])[0][:200])
                    self.close()

    def _park(self, batch: Batch, reason: str, needs_action: bool = False) -> None:
        """Keep ``batch`` (and anything held) for later: spool it, or hold it in memory. :attr:`parked`
        says why and where the batch went (None: held in memory)."""
        held, self._held = self._held, []
        where = None
        for b in [*held, batch]:
            if len(b):
                where = self._spool(b, reason, needs_action)
        self.parked = (reason, where)

    def _quarantine(self, con: duckdb.DuckDBPyConnection, batch: Batch, exc: BaseException, what: str) -> bool:
        """Write ``batch`` query by query; keep what still fails as a ``.bad`` spool file (recorded).
        True if something could not be written."""
        return spool.quarantine(con, self.path, batch, exc, what, commit_batch)

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
