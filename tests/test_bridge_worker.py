"""The worker's adapter between py4j calls and the capture pipeline (no JVM needed)."""
from __future__ import annotations

import logging

import pytest

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
