"""Cost of ``lineage_listener.enable()`` on a live session: median and max wall time of N calls
(each followed by ``disable()``, not timed), after one warm-up call, on an idle listener bus and
right after an action (its end event still on the bus).

    python bench/enable_bench.py [--runs 30]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession

import lineage_listener


def timed_enables(spark: SparkSession, store: Path, runs: int, action: bool) -> list[float]:
    out = []
    for i in range(runs):
        if action:
            spark.range(3).selectExpr("id AS x").collect()
        else:
            spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(60_000)
        start = time.perf_counter()
        lineage_listener.enable(spark, store=str(store))
        out.append(time.perf_counter() - start)
        lineage_listener.disable(spark)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "l.duckdb"
        timed_enables(spark, store, 1, action=False)  # warm-up: callback server, plan reader
        for label, action in (("idle bus", False), ("after an action", True)):
            t = timed_enables(spark, store, args.runs, action)
            print(f"enable() {label}: median {statistics.median(t) * 1000:.1f} ms, "
                  f"max {max(t) * 1000:.1f} ms ({args.runs} calls)")
    spark.stop()


if __name__ == "__main__":
    main()
