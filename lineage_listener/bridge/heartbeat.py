"""The worker's heartbeat: a sign of life the bridge receives even while the worker is busy.

A daemon thread calls ``send`` at once and then every ``interval`` seconds until
``stopped`` is set. In the worker, ``send`` is a py4j call to the bridge: each
thread's calls go over their own connection, so a beat never waits behind the
event being captured. While the job runs, the bridge stops a worker only when
a call to it is outstanding and neither beats nor CPU time have shown life for
``spark.lineage.stallTimeoutMs`` (see ``docs/reference/conf.md``).

>>> import threading
>>> beats, stopped = [], threading.Event()
>>> def send():
...     beats.append(len(beats))
...     if len(beats) == 3:
...         stopped.set()
>>> start(send, 0.001, stopped).join()
>>> beats
[0, 1, 2]
"""
from __future__ import annotations

import logging
import threading
from typing import Callable

log = logging.getLogger("lineage_listener.bridge.heartbeat")


def start(send: Callable[[], object], interval: float, stopped: threading.Event) -> threading.Thread:
    """Run :func:`beat` on a daemon thread named ``heartbeat``; returns the thread."""
    thread = threading.Thread(target=beat, args=(send, interval, stopped), name="heartbeat", daemon=True)
    thread.start()
    return thread


def beat(send: Callable[[], object], interval: float, stopped: threading.Event) -> None:
    """Call ``send`` now and every ``interval`` seconds until ``stopped``; a failed beat is skipped.

    The bridge tells a worker that cannot reach it apart by other means (the
    worker's exit, its closed stdin), so failures are only logged at DEBUG.
    """
    while not stopped.is_set():
        try:
            send()
        except Exception:  # the bridge is going away or busy: the next beat tries again
            log.debug("heartbeat to the bridge failed", exc_info=True)
        stopped.wait(interval)
