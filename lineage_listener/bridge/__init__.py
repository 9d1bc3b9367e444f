"""The zero-code path: a JVM listener (``jvm_bridge/``) relaying to a Python worker.

``spark-submit $(lineage-listener spark-conf --store PATH) job.py`` puts the
bridge jar on the driver and names its listener class; the listener starts a
py4j gateway on 127.0.0.1 and launches ``python -m lineage_listener.bridge.worker``,
which connects back and feeds the same capture pipeline ``enable()`` uses.

- :mod:`lineage_listener.jar`: build and cache the bridge jar.
- :mod:`lineage_listener.bridge.submit`: the ``spark-submit`` arguments.
- :mod:`lineage_listener.bridge.worker`: the worker process.
- :mod:`lineage_listener.bridge.heartbeat`: the worker's sign of life while it is busy.
"""
from __future__ import annotations

#: The class named in ``spark.sql.queryExecutionListeners``.
LISTENER_CLASS = "lineage.bridge.LineageBridgeListener"
#: The class named in ``spark.sql.streaming.streamingQueryListeners`` (micro-batches).
STREAM_LISTENER_CLASS = "lineage.bridge.LineageStreamListener"
#: The Java interface the worker implements.
WORKER_INTERFACE = "lineage.bridge.Worker"

__all__ = ["LISTENER_CLASS", "STREAM_LISTENER_CLASS", "WORKER_INTERFACE"]
