"""Store writes run on the write lane's thread: a slow store does not stop the capture thread from
reading and walking the actions that follow, and a flush still waits for every write before it."""
from __future__ import annotations

import sys
import threading
import traceback

import duckdb
from conftest import wait_for

import lineage_listener
from lineage_listener.capture import inprocess


def test_a_slow_store_write_does_not_hold_the_capture_thread(spark, tmp_path):
    store = tmp_path / "lane.duckdb"
    handle = lineage_listener.enable(spark, store=str(store))
    cap = handle.capture
    writer = cap.writer
    write, gate, started, on = writer.write, threading.Event(), threading.Event(), []

    def slow_write(batch, wait=None):  # the store busy for as long as the test holds the gate
        on.append(threading.current_thread().name)
        if len(batch):
            started.set()
            gate.wait(120)
        return write(batch, wait)
    writer.write = slow_write
    try:
        spark.range(3).selectExpr("id AS a").collect()
        assert started.wait(60), "the first batch was never handed to the store"
        for i in range(3):
            spark.range(3).selectExpr(f"id + {i} AS b{i}").collect()
        assert inprocess.wait_for_listener_bus(spark, 120)
        # The first write still waits for the store; the capture thread has read what came after it.
        assert wait_for(lambda: cap._waiting == 0, 60), \
            "".join(traceback.format_stack(sys._current_frames()[cap._thread.ident]))  # where capture waits
        assert not gate.is_set()
    finally:
        gate.set()
        assert handle.flush(120)
        lineage_listener.disable(spark)
    assert set(on) == {"lineage-listener-writer"}
    with duckdb.connect(str(store), read_only=True) as con:
        columns = sorted(r[0] for r in con.execute("SELECT DISTINCT target_column FROM column_lineage").fetchall())
        captured = con.execute("SELECT count(DISTINCT query_id) FROM column_lineage").fetchone()[0]
        rows, distinct = con.execute("SELECT count(*), count(DISTINCT (query_id, target_column, source_column, "
                                     "transform)) FROM column_lineage").fetchone()
    assert columns == ["a", "b0", "b1", "b2"]
    assert captured == 4 and rows == distinct  # each action, each edge once


def test_the_lane_runs_in_order_and_a_call_waits_for_what_came_before():
    from lineage_listener.capture.writelane import WriteLane

    lane = WriteLane("lineage-listener-test-lane", max_waiting=1)
    done: list[int] = []
    gate = threading.Event()
    lane.submit(lambda: (gate.wait(60), done.append(0)))
    lane.submit(lambda: done.append(1))
    gate.set()
    assert lane.call(lambda: list(done)) == [0, 1]
    lane.submit(lambda: 1 / 0)  # logged, and the lane goes on
    assert lane.call(lambda: "still running") == "still running"
    lane.close()
    assert lane.call(lambda: threading.current_thread().name) == threading.current_thread().name
