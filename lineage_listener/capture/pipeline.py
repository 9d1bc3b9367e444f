"""The capture pipeline: listener callbacks in, batched store writes out.

``on_success`` runs on Spark's listener bus and only queues; the capture thread (:class:`Capture`'s
queue loop) reads, walks and records into its pending batch, and hands each batch, when the write
pacing (:mod:`~lineage_listener.capture.pacing`) says, to a write lane
(:mod:`~lineage_listener.capture.writelane`), whose thread writes it to the store
(:class:`~lineage_listener.capture.writelane.StoreWrites`).
Creating a :class:`Capture` only starts that thread: the thread builds what is slow to build
(the recorder and its lineage modules, the store writer) and warms up (``warm_up``, then the
store opened and its schema migrated), while the job runs; actions arriving meanwhile wait in
the queue and are captured once it is ready. The modules that read plans and hold batches are
imported there too (:meth:`Capture._build`), so creating a capture imports only this module.

>>> cap = Capture("lineage.duckdb")               # doctest: +SKIP
>>> cap.on_success("collect", qe, 1_000_000)      # doctest: +SKIP
>>> cap.flush(timeout=10)                         # doctest: +SKIP
True
"""
from __future__ import annotations

import atexit
import os
import queue
import threading
import time
import weakref
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from collections.abc import Callable

from typing import TYPE_CHECKING

from lineage_listener.capture import stages, textmode
from lineage_listener.capture.jvm import release
from lineage_listener.capture.pacing import Pacing
from lineage_listener.capture.writelane import StoreWrites, WriteLane, empty_batch
from lineage_listener.timewindow import utcnow
from lineage_listener import redact

if TYPE_CHECKING:  # pragma: no cover - imported on the capture thread (imports take a while)
    from lineage_listener.capture.reading.queryreader import Envelope, QueryReader
    from lineage_listener.capture.recording.records import Recorder
    from lineage_listener.capture.recording.wrappers import LastWrites
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.writer import BatchWriter

log = redact.logger(__name__)

#: Seconds a batch's first rows wait for more before it is written, unless the writer says otherwise
#: (its ``batch_interval``: a Kafka topic takes each query as a message of its own, so it waits less).
BATCH_INTERVAL = 1.0

#: At interpreter exit, a busy store is waited for at most this long before lineage is spooled.
EXIT_LOCK_WAIT = 2.0


@dataclass(frozen=True)
class _Event:
    """A listener callback not read yet (``defer_reads``)."""

    func_name: str
    qe: Any
    duration_ns: int | None
    error: Any
    at: datetime


@dataclass(frozen=True)
class _StreamEvent:
    """A streaming query's progress event (one micro-batch), not read yet."""

    event: Any
    query: Any  # the StreamingQuery, taken for the first event of a stream run; else None
    at: datetime


@dataclass(frozen=True)
class _Problem:
    """A failure outside any action (e.g. of the start-up): a ``capture_errors`` row."""

    stage: str
    error: str
    at: datetime


class _Marker:
    """A control item on the queue: flush, end of run, or stop."""

    def __init__(self, kind: str, payload: Any = None) -> None:
        self.kind = kind
        self.payload = payload
        self.done = threading.Event()
        self.ok = False


