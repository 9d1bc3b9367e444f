"""Structured Streaming: real streams (files arriving, rate source), one capture per module.

Streams are stepped with ``processAllAvailable()`` / ``availableNow`` triggers, never sleeps.
"""
from __future__ import annotations

import importlib.util
import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

import lineage_listener


@pytest.fixture(scope="module")
def cap(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    store = tmp_path_factory.mktemp("streaming") / "lineage.duckdb"
    handle = lineage_listener.enable(spark, store=str(store))
    yield handle
    lineage_listener.disable(spark)


def rows(store: str, sql: str, *params: Any) -> list[tuple]:
    with duckdb.connect(store, read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def edges(store: str, target: str | None, where: str = "") -> set[tuple]:
    cond = "target_dataset IS NULL" if target is None else "target_dataset = ?"
    return set(rows(store, "SELECT target_column, source_dataset, source_column, transform, expression "
                           f"FROM column_lineage WHERE {cond} {where}", *([] if target is None else [target])))


def drop(folder: Path, name: str, records: list[dict]) -> None:
    """A new file arrives (written aside, then renamed in: the source never sees half a file)."""
    tmp = folder.parent / (name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in records))
    tmp.rename(folder / name)


SCHEMA = "id INT, name STRING, amount INT, ts TIMESTAMP"


def test_file_stream_to_parquet_stores_edges_once(spark: Any, cap: Any, tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    drop(src, "0.json", [{"id": 1, "name": "ann", "amount": 5, "ts": "2026-01-01 10:00:00"}])
    stream = (spark.readStream.schema(SCHEMA).json(str(src))
              .selectExpr("id", "upper(name) AS uname", "amount * 2 AS a2").where("amount > 1"))
    q = (stream.writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        q.processAllAvailable()
        for i in range(1, 6):  # new files arrive: one micro-batch each
            drop(src, f"{i}.json", [{"id": i + 1, "name": "bob", "amount": i, "ts": "2026-01-01 10:00:00"}])
            q.processAllAvailable()
    finally:
        q.stop()
    assert cap.flush(60)
    store, s_in, s_out = cap.store, f"file:{src}", f"file:{out}"
    assert edges(store, s_out) == {
        ("id", s_in, "id", "identity", "id"),
        ("uname", s_in, "name", "derived", "upper(name)"),
        ("a2", s_in, "amount", "derived", "amount * 2"),
        (None, s_in, "amount", "filter", "amount > 1"),
    }
    # 6 micro-batches of one unchanged stream: one queries row, edges once, counters.
    assert rows(store, "SELECT count(*) FROM column_lineage WHERE target_dataset = ?", s_out) == [(4,)]
    [(query_id, action, target)] = rows(store, "SELECT query_id, action, target_dataset FROM queries "
                                               "WHERE target_dataset = ?", s_out)
    assert action == "stream" and query_id.startswith(f"stream:{q.id}:")
    assert rows(store, "SELECT stream_id, stream_run_id, first_batch_id, last_batch_id, batch_count "
                       "FROM streams WHERE query_id = ?", query_id) == [(q.id, q.runId, 0, 5, 6)]
    # A batch read of the same folder names it as the stream did: multi-hop joins both jobs.
    spark.read.schema(SCHEMA).json(str(src)).select("name").collect()
    spark.read.parquet(str(out)).selectExpr("uname AS who").write.mode("overwrite").parquet(str(tmp_path / "hop"))
    assert cap.flush(60)
    assert ("name", s_in, "name", "identity", "name") in edges(store, None, f"AND source_dataset = '{s_in}'")
    up = lineage_listener.open_store(store).upstream(f"file:{tmp_path / 'hop'}", "who")
    assert (s_in, "name") in up.nodes


def test_sink_kinds_memory_table_console(spark: Any, cap: Any, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    drop(src, "0.json", [{"id": 1, "name": "ann", "amount": 5, "ts": "2026-01-01 10:00:00"}])
    stream = spark.readStream.schema(SCHEMA).json(str(src))
    s_in = f"file:{src}"
    mem = stream.selectExpr("id", "lower(name) AS n").writeStream.format("memory").queryName("people_mem").start()
    tbl = (stream.select("id", "amount").writeStream.option("checkpointLocation", str(tmp_path / "ck_t"))
           .toTable("stream_sink_t"))
    con = stream.select("name").writeStream.format("console").start()
    rate = (spark.readStream.format("rate").option("rowsPerSecond", 10).load()
            .selectExpr("value * 10 AS v").writeStream.format("memory").queryName("rate_mem")
            .trigger(once=True).start())
    try:
        for q in (mem, tbl, con):
            q.processAllAvailable()
        rate.awaitTermination()
    finally:
        for q in (mem, tbl, con, rate):
            q.stop()
    assert cap.flush(60)
    store = cap.store
    assert edges(store, "memory:people_mem") == {("id", s_in, "id", "identity", "id"),
                                                 ("n", s_in, "name", "derived", "lower(name)")}
    assert edges(store, "spark_catalog.default.stream_sink_t") == {("id", s_in, "id", "identity", "id"),
                                                                   ("amount", s_in, "amount", "identity", "amount")}
    [(rate_src,)] = rows(store, "SELECT DISTINCT source_dataset FROM column_lineage WHERE target_dataset = "
                                "'memory:rate_mem'")
    assert rate_src.startswith("local:") and "/rate/" in rate_src
    assert edges(store, "memory:rate_mem") == {("v", rate_src, "value", "derived", "value * 10")}
    # console: an access record (target NULL) under the console stream's own queries row
    [(console_qid,)] = rows(store, "SELECT query_id FROM streams WHERE stream_id = ?", con.id)
    assert set(rows(store, "SELECT target_dataset, target_column, source_dataset, source_column FROM "
                           "column_lineage WHERE query_id = ?", console_qid)) == {(None, "name", s_in, "name")}
    assert rows(store, "SELECT kind FROM datasets WHERE dataset = 'memory:people_mem'") == [("memory",)]
    # V2 sinks run each micro-batch as a collect: it is not a second queries row
    assert rows(store, "SELECT count(*) FROM queries WHERE command LIKE 'WriteToMicroBatch%' "
                       "AND action <> 'stream'") == [(0,)]


def test_foreach_batch_writes_have_the_streams_sources(spark: Any, cap: Any, tmp_path: Path) -> None:
    src, fb = tmp_path / "in", tmp_path / "fb"
    src.mkdir()
    drop(src, "0.json", [{"id": 1, "name": "ann", "amount": 5, "ts": "2026-01-01 10:00:00"}])

    def each(df: Any, batch_id: int) -> None:
        df.selectExpr("id", "concat(n, '!') AS shout").write.mode("append").parquet(str(fb))

    q = (spark.readStream.schema(SCHEMA).json(str(src)).selectExpr("id", "upper(name) AS n")
         .writeStream.foreachBatch(each).option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        q.processAllAvailable()
        drop(src, "1.json", [{"id": 2, "name": "bob", "amount": 1, "ts": "2026-01-01 10:00:00"}])
        q.processAllAvailable()
    finally:
        q.stop()
    assert cap.flush(60)
    s_in = f"file:{src}"
    assert edges(cap.store, f"file:{fb}") == {("id", s_in, "id", "identity", "id"),
                                              ("shout", s_in, "name", "derived", "concat(upper(name), '!')")}
    assert rows(cap.store, "SELECT count(*) FROM column_lineage WHERE source_dataset LIKE 'local:%LogicalRDD%'") \
        == [(0,)]
    [(count,)] = rows(cap.store, "SELECT batch_count FROM streams WHERE stream_id = ?", q.id)
    assert count == 2


def test_restart_from_checkpoint_and_code_change(spark: Any, cap: Any, tmp_path: Path) -> None:
    src, out, ck = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    src.mkdir()

    def run(select: list[str], files: list[str]) -> Any:
        q = (spark.readStream.schema(SCHEMA).json(str(src)).selectExpr(*select).writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(ck)).start())
        try:
            for name in files:
                drop(src, name, [{"id": 1, "name": "ann", "amount": 5, "ts": "2026-01-01 10:00:00"}])
                q.processAllAvailable()
        finally:
            q.stop()
        assert cap.flush(60)
        return q

    first = run(["id", "name"], ["0.json", "1.json"])
    again = run(["id", "name"], ["2.json"])  # same code, same checkpoint: the same stream goes on
    assert again.id == first.id and again.runId != first.runId
    store, s_out = cap.store, f"file:{out}"
    assert rows(store, "SELECT first_batch_id, last_batch_id, batch_count, stream_run_id FROM streams "
                       "WHERE stream_id = ?", first.id) == [(0, 2, 3, again.runId)]
    assert rows(store, "SELECT count(*) FROM column_lineage WHERE target_dataset = ?", s_out) == [(2,)]
    run(["id", "lower(name) AS name"], ["3.json"])  # new code on the same checkpoint: new lineage
    got = rows(store, "SELECT s.first_batch_id, s.last_batch_id, s.batch_count, c.target_column, c.transform "
                      "FROM streams s JOIN column_lineage c USING (query_id) WHERE s.stream_id = ? "
                      "ORDER BY 1, 4", first.id)
    assert got == [(0, 2, 3, "id", "identity"), (0, 2, 3, "name", "identity"),
                   (3, 3, 1, "id", "identity"), (3, 3, 1, "name", "derived")]
    # One job per stream in the Python API (and the server's /api/streams), whatever its plans.
    [job] = [s for s in lineage_listener.open_store(store).streams() if s["stream_id"] == first.id]
    assert (job["batch_count"], job["first_batch_id"], job["last_batch_id"], job["targets"], len(job["plans"])) \
        == (4, 0, 3, [s_out], 2)
    if importlib.util.find_spec("openlineage") is not None:
        from lineage_listener.openlineage.events import events
        from lineage_listener.store.connection import open_readonly

        con = open_readonly(Path(store))
        try:
            types = {e.job.facets["jobType"].processingType for qid, e in events(con) if qid in job["plans"]}
        finally:
            con.close()
        assert types == {"STREAMING"}
    if importlib.util.find_spec("fastapi") is not None:
        from tests.server_helpers import Server

        served = tmp_path / "served.duckdb"
        served.write_bytes(Path(store).read_bytes())
        srv = Server(served).start()
        try:
            with urllib.request.urlopen(f"{srv.url}/api/streams", timeout=30) as resp:
                api = [s for s in json.load(resp) if s["stream_id"] == first.id]
        finally:
            srv.stop()
        assert [(s["batch_count"], s["last_batch_id"], s["plans"]) for s in api] == [(4, 3, job["plans"])]
        assert api[0]["last_batch_at"] == job["last_batch_at"].isoformat()


def test_stateful_operators(spark: Any, cap: Any, tmp_path: Path) -> None:
    src, dims = tmp_path / "in", tmp_path / "dims"
    src.mkdir()
    drop(src, "0.json", [{"id": 1, "name": "ann", "amount": 5, "ts": "2026-01-01 10:00:00"},
                         {"id": 2, "name": "bob", "amount": 7, "ts": "2026-01-01 10:04:00"}])
    spark.createDataFrame([(1, "gold"), (2, "blue")], "id INT, tier STRING").write.parquet(str(dims))
    s_in, s_dims = f"file:{src}", f"file:{dims}"
    events = spark.readStream.schema(SCHEMA).json(str(src)).withWatermark("ts", "1 hour")
    agg = (events.groupBy(__import__("pyspark.sql.functions", fromlist=["window"]).window("ts", "10 minutes"), "name")
           .agg({"amount": "sum"}).withColumnRenamed("sum(amount)", "total")
           .selectExpr("window.start AS start", "name", "total"))
    dedup = events.dropDuplicates(["id", "ts"]).select("id", "name")
    static = spark.read.parquet(str(dims))
    joined = events.join(static, "id").select("id", "tier")
    other = spark.readStream.schema(SCHEMA).json(str(src)).selectExpr("id AS oid", "amount AS other_amount")
    streamjoin = events.join(other, events.id == other.oid).select("name", "other_amount")
    plans = [("w_agg", agg, "complete"), ("w_dedup", dedup, "append"), ("w_static", joined, "append"),
             ("w_sjoin", streamjoin, "append")]
    with_pandas = all(importlib.util.find_spec(m) for m in ("pandas", "pyarrow"))
    if with_pandas:  # applyInPandasWithState: a stateful operator running Python per group
        from pyspark.sql.streaming.state import GroupStateTimeout

        def running_total(key: Any, frames: Any, state: Any) -> Any:
            import pandas as pd

            total = (state.get[0] if state.exists else 0) + sum(int(f["amount"].sum()) for f in frames)
            state.update((total,))
            yield pd.DataFrame({"name": [key[0]], "total": [total]})

        plans.append(("w_state", events.groupBy("name").applyInPandasWithState(
            running_total, "name STRING, total LONG", "total LONG", "update", GroupStateTimeout.NoTimeout),
            "update"))
    queries = [df.writeStream.format("memory").queryName(name).outputMode(mode).start() for name, df, mode in plans]
    try:
        for q in queries:
            q.processAllAvailable()
    finally:
        for q in queries:
            q.stop()
    assert cap.flush(60)
    store = cap.store
    agg_edges = edges(store, "memory:w_agg")
    assert {(t, c, tr) for t, _, c, tr, _ in agg_edges} >= {
        ("start", "ts", "derived"), ("name", "name", "identity"), ("total", "amount", "aggregate"),
        (None, "ts", "group_by"), (None, "name", "group_by")}
    assert {(t, c, tr) for t, _, c, tr, _ in edges(store, "memory:w_dedup")} == {
        ("id", "id", "identity"), ("name", "name", "identity"), (None, "id", "group_by"), (None, "ts", "group_by")}
    assert {(t, s, c, tr) for t, s, c, tr, _ in edges(store, "memory:w_static")} == {
        ("id", s_in, "id", "identity"), ("tier", s_dims, "tier", "identity"),
        (None, s_in, "id", "join"), (None, s_dims, "id", "join")}
    assert {(t, c, tr) for t, _, c, tr, _ in edges(store, "memory:w_sjoin")} == {
        ("name", "name", "identity"), ("other_amount", "amount", "rename"),
        (None, "id", "join")}
    if with_pandas:
        assert {(t, s, c, tr) for t, s, c, tr, _ in edges(store, "memory:w_state")} == {
            (out, s_in, c, "derived") for out in ("name", "total") for c in ("id", "name", "amount", "ts")} | {
            (None, s_in, "name", "group_by")}


def test_foreach_batch_writes_read_after_the_stream_stopped(spark: Any, cap: Any, tmp_path: Path) -> None:
    """foreachBatch with ``persist()``: its writes are read by the capture after the stream stopped and
    before the stream's progress (both held on Spark's bus by gates), and still have its sources."""
    from tests.bus_gates import QueryGate, StreamGate

    src, fb, other = tmp_path / "in", tmp_path / "fb", tmp_path / "other"
    for folder in (src, other):
        folder.mkdir()
        drop(folder, "0.json", [{"id": 1, "name": "ann", "amount": 5, "ts": "2026-01-01 10:00:00"}])

    def each(df: Any, batch_id: int) -> None:
        df.persist()
        df.selectExpr("id", "concat(n, '!') AS shout").write.mode("append").parquet(str(fb))
        df.select("id").write.mode("append").parquet(str(fb) + "_ids")
        df.unpersist()

    queries, streams = QueryGate().register(spark), StreamGate()
    spark.streams.addListener(streams)
    try:
        spark.range(1).collect()  # the shared queue (query ends) is held from here
        assert queries.entered.wait(60)
        held = (spark.readStream.schema(SCHEMA).json(str(other)).writeStream.format("memory")
                .queryName("held_progress").option("checkpointLocation", str(tmp_path / "ck0")).start())
        held.processAllAvailable()  # its progress holds the streams queue (stream progress) from here
        assert streams.entered.wait(60)
        held.stop()
        q = (spark.readStream.schema(SCHEMA).json(str(src)).selectExpr("id", "upper(name) AS n")
             .writeStream.foreachBatch(each).option("checkpointLocation", str(tmp_path / "ck")).start())
        q.processAllAvailable()
        q.stop()
        queries.open()
        spark.range(1).count()  # delivered after the writes: once the gate saw it, so has the capture
        assert queries.saw("count").wait(60)
        assert cap.capture.flush(60)  # the writes are read now, the stream's progress still held
    finally:
        queries.unregister(spark)
        streams.opened.set()
        spark.streams.removeListener(streams)
    assert cap.flush(60)
    s_in = f"file:{src}"
    assert edges(cap.store, f"file:{fb}") == {("id", s_in, "id", "identity", "id"),
                                              ("shout", s_in, "name", "derived", "concat(upper(name), '!')")}
    assert edges(cap.store, f"file:{fb}_ids") == {("id", s_in, "id", "identity", "id")}


def _stream_captured_once(store: str, q: Any, src: Path, out: Path) -> None:
    """One queries row for the stream, its edges once, every micro-batch it ran counted."""
    s_in, s_out = f"file:{src}", f"file:{out}"
    assert edges(store, s_out) == {("id", s_in, "id", "identity", "id"),
                                   ("a2", s_in, "amount", "derived", "amount * 2")}
    assert rows(store, "SELECT count(*) FROM column_lineage WHERE target_dataset = ?", s_out) == [(2,)]
    [(query_id,)] = rows(store, "SELECT query_id FROM queries WHERE target_dataset = ?", s_out)
    last = q.lastProgress["batchId"]
    assert rows(store, "SELECT first_batch_id, last_batch_id, batch_count FROM streams WHERE query_id = ?",
                query_id) == [(0, last, last + 1)]
    assert rows(store, "SELECT count(*) FROM streams") == [(1,)]


def _run_file_stream(session: Any, tmp_path: Path, started: Callable[[Any], None] = lambda q: None) -> Any:
    """A file stream to parquet: two micro-batches (two files, one after the other), then stopped."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    q = (session.readStream.schema(SCHEMA).json(str(src)).selectExpr("id", "amount * 2 AS a2")
         .writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        started(q)
        for i in range(2):
            drop(src, f"{i}.json", [{"id": i, "name": "ann", "amount": i + 3, "ts": "2026-01-01 10:00:00"}])
            q.processAllAvailable()
    finally:
        q.stop()
    return q


def test_a_stream_started_right_after_enable_is_captured_once(spark: Any, tmp_path: Path) -> None:
    """A fresh session: Spark builds its streams on the start-up thread while the stream starts."""
    session = spark.newSession()
    store = str(tmp_path / "l.duckdb")
    handle = lineage_listener.enable(session, store=store)
    try:
        q = _run_file_stream(session, tmp_path)
        assert handle.flush(60)
    finally:
        lineage_listener.disable(session)
    _stream_captured_once(store, q, tmp_path / "in", tmp_path / "out")


def test_a_stream_started_before_the_streaming_listener_is_added_is_captured_once(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The listener is added once the stream runs (Spark told no listener of its start): it takes the
    stream as started, and its micro-batches are captured once."""
    from lineage_listener.capture.reading import streams

    real_register, running = streams.register, threading.Event()

    def register_once_running(jsession: Any, capture: Any) -> Any:
        assert running.wait(60)
        return real_register(jsession, capture)

    monkeypatch.setattr(streams, "register", register_once_running)
    session = spark.newSession()
    store = str(tmp_path / "l.duckdb")
    handle = lineage_listener.enable(session, store=store)

    def add_the_listener_now(q: Any) -> None:
        assert handle.startup is not None
        running.set()
        handle.startup.join(60)
        assert len(session._jsparkSession.streams().listListeners()) == 1  # a fresh session: only ours

    try:
        q = _run_file_stream(session, tmp_path, add_the_listener_now)
        assert handle.flush(60)
    finally:
        running.set()
        lineage_listener.disable(session)
    _stream_captured_once(store, q, tmp_path / "in", tmp_path / "out")
