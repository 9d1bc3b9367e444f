"""A spark-submit job of exactly N captured queries, for ``bench/bridge_overhead.py --queries N``.

    spark-submit bench/queries_job.py OUT [N]

One parquet write of a generated table, N - 2 filtered aggregates of it written as parquet, and a
join collected to the driver: N actions whose lineage is captured (N >= 3). It knows nothing
about lineage.
"""
from __future__ import annotations

import sys
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main(out: Path, n: int) -> None:
    spark = SparkSession.builder.appName(f"queries_job_{n}").getOrCreate()
    (spark.range(0, 20_000)
     .select("id", (F.col("id") % 97).alias("k"), (F.col("id") * 3 % 1000).alias("v"))
     .write.mode("overwrite").parquet(str(out / "base")))
    base = spark.read.parquet(str(out / "base"))
    for i in range(1, n - 1):
        (base.where(F.col("k") % (n - 2) == i - 1).groupBy("k")
         .agg(F.sum("v").alias("total"), F.count("id").alias("rows"))
         .write.mode("overwrite").parquet(str(out / f"agg{i}")))
    top = spark.read.parquet(str(out / "agg1")).join(base, "k").orderBy(F.desc("v")).limit(5).collect()
    print("top:", [r["id"] for r in top])
    spark.stop()


if __name__ == "__main__":
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    if n < 3:
        raise SystemExit("N must be at least 3")
    main(Path(sys.argv[1]).resolve(), n)
