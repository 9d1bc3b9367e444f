"""Store writes on a thread of their own, one at a time, in the order they are handed over.

The capture thread hands a batch's write to the lane and goes on reading and walking plans;
a flush hands its write over and waits for it, so it returns only once everything handed over
before it is written too. :meth:`WriteLane.offer` hands a write over only to an idle lane (else
the caller keeps its rows for a later, larger write); :meth:`WriteLane.submit` waits while
``max_waiting`` writes wait. The store's CPU is still spent, on this thread instead of the capture thread
(``docs/performance.md``). What the lane's thread does with a batch is :class:`StoreWrites`'s: write
it after the rows ``after_write`` returned, report the write to the pacing, hand the batch to
``after_write``.

>>> lane = WriteLane("lineage-listener-doc")
>>> done = []
>>> lane.submit(lambda: done.append(1))
>>> lane.call(lambda: lane.offer(lambda: None))  # busy: running this very call
False
>>> lane.call(lambda: done[:1])
[1]
>>> lane.close()
>>> lane.call(lambda: "run inline once closed")
'run inline once closed'
"""
from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from lineage_listener import redact
from lineage_listener.capture import stages

if TYPE_CHECKING:  # pragma: no cover - the store's modules are imported on the capture thread
    from lineage_listener.capture.pacing import Pacing
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.writer import BatchWriter

log = redact.logger(__name__)

T = TypeVar("T")


class _Job:
    __slots__ = ("fn", "waited", "done", "result", "error")

    def __init__(self, fn: Callable[[], Any], waited: bool) -> None:
        self.fn = fn
        self.waited = waited
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class WriteLane:
    """A daemon thread running the functions handed to it, one at a time, first in first out."""

    def __init__(self, name: str = "lineage-listener-writer", max_waiting: int = 2) -> None:
        self._jobs: queue.Queue[_Job | None] = queue.Queue(max_waiting)
        self._closed = False
        self._running = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def native_id(self) -> int | None:
        """The lane thread's id as the operating system knows it (for its CPU clock)."""
        return self._thread.native_id

    def submit(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` after what was handed over before; returns at once unless ``max_waiting``
        functions wait. What it raises is logged. Closed: ``fn`` runs here and now."""
        if self._closed or not self._thread.is_alive():
            self._inline(fn)
            return
        self._jobs.put(_Job(fn, waited=False))

    def offer(self, fn: Callable[[], Any]) -> bool:
        """Hand ``fn`` over if the lane is idle (nothing running, nothing waiting): True if handed
        over (or, closed, run here and now). For one caller: the lane only gets less busy meanwhile."""
        if self._closed or not self._thread.is_alive():
            self._inline(fn)
            return True
        if self._running or not self._jobs.empty():
            return False
        self._jobs.put(_Job(fn, waited=False))
        return True

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` after what was handed over before and return its result (or raise what it raised)."""
        if self._closed or not self._thread.is_alive():
            return fn()
        job = _Job(fn, waited=True)
        self._jobs.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[no-any-return]

    def close(self, timeout: float | None = None) -> None:
        """Run what was handed over, then stop the thread (waiting at most ``timeout``)."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout)

    def _inline(self, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - a write must not stop capture
            log.exception("lineage-listener: store write failed")

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            self._running = True
            try:
                job.result = job.fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, or logged
                job.error = exc
                if not job.waited:
                    log.exception("lineage-listener: store write failed")
            finally:
                self._running = False
                job.done.set()


class StoreWrites:
    """The store writes of one capture, run on its write lane's thread: each batch after the rows
    ``after_write`` returned for the batches before it."""

    def __init__(self, writer: "BatchWriter", pacing: "Pacing",
                 after_write: "Callable[[Batch], Batch | None] | None", hurried: Callable[[], bool]) -> None:
        """``hurried()``: the application is ending (an empty write does not wait for a busy store)."""
        self.writer = writer
        self._pacing = pacing
        self._after_write = after_write
        self._hurried = hurried
        #: Rows ``after_write`` returned, written with the next batch.
        self._extras = empty_batch()

    def retry(self) -> None:
        """Idle: write the rows ``after_write`` returned, and what waits (spooled or held lineage)
        if the store is free now."""
        if len(self._extras):
            self.store(empty_batch())
        elif self.writer.waiting():
            self.writer.write(empty_batch(), wait=0.0)

    def stop(self, batch: "Batch") -> bool:
        """The last write: ``batch`` and what ``after_write`` returned; True if nothing waits."""
        if len(batch) or len(self._extras):
            return self.store(batch, flush=True)
        return not self.writer.waiting()

    def store(self, batch: "Batch", flush: bool = False) -> bool:
        """Write ``batch`` after the rows ``after_write`` returned before; a flush also writes what
        ``after_write`` returns for it (at most three more writes)."""
        ok = self._store_once(self._with_extras(batch))
        for _ in range(3 if flush else 0):
            if not (ok and len(self._extras)):
                break
            ok = self._store_once(self._with_extras(empty_batch()))
        return ok

    def _with_extras(self, batch: "Batch") -> "Batch":
        if not len(self._extras):
            return batch
        extras, self._extras = self._extras, empty_batch()
        extras.extend(batch)
        return extras

    def _store_once(self, batch: "Batch") -> bool:
        if not len(batch) and not self.writer.waiting():
            return True
        if not len(batch) and self._hurried():
            return False  # ending: do not wait for a busy store only to retry the spool
        start, cpu = time.monotonic(), time.thread_time()
        try:
            with stages.timed("store"):
                ok = self.writer.write(batch)
        except Exception:  # noqa: BLE001 - StoreWriter should not raise; belt and braces
            log.exception("lineage-listener: store write failed")
            return False
        finally:
            end = time.monotonic()
            # a writer that mostly waits for the network costs the process only its CPU time
            spent = time.thread_time() - cpu if getattr(self.writer, "waits_on_network", False) else end - start
            self._pacing.wrote(end, spent)
        if ok and self._after_write is not None and len(batch):
            try:
                extra = self._after_write(batch)
            except Exception:  # noqa: BLE001 - a sink's bug must not stop capture
                log.exception("lineage-listener: after-write hook failed")
                extra = None
            if extra is not None and len(extra):
                self._extras.extend(extra)
        return ok


def empty_batch() -> "Batch":
    """An empty batch (the store's row modules are imported on the capture thread, not with this one)."""
    from lineage_listener.store.batch import Batch

    return Batch()