class Capture:
    """Owns the capture thread and its queue loop, its write lane and the store writer for one store file."""

    def __init__(self, store: str | os.PathLike, *, batch_interval: float | None = None,
                 max_batch_rows: int = 20_000, lock_timeout: float = 10.0, defer_reads: bool = False,
                 max_queue: int = 10_000, after_write: Callable[[Batch], Batch | None] | None = None,
                 url: str | None = None, token: str | None = None, writer: BatchWriter | None = None,
                 warm_up: Callable[[], Any] | None = None, sql_text: str = textmode.FULL,
                 tls_ca: str | None = None) -> None:
        """``defer_reads``: read the ``QueryExecution`` on the capture thread instead of the
        callback's thread (use it when the callback runs on Spark's listener bus).
        ``max_queue``: at most this many deferred actions wait; more are recorded as lineage_error.
        ``after_write``: called on the write lane's thread with each batch that reached the store
        (e.g. live OpenLineage emission); rows it returns are written with the next batch.
        ``url``: send batches to this lineage server (``lineage-listener serve``) instead of
        writing ``store``; ``token`` (or env ``LINEAGE_TOKEN``) authenticates them.
        ``writer``: where batches go instead (a :class:`~lineage_listener.store.writer.BatchWriter`
        with ``describe()``, e.g. a Kafka topic).
        ``warm_up``: called first on the capture thread (e.g. load the plan reader); what it raises
        is logged in one line and capture goes on.
        ``sql_text``: what is kept of SQL text, ``full``, ``masked`` or ``none``
        (:mod:`~lineage_listener.capture.textmode`); applied to every batch before it goes anywhere.
        ``tls_ca``: a CA file (PEM) the lineage server's certificate is checked against.
        ``batch_interval``: seconds a batch's first rows wait for more (default: the writer's
        ``batch_interval``, else :data:`BATCH_INTERVAL`)."""
        self.after_write = after_write
        #: The sessions whose streams this capture reads (the reader's, from when it is built).
        self.stream_sessions: list[Any] = []
        self._reader: QueryReader | None = None
        self._reader_built = threading.Event()  # set once the reader is built (or cannot be)
        self._writer: BatchWriter | None = writer
        self._writer_args = (url, token, lock_timeout)
        self.sql_text = textmode.parse(sql_text)
        self._tls_ca = tls_ca
        #: Rows to what ``sql_text`` allows (None: all of it); built on the capture thread.
        self._mask: Callable[[Batch], Batch] | None = None
        self._recorder: Recorder | None = None
        self._writes: LastWrites | None = None  # each run's last write: the CTAS/saveAsTable fold
        self._ready = threading.Event()  # the recorder and the writer are built
        self._warm_up = warm_up
        if writer is not None:
            self.store = writer.describe()
        elif url:
            self.store = redact.redact_url(url)
        else:
            self.store = str(Path(store).expanduser().absolute())
        self.batch_interval = batch_interval if batch_interval is not None else \
            getattr(writer, "batch_interval", BATCH_INTERVAL)
        self._pacing = Pacing(self.batch_interval)
        self._next_write = 0.0
        self.max_batch_rows = max_batch_rows
        self.defer_reads = defer_reads
        self.max_queue = max_queue
        self._waiting = 0  # deferred events queued, not read yet
        self._waiting_lock = threading.Lock()
        self._queue: queue.SimpleQueue[Envelope | _Event | _Marker] = queue.SimpleQueue()
        self._pending: Batch = None  # type: ignore[assignment] # the capture thread's, from _build on
        #: Store writes run here, off the capture thread (built with the writer, before the thread
        #: takes its first item: everything after ``_build`` may use it), as ``_stores`` writes.
        self._lane: WriteLane | None = None
        self._stores: StoreWrites = None  # type: ignore[assignment] # built with the lane
        self._closed = False
        self._hurried = False
        self._thread = threading.Thread(target=self._loop, name="lineage-listener-capture", daemon=True)
        self._thread.start()
        _live.add(self)
        _register_exit_hook()

    @property
    def reader(self) -> "QueryReader | None":
        """Reads actions into envelopes (built first on the capture thread: this waits until it is;
        None when the capture could not start)."""
        self._reader_built.wait()
        return self._reader

    def runs(self) -> dict[str, dict[str, Any]]:
        """The runs (applications) this capture has seen, by app id."""
        reader = self.reader
        return reader.runs() if reader is not None else {}

    @property
    def writer(self) -> "BatchWriter":
        """Where batches go (built on the capture thread: this waits until it is)."""
        self._ready.wait()
        return self._writer

    @property
    def recorder(self) -> "Recorder":
        """Turns envelopes into store rows (built on the capture thread: this waits until it is)."""
        self._ready.wait()
        assert self._recorder is not None
        return self._recorder

    def _build(self) -> None:
        """On the capture thread, before the first item: the reader, the recorder, the writer, the
        warm-up."""
        from lineage_listener.capture.reading.queryreader import QueryReader

        self._pending = empty_batch()
        self._reader = QueryReader(self.stream_sessions)
        self._reader_built.set()
        from lineage_listener.capture.recording.records import Recorder
        from lineage_listener.capture.recording.wrappers import LastWrites

        own_store = self._writer is None and not self._writer_args[0]
        if self._writer is None:
            url, token, lock_timeout = self._writer_args
            if url:
                from lineage_listener.store.remote import RemoteWriter

                self._writer = RemoteWriter(url, token, lock_timeout=lock_timeout, tls_ca=self._tls_ca)
            else:
                from lineage_listener.store.writer import StoreWriter

                self._writer = StoreWriter(self.store, lock_timeout=lock_timeout)
        self._recorder = Recorder()
        self._mask = textmode.masker(self.sql_text)
        self._writes = LastWrites()
        self._stores = StoreWrites(self._writer, self._pacing, self.after_write, lambda: self._hurried)
        self._lane = WriteLane(max_waiting=1)
        self._ready.set()
        if self._hurried:  # hurry() came before the writer was there
            self._writer.lock_timeout = min(self._writer.lock_timeout, EXIT_LOCK_WAIT)
        if self._warm_up is not None:
            try:
                self._warm_up()
            except Exception as exc:  # noqa: BLE001 - a warm-up only saves time later
                log.warning("lineage-listener: warm-up failed (%s); capture goes on", exc)
                self.record_problem("plan", f"warm-up failed: {type(exc).__name__}: {exc}")
        if own_store and self._queue.empty():  # open the store and migrate its schema now, if free
            writer = self._writer
            self._lane.submit(lambda: writer.write(empty_batch(), wait=0.0))

    # -- listener-bus side (must be fast and never raise) ---------------------------
    def on_success(self, func_name: str, qe: Any, duration_ns: int | None) -> None:
        self._accept(func_name, qe, duration_ns, None)

    def on_failure(self, func_name: str, qe: Any, exception: Any) -> None:
        self._accept(func_name, qe, None, exception if exception is not None else "failed")

    def on_stream_started(self, run_id: str, query: Any) -> None:
        """A stream run started (on its own thread): remember its query for foreachBatch writes."""
        reader = self.reader if not self._closed else None
        if reader is not None:
            reader.streams.started(run_id, query)

    def on_stream_progress(self, event: Any, query: Any) -> None:
        """A micro-batch finished: queue its progress event (read on the capture thread)."""
        if self._closed:
            return
        with self._waiting_lock:
            full = self._waiting >= self.max_queue
            self._waiting += not full
        if not full:  # an unchanged stream loses nothing but one count when its batches outrun capture
            self._queue.put(_StreamEvent(event, query, utcnow()))

    def record_problem(self, stage: str, error: str) -> None:
        """Record a failure that belongs to no action as a ``capture_errors`` row (``stage``: see
        ``docs/reference/store.md``); any thread. The caller logs it."""
        if not self._closed:
            self._queue.put(_Problem(stage, error[:4000], utcnow()))

    def _accept(self, func_name: str, qe: Any, duration_ns: int | None, error: Any) -> None:
        if self._closed:
            return
        now = utcnow()
        if self.defer_reads:  # keep only a reference: the QueryExecution stays alive until read
            with self._waiting_lock:
                full = self._waiting >= self.max_queue
                self._waiting += not full
            if full:  # never block the listener bus, never hold more plans: record the overflow
                from lineage_listener.capture.recording import overflow

                self._queue.put(overflow.Dropped(str(func_name), duration_ns, _text(error), now, self.max_queue))
            else:
                self._queue.put(_Event(str(func_name), qe, duration_ns, error, now))
            return
        reader = self.reader
        if reader is None:  # the capture could not start (logged once)
            return
        try:
            env = reader.read(str(func_name), qe, duration_ns, error, now)
        except Exception as exc:  # noqa: BLE001 - never break the user's job
            log.warning("lineage-listener: could not read a %s action: %s", func_name, exc)
            return
        finally:
            release(qe, error)
        if env is not None:
            self._queue.put(env)

    # -- control -------------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> bool:
        """Block until everything accepted so far is handled: True if it is in the store,
        False if it had to be spooled (it will be written later) or on timeout."""
        if not self._thread.is_alive():
            return False
        marker = _Marker("flush")
        self._queue.put(marker)
        return marker.done.wait(timeout) and marker.ok

    def end_run(self, app_id: str | None = None, keep: Callable[[], set[str]] | None = None) -> None:
        """Record ``runs.ended_at`` now for ``app_id`` (default: every run this capture saw), except
        the runs ``keep()`` names when asked (after every queued action is read): ones still captured."""
        self._queue.put(_Marker("end", (app_id, keep)))

    def hurry(self) -> None:
        """The application is ending: wait for a busy store at most ``EXIT_LOCK_WAIT``, then spool."""
        self._hurried = True
        if self._ready.is_set() and self._writer is not None:  # else the capture thread applies it once built
            self._writer.lock_timeout = min(self._writer.lock_timeout, EXIT_LOCK_WAIT)

    def close(self, timeout: float | None = 30.0) -> bool:
        """Flush, stop the thread and forget this capture. Idempotent."""
        if self._closed:
            return True
        ok = self.flush(timeout)
        self._closed = True
        stop = _Marker("stop")
        self._queue.put(stop)
        self._thread.join(timeout if timeout is not None else None)
        _live.discard(self)
        close_writer = getattr(self._writer, "close", None)  # a Kafka producer: deliver, release its threads
        if close_writer is not None:
            try:
                close_writer()
            except Exception:  # capture never fails the job; what was not delivered is spooled already
                log.warning("lineage-listener: closing the lineage writer failed", exc_info=True)
        return ok

    # -- capture thread ------------------------------------------------------------
    def _loop(self) -> None:
        try:
            self._build()
        except Exception:  # noqa: BLE001 - e.g. a broken install: nothing can be captured
            log.exception("lineage-listener: capture could not start; nothing is captured")
            self._closed = True
            self._reader_built.set()
            self._ready.set()
            _drain(self._queue)
            return
        from lineage_listener.capture.recording import overflow
        from lineage_listener.capture.reading.queryreader import Envelope

        self._next_write = 0.0
        next_spool_try = 0.0
        handlers: dict[type, Callable[[Any], None]] = {
            _Event: lambda event: self._read_queued(event, self._read),
            _StreamEvent: lambda event: self._read_queued(event, self._read_stream),
            Envelope: self._record,
            overflow.Dropped: lambda dropped: self._add_rows(overflow.rows(dropped, self.runs())),
            _Problem: lambda problem: self._add_rows(_problem_rows(problem)),
        }
        while True:
            wait = max(0.0, self._next_write - time.monotonic()) if len(self._pending) else BATCH_INTERVAL
            try:
                item = self._queue.get(timeout=wait)
            except queue.Empty:
                item = None
            if isinstance(item, _Marker):
                if self._on_marker(item):
                    return
                continue
            if item is not None:
                handlers[type(item)](item)
            now = time.monotonic()
            if len(self._pending) and (now >= self._next_write or len(self._pending) >= self.max_batch_rows):
                self._write()
            elif item is None and now >= next_spool_try:
                next_spool_try = now + 2.0  # the store may be free again: write what waits
                self._lane.offer(self._stores.retry)  # a busy lane writes what waits before its batch anyway

    def _on_marker(self, item: "_Marker") -> bool:
        """Answer a control marker (end of runs, flush, stop); True: the thread stops."""
        if item.kind == "end":  # rows only: the next flush or batch writes them
            now = utcnow()
            only, keep = item.payload
            kept = keep() if keep is not None else set()
            for app_id, run in list(self.runs().items()):
                if only in (None, app_id) and app_id not in kept:
                    self._add_rows(self.recorder.end_run(run, now))
            item.ok = True
        elif item.kind == "stop":  # close() flushed just before: write only what came since
            batch, self._pending = self._pending, empty_batch()
            item.ok = self._call(lambda: self._stores.stop(batch))
            self._lane.close()
        else:  # flush: what after_write returns too, so nothing is written after flush() returns
            batch, self._pending = self._pending, empty_batch()
            item.ok = self._call(lambda: self._stores.store(batch, flush=True))
        item.done.set()
        return item.kind == "stop"

    def _read_queued(self, item: Any, read: Callable[[Any], Envelope | None]) -> None:
        """Read a deferred action or micro-batch (it no longer counts as waiting) and record it."""
        with self._waiting_lock:
            self._waiting -= 1
        with stages.timed("read"):
            env = read(item)
        self._record(env)

    def _record(self, env: Envelope | None) -> None:
        """The envelope's rows into the pending batch (an action without lineage: None, nothing),
        as the CTAS/``saveAsTable`` fold records them (:meth:`~lineage_listener.capture.recording.wrappers.LastWrites.record`:
        a wrapper event folded into the write recorded before it, any other as the recorder records it)."""
        if env is None:
            return
        assert self._writes is not None  # built with the recorder, before the first item
        try:
            with stages.timed("record"):
                rows = self._writes.record(env, self.recorder)
        except Exception:  # noqa: BLE001
            log.exception("lineage-listener: could not record an action")
            return
        self._add_rows(rows)

    def _add_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """Rows into the pending batch, redacted, with only the SQL text ``sql_text`` allows; the
        first rows of a batch set when it is written."""
        if not len(self._pending):
            self._next_write = self._pacing.first_rows()
        batch = empty_batch()
        batch.add_all(rows)
        if self._mask is not None:
            batch = self._mask(batch)
        self._pending.extend(batch)

    def _read(self, event: "_Event") -> Envelope | None:
        try:
            # reads and records alternate on this thread: a wrapper that folds is known before its read
            assert self._writes is not None
            env = self.reader.read(event.func_name, event.qe, event.duration_ns, event.error, event.at,
                                   target_only=self._writes.target_only)
        except Exception as exc:  # noqa: BLE001
            log.warning("lineage-listener: could not read a %s action: %s", event.func_name, exc)
            return None
        finally:
            release(event.qe, event.error)  # the envelope holds no JVM object: its plans may go now
        return env

    def _read_stream(self, item: "_StreamEvent") -> Envelope | None:
        try:
            return self.reader.read_stream(item.event, item.query, item.at)
        except Exception as exc:  # noqa: BLE001
            log.warning("lineage-listener: could not read a streaming micro-batch: %s", exc)
            return None

    def _write(self) -> None:
        """Hand the pending batch to the lane (a store write off the capture thread). While the lane
        is busy, or sooner after its last write than the pacing allows, the batch grows (up to
        ``max_batch_rows``; past that, the capture thread waits for the lane)."""
        batch = self._pending
        full = len(batch) >= self.max_batch_rows
        spaced = self._pacing.spaced()
        if not full and spaced > time.monotonic():  # the last write ended since this batch began
            self._next_write = spaced
        elif not full and not self._lane.offer(lambda: self._stores.store(batch)):
            self._next_write = self._pacing.later()
        else:
            if full:
                self._lane.submit(lambda: self._stores.store(batch))
            self._pending = empty_batch()

    def _call(self, fn: Callable[[], bool]) -> bool:
        try:
            return self._lane.call(fn)
        except Exception:  # noqa: BLE001 - StoreWriter should not raise; belt and braces
            log.exception("lineage-listener: store write failed")
            return False


