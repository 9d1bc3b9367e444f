"""The Python ``QueryExecutionListener`` Spark calls through py4j.

It runs on Spark's listener-bus thread: it reads an :class:`Envelope` and hands
it to the capture thread, and never lets an exception escape into Spark.

It may be registered before its capture exists (``enable()`` starts the capture thread
after its last JVM call): callbacks until :meth:`PlanListener.attach` wait in order.

>>> listener = PlanListener()
>>> listener.onSuccess("collect", "qe", 1)                  # no capture yet: kept
>>> class Printer:
...     def on_success(self, name, qe, ns): print(name, qe, ns)
>>> listener.attach(Printer())
collect qe 1
>>> listener.onSuccess("count", "qe2", 2)
count qe2 2
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from lineage_listener import redact

if TYPE_CHECKING:  # pragma: no cover
    from lineage_listener.capture.pipeline import Capture

log = redact.logger(__name__)


class PlanListener:
    """Implements ``org.apache.spark.sql.util.QueryExecutionListener`` for py4j."""

    def __init__(self, capture: "Capture | None" = None) -> None:
        self.capture = capture
        self._early: list[Callable[[Any], None]] = []  # callbacks before attach(), in order
        self._lock = threading.Lock()

    def attach(self, capture: "Capture") -> None:
        """Hand callbacks to ``capture`` from now on, those that came before first."""
        with self._lock:  # a callback meanwhile waits: the order is kept
            for call in self._early:
                call(capture)
            self._early.clear()
            self.capture = capture

    def _forward(self, call: Callable[[Any], None]) -> None:
        capture = self.capture
        if capture is None:
            with self._lock:
                capture = self.capture
                if capture is None:
                    self._early.append(call)
                    return
        call(capture)

    def onSuccess(self, funcName: str, qe: Any, durationNs: int) -> None:  # noqa: N802,N803 - Java names
        self._forward(lambda capture: capture.on_success(funcName, qe, durationNs))

    def onFailure(self, funcName: str, qe: Any, exception: Any) -> None:  # noqa: N802,N803
        self._forward(lambda capture: capture.on_failure(funcName, qe, exception))

    def toString(self) -> str:  # noqa: N802 - py4j/Java may ask
        return f"lineage_listener.PlanListener({self.capture.store if self.capture else 'starting'})"

    # Spark finds a listener to unregister by asking it ``equals`` of each one registered before it:
    # without an answer, disable() could not remove it from behind another (a user's) listener.
    def equals(self, other: Any) -> bool:
        return other is self

    def hashCode(self) -> int:  # noqa: N802
        return id(self) & 0x7FFFFFFF

    class Java:
        implements = ["org.apache.spark.sql.util.QueryExecutionListener"]
