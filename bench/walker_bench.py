"""Walker and capture speed on real plans: every TPC-DS query, and job overhead with capture on.

    python bench/walker_bench.py [--overhead-queries 200]

Prints, per phase, median / p95 / max milliseconds over the TPC-DS plans, the
largest plan's numbers, and the wall time of a many-query job with and without
capture (the ratio is the overhead users see).
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
from lineage_listener.capture import facts  # noqa: E402
from lineage_listener.lineage.query import lineage  # noqa: E402
from lineage_listener.plan.tree import parse  # noqa: E402
from tests import tpcds  # noqa: E402


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


def walker(spark: SparkSession) -> None:
    tpcds.create_tables(spark)
    cache = facts.FactCache()
    rows = []
    for name, sql in tpcds.queries().items():
        try:
            plan = spark.sql(sql)._jdf.queryExecution().analyzed()
        except Exception:  # noqa: BLE001 - not analyzable against the shared schema
            continue
        t0 = time.perf_counter()
        text = str(plan.toJSON())
        t1 = time.perf_counter()
        items = json.loads(text)
        decoded = time.perf_counter()
        nulls: list = []
        leaves = facts.leaves(plan, items, None, cache, nulls)
        if nulls:  # as the capture does: fields toJSON wrote as null, read from the JVM
            facts.repair_null_fields(plan, items, nulls)
        t2 = time.perf_counter()
        result = lineage(parse(items), leaves)
        t3 = time.perf_counter()
        rows.append((name, len(text), (t1 - t0) * 1e3, (t2 - decoded) * 1e3, (t3 - t2 + decoded - t1) * 1e3,
                     len(result.edges)))
    print(f"TPC-DS plans walked: {len(rows)}")
    for label, i in (("toJSON (py4j)", 2), ("leaf facts (py4j)", 3), ("parse+walk (Python)", 4)):
        vals = [r[i] for r in rows]
        print(f"  {label:22s} median {statistics.median(vals):7.1f} ms  p95 {pct(vals, .95):7.1f} ms  "
              f"max {max(vals):7.1f} ms")
    big = max(rows, key=lambda r: r[1])
    print(f"  largest plan: {big[0]} ({big[1] / 1024:.0f} KiB JSON): toJSON {big[2]:.0f} ms, facts {big[3]:.0f} ms, "
          f"walk {big[4]:.0f} ms, {big[5]} edges")
    slow = max(rows, key=lambda r: r[4])
    print(f"  slowest walk: {slow[0]} {slow[4]:.0f} ms ({slow[5]} edges)")
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
