"""``enable()`` captures only what starts after it, even when Spark's listener bus is behind.

Spark hands each action's end event to the query-execution listeners registered when its listener
bus delivers the event, not when the action posted it. Here the bus is held back by another
listener (:class:`~tests.bus_gates.QueryGate`) while actions end, so their events wait in the
queue when ``enable()`` is called: every time, not by chance.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import duckdb

import lineage_listener
from lineage_listener.capture import inprocess
from tests.bus_gates import QueryGate


def _open_when_enabled(gate: QueryGate, key: str, hold: float) -> None:
    """Open the gate once capture is registered (then the held events reach the capture), or after
    ``hold`` seconds: enable() is then waiting for the bus, far within its bound (10 s)."""
    deadline = time.monotonic() + hold
    while key not in inprocess._handles and time.monotonic() < deadline:
        time.sleep(0.01)
    gate.open()


def test_actions_that_ended_before_enable_are_not_captured(spark: Any, tmp_path: Path) -> None:
    key = inprocess._session_key(spark)
    store = tmp_path / "l.duckdb"
    for attempt in range(3):
        gate = QueryGate().register(spark)
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
            gate.unregister(spark)
            lineage_listener.disable(spark)
        with duckdb.connect(str(store), read_only=True) as con:
            targets = [r[0] for r in con.execute("SELECT DISTINCT target_column FROM column_lineage").fetchall()]
        assert targets == ["after"], (attempt, targets)
