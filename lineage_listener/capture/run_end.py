"""``runs.ended_at`` for runs whose capture was disabled while the application still ran.

After ``disable(spark)`` no capture is left to see ``spark.stop()``: the runs it saw are
remembered here with the capture's writer (a store file, or a lineage server) and marked
ended when the Python process exits (a driver's PySpark application ends with it); a
store file is opened only then, so it stays free in between. Enabling again later is
harmless: the end written last wins.
"""
from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from lineage_listener.capture.records import Recorder
from lineage_listener.store.batch import Batch
from lineage_listener.store.remote import RemoteWriter
from lineage_listener.store.writer import StoreWriter

log = logging.getLogger(__name__)

_lock = threading.Lock()
Writer = StoreWriter | RemoteWriter
_pending: dict[str, tuple[Writer, dict[str, Mapping[str, Any]]]] = {}  # where -> (writer, app id -> run)
_registered = False


def later(writer: Writer, runs: Mapping[str, Mapping[str, Any]]) -> None:
    """Mark ``runs`` (app id -> run facts) ended through ``writer`` when the process exits."""
    global _registered
    if not runs:
        return
    with _lock:
        _pending.setdefault(str(writer.path), (writer, {}))[1].update(runs)
        if not _registered:
            _registered = True
            atexit.register(write_pending)


def write_pending(now: datetime | None = None) -> None:
    """Write the remembered ends (at exit); errors are logged, never raised."""
    now = now or datetime.now(timezone.utc).replace(tzinfo=None)
    with _lock:
        pending = list(_pending.items())
        _pending.clear()
    recorder = Recorder()
    for where, (writer, runs) in pending:
        batch = Batch()
        for run in runs.values():
            batch.extend(recorder.end_run(dict(run), now))
        try:
            writer.write(batch)
        except Exception as exc:  # noqa: BLE001 - exit must not fail over a run's end time
            log.warning("lineage-listener: could not record the end of runs in %s: %s", where, exc)
