"""``enable()`` captures only what starts after it, even when Spark's listener bus is behind.

Spark hands each action's end event to the query-execution listeners registered when its listener
bus delivers the event, not when the action posted it. Here the bus is held back by another
listener (one that blocks until released, as a slow listener of the user's would) while actions
end, so their events wait in the queue when ``enable()`` is called: every time, not by chance.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import duckdb

import lineage_listener
from lineage_listener.capture import inprocess


class Gate:
    """A ``QueryExecutionListener`` that holds Spark's listener bus on its first event until opened."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def onSuccess(self, funcName: str, qe: Any, durationNs: int) -> None:  # noqa: N802,N803 - Java names
        self.entered.set()
        self.opened.wait(120)  # bounded: a broken test must not hang Spark's bus for ever

    def onFailure(self, funcName: str, qe: Any, exception: Any) -> None:  # noqa: N802,N803
        pass

    class Java:
        implements = ["org.apache.spark.sql.util.QueryExecutionListener"]


def _open_when_enabled(gate: Gate, key: str, hold: float) -> None:
    """Open the gate once capture is registered (then the held events reach the capture), or after
    ``hold`` seconds: enable() is then waiting for the bus, far within its bound (10 s)."""
    deadline = time.monotonic() + hold
    while key not in inprocess._handles and time.monotonic() < deadline:
        time.sleep(0.01)
    gate.opened.set()


def test_actions_that_ended_before_enable_are_not_captured(spark: Any, tmp_path: Path) -> None:
    inprocess._ensure_callbacks(spark)
    key = inprocess._session_key(spark)
    store = tmp_path / "l.duckdb"
    for attempt in range(3):
        gate = Gate()
        spark._jsparkSession.listenerManager().register(gate)
        try:
            spark.range(1).collect()  # its end event holds the bus in the gate
            assert gate.entered.wait(60)
            for i in range(5):  # these end while the bus is held: their events wait in its queue
                spark.range(3).selectExpr(f"id AS c{i}").write.parquet(str(tmp_path / f"before{attempt}_{i}"))
            opener = threading.Thread(target=_open_when_enabled, args=(gate, key, 1.0))
            opener.start()
            handle = lineage_listener.enable(spark, store=str(store))
            opener.join()
            spark.range(2).selectExpr("id AS after").write.parquet(str(tmp_path / f"after{attempt}"))
            assert handle.flush(60)
        finally:
            gate.opened.set()
            lineage_listener.disable(spark)
            spark._jsparkSession.listenerManager().unregister(gate)
        with duckdb.connect(str(store), read_only=True) as con:
            targets = [r[0] for r in con.execute("SELECT DISTINCT target_column FROM column_lineage").fetchall()]
        assert targets == ["after"], (attempt, targets)
