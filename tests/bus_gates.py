"""Listeners that hold Spark's listener bus still, so tests order its events instead of racing them.

Spark delivers events on one thread per bus queue: a listener that blocks holds every later event
of its queue (query ends on the shared queue, stream progress on the streams queue) until it is
opened. Each gate blocks on the first event it sees, as a slow listener of the user's would.
"""
from __future__ import annotations

import threading
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

#: A gate never holds the bus longer than this (a broken test must not hang Spark for ever).
MAX_HOLD = 120


class QueryGate:
    """A ``QueryExecutionListener``: holds the shared queue on its first event until :meth:`open`;
    then notes the actions it sees (``saw(name)``: one of that name was delivered)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()
        self._seen: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._proxy: Any = None

    def register(self, spark: Any) -> "QueryGate":
        from pyspark.java_gateway import ensure_callback_server_started

        from lineage_listener.capture.jvm import jvm_proxy

        ensure_callback_server_started(spark.sparkContext._gateway)
        self._proxy = jvm_proxy(spark, self)  # kept: only the object registered can be unregistered
        spark._jsparkSession.listenerManager().register(self._proxy)
        return self

    def unregister(self, spark: Any) -> None:
        self.opened.set()
        if self._proxy is not None:
            spark._jsparkSession.listenerManager().unregister(self._proxy)
            self._proxy = None

    def open(self) -> None:
        self.opened.set()

    def saw(self, func_name: str) -> threading.Event:
        with self._lock:
            return self._seen.setdefault(func_name, threading.Event())

    def onSuccess(self, funcName: str, qe: Any, durationNs: int) -> None:  # noqa: N802,N803 - Java names
        self.entered.set()
        self.opened.wait(MAX_HOLD)
        self.saw(str(funcName)).set()

    def onFailure(self, funcName: str, qe: Any, exception: Any) -> None:  # noqa: N802,N803
        self.onSuccess(funcName, qe, 0)

    def equals(self, other: Any) -> bool:  # Spark asks the listener it unregisters
        return other is self

    def hashCode(self) -> int:  # noqa: N802
        return id(self) & 0x7FFFFFFF

    class Java:
        implements = ["org.apache.spark.sql.util.QueryExecutionListener"]


class StreamGate(StreamingQueryListener):
    """A ``StreamingQueryListener``: holds the streams queue on its first progress event until opened."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - PySpark's names
        pass

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        self.entered.set()
        self.opened.wait(MAX_HOLD)

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        pass
