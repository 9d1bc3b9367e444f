"""A burst of actions faster than capture: the queue stays bounded, every action is accounted for."""
from __future__ import annotations

import threading
import time

import duckdb

import lineage_listener
from lineage_listener.capture import inprocess


def test_burst_with_slow_capture_is_bounded_and_complete(spark, tmp_path):
    store = tmp_path / "burst.duckdb"
    handle = lineage_listener.enable(spark, store=str(store), max_queue=20)
    cap = handle.capture
    slow_read, peak = cap._read, [0]

    gate = threading.Event()

    def read(event):  # a stalled capture thread: nothing is read until the burst is over
        gate.wait(120)
        return slow_read(event)
    cap._read = read

    def watch(stop):
        while not stop.is_set():
            peak[0] = max(peak[0], cap._waiting)
            time.sleep(0.001)
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(stop,), daemon=True)
    watcher.start()
    df = spark.range(1)
    n = 300
    try:
        for _ in range(n):
            df.collect()
        assert inprocess.wait_for_listener_bus(spark, 120)
        gate.set()
        assert inprocess.wait_for_listener_bus(spark, 120)
        assert handle.flush(120)
    finally:
        stop.set()
        watcher.join()
        lineage_listener.disable(spark)
    assert peak[0] <= 20
    with duckdb.connect(str(store), read_only=True) as con:
        status = dict(con.execute("SELECT status, count(*) FROM queries WHERE action <> 'command' "
                                  "GROUP BY status").fetchall())
        reasons = {r[0] for r in con.execute("SELECT error FROM queries WHERE status = 'lineage_error'").fetchall()}
    assert status.get("succeeded", 0) + status.get("lineage_error", 0) == n, status
    assert status.get("lineage_error", 0) > 0, status  # the burst did overflow the bound
    assert reasons == {"capture queue full (20 actions waiting): lineage not read (raise enable(max_queue=...))"}


def test_a_read_action_gives_its_query_execution_back_to_the_jvm(spark, tmp_path):
    """py4j keeps a JVM object for as long as its Python object lives, and a ``QueryExecution`` the
    capture asked anything lives until Python's cycle collector runs, with its plans held in the JVM;
    py4j's finalizer thread would tell the JVM only at its next round, up to a second later. The
    capture releases it once read, on its own thread: by the time its read returns, the JVM no
    longer knows the object, though Python still holds it."""
    from py4j.protocol import Py4JError

    def known(qe) -> bool:
        try:
            qe.id()
        except Py4JError:
            return False
        return True
    handle = lineage_listener.enable(spark, store=str(tmp_path / "released.duckdb"))
    cap = handle.capture
    read_once, after_read = cap._read, []

    def read(event):
        envelope = read_once(event)
        after_read.append(known(event.qe))  # event.qe is still held here: only a release frees it
        return envelope
    cap._read = read
    try:
        spark.range(3).selectExpr("id * 2 AS doubled").collect()
        assert inprocess.wait_for_listener_bus(spark, 120)
        assert handle.flush(120)
        assert after_read, "the action reached the capture thread"
        assert not any(after_read), "the JVM still held a QueryExecution after the capture read it"
    finally:
        lineage_listener.disable(spark)
