"""Store writes on a thread of their own, one at a time, in the order they are handed over.

The capture thread hands a batch's write to the lane and goes on reading and walking plans;
a flush hands its write over and waits for it, so it returns only once everything handed over
before it is written too. :meth:`WriteLane.offer` hands a write over only to an idle lane (else
the caller keeps its rows for a later, larger write); :meth:`WriteLane.submit` waits while
``max_waiting`` writes wait. The store's CPU is still spent, on this thread instead of the capture thread
(``docs/performance.md``).

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
from collections.abc import Callable
from typing import Any, TypeVar

from lineage_listener import redact

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
