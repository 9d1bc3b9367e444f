"""An object's thread of its own, and how it is stopped.

The object keeps its state under :attr:`OwnThread.cond`, the one condition its callers and its
thread wait on and notify. The thread is started once, when first needed; its loop ends when it
finds :attr:`OwnThread.stopping` set (read under ``cond``). :meth:`OwnThread.stop` sets it, wakes
the thread and waits for it to end. What the loop still does once stopping (finish its queue, or
leave it) is the object's own.

>>> done = []
>>> def run():
...     with worker.cond:
...         while not worker.stopping:
...             worker.cond.wait()
...     done.append("stopped")
>>> worker = OwnThread("example", run)
>>> worker.start()
>>> worker.stop(timeout=5)
>>> done, worker.thread.is_alive()
(['stopped'], False)
"""
from __future__ import annotations

import threading
from collections.abc import Callable


class OwnThread:
    """A daemon thread named ``name`` running ``target``, with the condition and flag that stop it."""

    def __init__(self, name: str, target: Callable[[], None]) -> None:
        self.name = name
        self.target = target
        self.cond = threading.Condition()
        self.stopping = False
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """:meth:`start_locked`, taking ``cond``."""
        with self.cond:
            self.start_locked()

    def start_locked(self) -> None:
        """Start the thread unless it was started already, and wake it (holding ``cond``)."""
        if self.thread is None:
            self.thread = threading.Thread(target=self.target, name=self.name, daemon=True)
            self.thread.start()
        self.cond.notify_all()

    def stop(self, timeout: float) -> None:
        """Set ``stopping``, wake the thread and wait for it to end, at most ``timeout`` seconds
        (at once when it was never started)."""
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
            thread = self.thread
        if thread is not None:
            thread.join(timeout)