def _drain(items: "queue.SimpleQueue[Any]") -> None:
    """Answer every control marker waiting in ``items`` (as failed) and drop the rest."""
    while True:
        try:
            item = items.get_nowait()
        except queue.Empty:
            return
        if isinstance(item, _Marker):
            item.done.set()


def _problem_rows(problem: _Problem) -> list[tuple[Any, ...]]:
    from lineage_listener.capture.recording.records import error_row, iso  # the recorder's: loaded by the capture thread

    return [error_row(iso(problem.at), None, None, problem.stage, problem.error)]


def _text(error: Any) -> str | None:
    return None if error is None else str(error)[:4000]


_live: "weakref.WeakSet[Capture]" = weakref.WeakSet()


_exit_hook_registered = False


def _register_exit_hook() -> None:
    """Register the exit flush lazily, after Spark's own hooks: atexit runs last-in first-out,
    so ours runs while the JVM (and the plans of deferred reads) is still there."""
    global _exit_hook_registered
    if not _exit_hook_registered:
        _exit_hook_registered = True
        atexit.register(_flush_at_exit)


def _flush_at_exit() -> None:
    """At interpreter exit, write what is queued (bounded) and mark the runs ended."""
    close_all(float(os.environ.get("LINEAGE_LISTENER_EXIT_TIMEOUT", "30")))


def close_all(timeout: float) -> int:
    """End the runs and close every live capture (the process is ending); the number closed."""
    closed = 0
    for cap in list(_live):
        try:
            cap.hurry()
            cap.end_run()
            cap.close(timeout=timeout)
            closed += 1
        except Exception:  # noqa: BLE001
            pass
    return closed
