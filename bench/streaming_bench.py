"""Structured Streaming: what capture costs per micro-batch, and how the store grows.

    python bench/streaming_bench.py [--batches 20] [--growth 1000] [--readers compact,json]

1. A real file stream (local[2]) gets one new file per micro-batch, stepped with
   ``processAllAvailable()``, ``--batches`` times, without and then with capture. Per batch:
   the stream's own batch duration (``durationMs.triggerExecution``, median), the capture
   thread's CPU and this Python process's CPU (py4j callbacks included); with each plan reader
   (``compact``: the bridge jar's ``PlanReader``, the default; ``json``: Spark's ``toJSON``),
   and the time reading the stream's plan took (once per stream run).
2. Store growth: the first micro-batch's real envelope (plan, sources, sink), then ``--growth``
   micro-batches of the same stream through the real recorder and store writer, one store
   write per micro-batch (the worst case: the pipeline batches writes when batches come fast).
   Rows per table and file bytes, against what a row set per micro-batch would have held.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import duckdb  # noqa: E402

from bench.capture_bench import thread_cpu  # noqa: E402


def drop(folder: Path, i: int) -> None:
    tmp = folder.parent / f"{i}.tmp"
    tmp.write_text("".join(json.dumps({"id": i * 10 + k, "name": f"n{k}", "amount": k, "ts": "2026-01-01 10:00:00"})
                           + "\n" for k in range(10)))
    tmp.rename(folder / f"{i}.json")


def run_stream(spark: Any, work: Path, batches: int, capture: bool) -> dict[str, float]:
    import lineage_listener
    from lineage_listener.capture import stages

    src = work / "in"
    src.mkdir(parents=True)
    handle = lineage_listener.enable(spark, store=str(work / "lineage.duckdb")) if capture else None
    if capture:
        stages.enable()
        stages.totals(reset=True)
    tid = handle.capture._thread.native_id if handle else None
    stream = (spark.readStream.schema("id INT, name STRING, amount INT, ts TIMESTAMP").json(str(src))
              .withWatermark("ts", "1 hour").selectExpr("id", "upper(name) AS who", "amount * 2 AS doubled")
              .where("doubled > 2"))
    q = (stream.writeStream.format("parquet").option("path", str(work / "out"))
         .option("checkpointLocation", str(work / "ck")).start())
    cpu0, cap0 = time.process_time(), thread_cpu(tid)
    for i in range(batches):
        drop(src, i)
        q.processAllAvailable()
    if handle:
        handle.flush(120)
    cpu, cap = time.process_time() - cpu0, thread_cpu(tid) - cap0
    durations = [p["durationMs"]["triggerExecution"] for p in q.recentProgress if p["numInputRows"]]
    q.stop()
    totals = stages.totals(reset=True) if capture else {}
    if capture:
        stages.disable()
        lineage_listener.disable(spark)
    read = {k: v * 1000 for k, v in totals.items() if k in ("stream.read", "compact.read+transfer",
                                                             "compact.decode", "tojson+transfer", "decode")}
    return {"batch_ms": statistics.median(durations), "py_cpu_ms": cpu * 1000 / batches,
            "capture_cpu_ms": cap * 1000 / batches, "batches": len(durations), "read": read}


def growth(spark: Any, work: Path, batches: int) -> None:
    """``batches`` micro-batches of one stream through the real recorder and writer."""
    from lineage_listener.capture.reading.queryreader import QueryReader
    from lineage_listener.capture.recording.records import Recorder
    from lineage_listener.capture.reading.streams import progress_of
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.writer import StoreWriter

    src = work / "in"
    src.mkdir(parents=True)
    drop(src, 0)
    q = (spark.readStream.schema("id INT, name STRING, amount INT, ts TIMESTAMP").json(str(src))
         .selectExpr("id", "upper(name) AS who", "amount * 2 AS doubled", "ts").where("doubled > 2")
         .writeStream.format("parquet").option("path", str(work / "out"))
         .option("checkpointLocation", str(work / "ck")).start())
    q.processAllAvailable()
    jq = spark._jsparkSession.streams().get(q.id)

    class Event:  # the progress event Spark would hand the listener, from the query's last progress
        def progress(self) -> Any:
            return jq.lastProgress()

    reader, recorder = QueryReader(), Recorder()
    first = reader.read_stream(Event(), jq, datetime.now())
    q.stop()
    store = work / "growth.duckdb"
    writer = StoreWriter(store)
    base = progress_of(Event(), datetime.now())
    start, after_first = time.perf_counter(), 0
    for i in range(batches):
        p = replace(base, batch_id=i, at=base.at + timedelta(seconds=10 * i))
        env = replace(first, stream=p, captured_at=p.at) if i == 0 else replace(
            first, stream=p, captured_at=p.at, plan_json=None, plan=None, root=None)
        batch = Batch()
        batch.add_all(recorder.record(env))
        assert writer.write(batch)
        after_first = after_first or store.stat().st_size
    took = time.perf_counter() - start
    with duckdb.connect(str(store), read_only=True) as con:
        counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in ("queries", "column_lineage", "streams", "datasets", "dataset_columns")}
        counters = con.execute("SELECT first_batch_id, last_batch_id, batch_count FROM streams").fetchall()
    size = store.stat().st_size
    print(f"\nstore growth: {batches} micro-batches of one stream, one store write each ({took:.1f} s)")
    print("  rows: " + ", ".join(f"{t} {n}" for t, n in counts.items()) + f"; streams counters {counters}")
    print(f"  file: {size / 1e6:.2f} MB ({size} bytes; {after_first} after the first micro-batch, "
          f"+{size - after_first} bytes for the other {batches - 1}); a row set per micro-batch would hold "
          f"{counts['column_lineage'] * batches} edge rows and {batches} queries rows")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--growth", type=int, default=1000)
    ap.add_argument("--readers", default="compact,json", help="plan readers: compact (the bridge jar), json (Spark's toJSON)")
    args = ap.parse_args()
    from lineage_listener.capture.reading import planreader
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("streaming-bench").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as tmp:
        run_stream(spark, Path(tmp) / "warm", 3, False)  # JIT and caches: not measured
        off = run_stream(spark, Path(tmp) / "off", args.batches, False)
        print(f"{args.batches}-batch file stream (10 rows a batch), per micro-batch:")
        print(f"  without capture: batch duration median {off['batch_ms']:.0f} ms, "
              f"Python process CPU {off['py_cpu_ms']:.1f} ms")
        for reader in [r.strip() for r in args.readers.split(",") if r.strip()]:
            os.environ[planreader.ENV] = reader
            run_stream(spark, Path(tmp) / f"warm-{reader}", 2, True)  # this reader's first read: not measured
            on = run_stream(spark, Path(tmp) / f"on-{reader}", args.batches, True)
            print(f"  with capture, {reader} reader: batch duration median {on['batch_ms']:.0f} ms "
                  f"({on['batch_ms'] / off['batch_ms']:.2f}x), capture thread CPU {on['capture_cpu_ms']:.1f} ms, "
                  f"Python process CPU {on['py_cpu_ms']:.1f} ms; reading the stream's plan (once): "
                  + ", ".join(f"{k} {v:.0f} ms" for k, v in sorted(on["read"].items())))
        os.environ.pop(planreader.ENV, None)
        growth(spark, Path(tmp) / "growth", args.growth)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
