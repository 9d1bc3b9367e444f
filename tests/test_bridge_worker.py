"""The worker's adapter between py4j calls and the capture pipeline (no JVM needed)."""
from __future__ import annotations

import logging
import threading

import pytest

from lineage_listener.bridge import heartbeat
from lineage_listener.bridge.worker import BridgeWorker, WorkerSettings


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def on_success(self, func_name, qe, duration_ns):
        self.calls.append(("success", func_name, qe, duration_ns))

    def on_failure(self, func_name, qe, exception):
        raise RuntimeError("boom")

    def flush(self, timeout=None):
        self.calls.append(("flush", timeout))
        return True

    def end_run(self, app_id=None):
        self.calls.append(("end", app_id))

    def hurry(self):
        self.calls.append(("hurry",))


def test_settings_come_from_the_environment_only() -> None:
    s = WorkerSettings.from_env({"LINEAGE_BRIDGE_PORT": "4242", "LINEAGE_BRIDGE_TOKEN": "t",
                                 "LINEAGE_STORE": "/x/l.duckdb"})
    assert (s.port, s.token, s.store, s.log_level) == (4242, "t", "/x/l.duckdb", "WARNING")
    with pytest.raises(SystemExit, match="started by the JVM bridge"):
        WorkerSettings.from_env({})


def test_heartbeat_settings_come_from_the_bridge() -> None:
    base = {"LINEAGE_BRIDGE_PORT": "4242", "LINEAGE_BRIDGE_TOKEN": "t"}
    s = WorkerSettings.from_env({**base, "LINEAGE_BRIDGE_WORKER_ID": "2", "LINEAGE_BRIDGE_HEARTBEAT_MS": "600"})
    assert (s.worker_id, s.heartbeat_ms) == ("2", 600)
    for bad in ("", "0", "-5", "soon"):
        assert WorkerSettings.from_env({**base, "LINEAGE_BRIDGE_HEARTBEAT_MS": bad}).heartbeat_ms == 1000


def test_a_failed_beat_does_not_stop_the_heartbeat() -> None:
    sent, stopped = [], threading.Event()

    def send() -> None:
        sent.append(len(sent))
        if len(sent) == 4:
            stopped.set()
        if len(sent) % 2:
            raise ConnectionError("the bridge is busy")

    thread = heartbeat.start(send, 0.001, stopped)
    thread.join()
    assert sent == [0, 1, 2, 3] and thread.daemon


def test_calls_are_relayed_and_errors_never_escape(caplog: pytest.LogCaptureFixture) -> None:
    rec = _Recorder()
    w = BridgeWorker(rec)
    w.onSuccess("save", "qe", 12)
    assert w.flush(2500) is True
    w.endRun("app-1")
    with caplog.at_level(logging.ERROR):
        w.onFailure("save", "qe", "exc")
        w.onFailure("save", "qe", "exc")
    assert rec.calls == [("success", "save", "qe", 12), ("flush", 2.5), ("hurry",), ("end", "app-1")]
    assert len([r for r in caplog.records if "on_failure" in r.getMessage()]) == 1  # logged once
    assert not w.stopped.is_set()
    w.shutdown()
    assert w.stopped.is_set()
