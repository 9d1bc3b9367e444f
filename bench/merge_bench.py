"""What capture costs a MERGE job on Delta Lake and Iceberg (merge-on-read).

    python bench/merge_bench.py [--pairs 3] [--rows 20000] [--readers compact,json]

Runs on a PySpark line a lakehouse jar set exists for (``make jars``; ``make bench`` uses
``.venv-spark35``). One job = a Delta MERGE (upsert with an update, a conditional delete and
an insert) and an Iceberg merge-on-read MERGE of the same shape, from a staged batch. The job
runs without capture and with each plan reader (``compact``: the bridge jar's ``PlanReader``, the
default; ``json``: Spark's ``toJSON``) in rounds whose order rotates; printed per reader:

- ``wall ratio``: median of the pairs' wall time with / without capture;
- ``capture CPU per statement``: this Python process's CPU time (the capture reads and walks
  plans here; Spark runs in its own JVM) with capture minus without, per MERGE statement;
- the capture stages per MERGE statement (reading the plan on the JVM, decoding, walking, storing);
- the listener events a MERGE fires and how many of them became ``queries`` rows (Delta's
  internal queries are dropped: only the MERGE itself is kept).
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import duckdb  # noqa: E402
import pyspark  # noqa: E402

import lineage_listener  # noqa: E402
from lineage_listener.capture import stages  # noqa: E402
from lineage_listener.capture.reading import planreader, queryreader  # noqa: E402
from tests.jars import jar_paths  # noqa: E402

MERGE = """MERGE INTO {t} t USING {s} s ON t.id = s.id
WHEN MATCHED AND s.amount < 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET amount = t.amount + s.amount, name = s.name
WHEN NOT MATCHED THEN INSERT (id, amount, name) VALUES (s.id, s.amount, upper(s.name))"""


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--readers", default="compact,json", help="plan readers: compact (the bridge jar), json (Spark's toJSON)")
    args = ap.parse_args()
    readers = [r.strip() for r in args.readers.split(",") if r.strip()]
    line = ".".join(pyspark.__version__.split(".")[:2])
    jars = jar_paths(f"lakehouse-{line}")
    if not jars:
        print(f"merge_bench: jar set lakehouse-{line} not fetched (run `make jars`); skipped")
        return 0
    from pyspark.sql import SparkSession

    work = Path(tempfile.mkdtemp(prefix="merge-bench-"))
    spark = (SparkSession.builder.master("local[2]").appName("merge-bench")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.jars", ",".join(map(str, jars)))
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension,"
                     "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
             .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.ice.type", "hadoop")
             .config("spark.sql.catalog.ice.warehouse", str(work / "iceberg"))
             .config("spark.sql.warehouse.dir", str(work / "spark"))
             .config("spark.databricks.delta.snapshotPartitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("CREATE TABLE dim (id INT, amount DOUBLE, name STRING) USING delta")
    spark.sql("CREATE TABLE ice.db.dim (id INT, amount DOUBLE, name STRING) USING iceberg TBLPROPERTIES "
              "('format-version'='2', 'write.merge.mode'='merge-on-read')")
    for fmt, name in (("delta", "stage"), ("iceberg", "ice.db.stage")):
        spark.sql(f"CREATE TABLE {name} USING {fmt} AS SELECT CAST(id AS INT) AS id, "
                  f"CAST(id % 97 - 3 AS DOUBLE) AS amount, concat('n', id) AS name FROM range({args.rows})")
    statements = [MERGE.format(t="dim", s="stage"), MERGE.format(t="ice.db.dim", s="ice.db.stage")]

    events = []
    original = queryreader.QueryReader.read

    def counting(self, func_name, qe, *a, **k):  # type: ignore[no-untyped-def]
        events.append(func_name)
        return original(self, func_name, qe, *a, **k)

    queryreader.QueryReader.read = counting  # type: ignore[method-assign]

    def job() -> tuple[float, float]:
        c, t = cpu(), time.perf_counter()
        for stmt in statements:
            spark.sql(stmt)
        return time.perf_counter() - t, cpu() - c

    job()  # warm-up: JIT, catalogs, first snapshot
    store = work / "lineage.duckdb"
    for reader in readers:  # and each reader's first capture (jar loading, lazy imports, the store's schema)
        os.environ[planreader.ENV] = reader
        handle = lineage_listener.enable(spark, store=str(store))
        job()
        handle.flush(120)
        lineage_listener.disable(spark)
    ratios = {r: [] for r in readers}
    cpu_on = {r: [] for r in readers}
    cpu_off: list[float] = []
    stage_ms = {r: {} for r in readers}
    for i in range(args.pairs):  # rotate the order: the tables grow with each MERGE
        order = [None, *readers]
        order = order[i % len(order):] + order[:i % len(order)]
        walls = {}
        for reader in order:
            if reader is None:
                walls[None], c = job()
                cpu_off.append(c)
                continue
            os.environ[planreader.ENV] = reader
            handle = lineage_listener.enable(spark, store=str(store))
            stages.enable()
            stages.totals(reset=True)
            events.clear()
            walls[reader], c = job()
            handle.flush(120)
            for k, v in stages.totals(reset=True).items():
                stage_ms[reader][k] = stage_ms[reader].get(k, 0.0) + v * 1000
            stages.disable()
            lineage_listener.disable(spark)
            cpu_on[reader].append(c)
        for r in readers:
            ratios[r].append(walls[r] / walls[None])
    os.environ.pop(planreader.ENV, None)
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("SELECT command, count(*) FROM queries GROUP BY 1 ORDER BY 1").fetchall()
        edges = con.execute("SELECT count(*) FROM column_lineage").fetchone()[0]
    print(f"merge_bench (PySpark {pyspark.__version__}, {args.rows} staged rows, {args.pairs} rounds)")
    n = args.pairs * len(statements)
    for r in readers:
        per_stmt = (statistics.median(cpu_on[r]) - statistics.median(cpu_off)) / len(statements)
        print(f"  {r} reader: wall ratio with/without capture (median) {statistics.median(ratios[r]):.3f}  "
              f"(rounds: {', '.join(f'{x:.2f}' for x in ratios[r])}); capture CPU per MERGE statement "
              f"{per_stmt * 1000:.0f} ms")
        shown = ("compact.read+transfer", "tojson+transfer", "compact.decode", "decode", "facts", "tree",
                 "walk", "record", "store")
        print("    stages per MERGE statement, ms: " + ", ".join(
            f"{k} {stage_ms[r][k] / n:.1f}" for k in shown if k in stage_ms[r]))
    print(f"  listener events in the last job: {len(events)} for {len(statements)} statements; "
          f"queries rows over all captured jobs: {dict(rows)}; edges: {edges}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
