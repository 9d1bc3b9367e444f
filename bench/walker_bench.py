"""Walker and capture speed on real plans: every TPC-DS query, and job overhead with capture on.

    python bench/walker_bench.py [--overhead-queries 200]

Prints, per phase, median / p95 / max / sum (milliseconds; sizes in KiB) over the TPC-DS plans,
each read both ways (Spark's ``toJSON``, and the bridge jar's compact reader, the
default), the capture's Python CPU against Spark's own analysis + optimisation + planning, the
largest plan's numbers, and the wall time of a many-query job with and without capture (the
ratio is the overhead users see).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import SparkSession  # noqa: E402

import lineage_listener  # noqa: E402
from lineage_listener.capture.reading import facts, planreader  # noqa: E402
from lineage_listener.plan import compact  # noqa: E402
from lineage_listener.lineage.query import lineage  # noqa: E402
from lineage_listener.plan.tree import parse  # noqa: E402
from tests import tpcds  # noqa: E402


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


def walker(spark: SparkSession) -> None:
    """Each TPC-DS plan read both ways (``toJSON``, and the compact reader: the plan
    with its leaves' facts in one call), then the rest of the leaf facts (py4j) and the walk; against
    Spark's own analysis + optimisation + planning of the query."""
    tpcds.create_tables(spark)
    cache = facts.FactCache()
    planreader.install_default(background=False)
    probe = spark.sql("SELECT 1")._jdf.queryExecution().analyzed()
    reader = planreader.reader_for(probe)
    rows = []
    for name, sql in tpcds.queries().items():
        try:
            start = time.perf_counter()
            qe = spark.sql(sql)._jdf.queryExecution()
            qe.executedPlan()
            planning = (time.perf_counter() - start) * 1e3
            plan = qe.analyzed()
        except Exception:  # noqa: BLE001 - not analyzable against the shared schema
            continue
        t0 = time.perf_counter()
        text = str(plan.toJSON())
        t1 = time.perf_counter()
        c1 = time.thread_time()
        items = json.loads(text)
        decode_json = (time.thread_time() - c1) * 1e3
        compact_ms = decode_compact = float("nan")
        ctext = ""
        jvm_leaves: dict | None = None
        if reader is not None:  # as the capture reads it: the plan with its leaves' facts, one call
            t2 = time.perf_counter()
            ctext = str(reader.encodeQuery(qe, False))
            compact_ms = (time.perf_counter() - t2) * 1e3
            c2 = time.thread_time()
            items, read_facts = compact.decode(ctext)  # the walk below runs on what capture now decodes
            decode_compact = (time.thread_time() - c2) * 1e3
            jvm_leaves = {int(e): f for e, f in read_facts.get("leaves", ()) if f is not None}
            unresolved = {int(e) for e, f in read_facts.get("leaves", ()) if f is None}
        c3 = time.thread_time()
        nulls: list = []
        if jvm_leaves is None:
            leaves = facts.leaves(plan, items, None, cache, nulls)
        else:
            leaves = {**jvm_leaves, **facts.resolve(plan, unresolved, None, cache)}
            nulls = facts.null_fields(items) if read_facts.get("nulls") else []
        if nulls:  # as the capture does: fields toJSON wrote as null, read from the JVM
            facts.repair_null_fields(plan, items, nulls)
        c4 = time.thread_time()
        result = lineage(parse(items), leaves)
        c5 = time.thread_time()
        rows.append({"name": name, "json KiB": len(text) / 1024, "compact KiB": len(ctext) / 1024,
                     "toJSON read (py4j)": (t1 - t0) * 1e3, "compact read (py4j)": compact_ms,
                     "json.loads (CPU)": decode_json, "compact decode (CPU)": decode_compact,
                     "leaf facts (CPU)": (c4 - c3) * 1e3, "tree+walk (CPU)": (c5 - c4) * 1e3,
                     "Spark planning": planning, "edges": len(result.edges)})
    print(f"TPC-DS plans walked: {len(rows)}")
    for label in ("json KiB", "compact KiB", "toJSON read (py4j)", "compact read (py4j)", "json.loads (CPU)",
                  "compact decode (CPU)", "leaf facts (CPU)", "tree+walk (CPU)", "Spark planning"):
        vals = [r[label] for r in rows]
        print(f"  {label:22s} median {statistics.median(vals):7.1f}  p95 {pct(vals, .95):7.1f}  "
              f"max {max(vals):7.1f}  sum {sum(vals):8.0f}")
    for reader_name, decode in (("before (toJSON)", "json.loads (CPU)"), ("after (compact)", "compact decode (CPU)")):
        cpu = sum(r[decode] + r["leaf facts (CPU)"] + r["tree+walk (CPU)"] for r in rows)
        planning = sum(r["Spark planning"] for r in rows)
        print(f"  capture CPU / Spark planning, {reader_name}: {cpu / planning:.2f}x "
              f"({cpu / len(rows):.1f} / {planning / len(rows):.1f} ms per query; target <= 0.25x)")
    big = max(rows, key=lambda r: r["json KiB"])
    print(f"  largest plan: {big['name']} ({big['json KiB']:.0f} KiB JSON, {big['compact KiB']:.0f} KiB compact): "
          f"toJSON {big['toJSON read (py4j)']:.0f} ms, compact {big['compact read (py4j)']:.0f} ms, "
          f"walk {big['tree+walk (CPU)']:.0f} ms, {big['edges']} edges")
    slow = max(rows, key=lambda r: r["tree+walk (CPU)"])
    print(f"  slowest walk: {slow['name']} {slow['tree+walk (CPU)']:.0f} ms ({slow['edges']} edges)")
    spark.sql("USE default")


def overhead(spark: SparkSession, n: int) -> None:
    df = spark.range(1000).selectExpr("id", "id % 7 AS k", "upper(cast(id AS string)) AS s")
    df.createOrReplaceTempView("bench_src")
    queries = [f"SELECT k, sum(id) AS total, max(s) AS m FROM bench_src WHERE id > {i} GROUP BY k" for i in range(n)]

    def job() -> float:
        t = time.perf_counter()
        for q in queries:
            spark.sql(q).collect()
        return time.perf_counter() - t

    job()  # warm-up
    base = [job() for _ in range(3)]
    with tempfile.TemporaryDirectory() as tmp:
        handle = lineage_listener.enable(spark, store=str(Path(tmp) / "bench.duckdb"))
        captured = []
        for _ in range(3):
            captured.append(job())
        t = time.perf_counter()
        handle.flush(600)
        drain = time.perf_counter() - t
        lineage_listener.disable(spark)
    b, c = statistics.median(base), statistics.median(captured)
    print(f"Job of {n} queries: without capture {b:.2f} s, with capture {c:.2f} s (ratio {c / b:.2f}); "
          f"flush after the last run {drain:.2f} s")


def main() -> None:
    import logging

    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)  # q30 does not analyze: expected
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--overhead-queries", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as wh:
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "2").config("spark.sql.warehouse.dir", wh).getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        walker(spark)
        overhead(spark, args.overhead_queries)
        spark.stop()


if __name__ == "__main__":
    main()
