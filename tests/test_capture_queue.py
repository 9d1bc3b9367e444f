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
    capture asked anything lives until Python's cycle collector runs, with its plans held in the JVM.
    The capture releases it once read (py4j's finalizer thread tells the JVM within its next round, a
    second at most): the JVM then no longer knows the object, though Python still holds it."""
    from py4j.protocol import Py4JError

    handle = lineage_listener.enable(spark, store=str(tmp_path / "released.duckdb"))
    cap = handle.capture
    read_once, seen = cap._read, []

    def read(event):
        seen.append(event.qe)  # held here: only an explicit release frees it in the JVM
        return read_once(event)
    cap._read = read
    try:
        spark.range(3).selectExpr("id * 2 AS doubled").collect()
        assert inprocess.wait_for_listener_bus(spark, 120)
        assert handle.flush(120)
    finally:
        lineage_listener.disable(spark)
    assert seen, "the action reached the capture thread"

    def known(qe) -> bool:
        try:
            qe.id()
        except Py4JError:
            return False
        return True
    deadline = time.monotonic() + 60  # py4j's finalizer thread polls its queue once a second
    while any(known(qe) for qe in seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(known(qe) for qe in seen), "the JVM still holds a QueryExecution the capture has read"
