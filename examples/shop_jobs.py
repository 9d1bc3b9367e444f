"""Four small PySpark applications that share tables, captured into one store.

    python examples/shop_jobs.py OUT        (OUT/lineage.duckdb, OUT/raw, OUT/warehouse, OUT/metastore_db)

Each application runs in a process of its own, one after another, with in-process capture
(``lineage_listener.enable``) and a Hive metastore in OUT, so the tables one application writes are
the tables the next one reads:

1. ``ingest`` reads ``raw/orders.csv`` and saves ``shop.orders`` (the amount cast to a double);
2. ``clean`` reads ``shop.orders`` by its storage path, keeps positive amounts, hashes the email and
   saves ``shop.clean``;
3. ``report`` sums ``shop.clean`` into ``shop.report``;
4. ``export`` collects ``shop.orders.email`` to the driver.

The examples of the querying page ran against this store.
"""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

JOBS = ("ingest", "clean", "report", "export")


def write_orders(raw: Path) -> None:
    """``orders.csv`` (plain Python, so not part of the lineage)."""
    raw.mkdir(parents=True, exist_ok=True)
    with open(raw / "orders.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "amount", "email"])
        for i in range(20):
            w.writerow([i, f"{(i * 37) % 200 - 20}.50", f"c{i}@example.com"])


def run(job: str, out: Path) -> None:
    """One application: its session, capture, its step, then the store flushed and the session stopped."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import lineage_listener

    spark = (SparkSession.builder.master("local[2]").appName(job)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.warehouse.dir", str(out / "warehouse"))
             .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                     f"jdbc:derby:;databaseName={out / 'metastore_db'};create=true")
             .enableHiveSupport().getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    handle = lineage_listener.enable(spark, store=str(out / "lineage.duckdb"))
    if job == "ingest":
        spark.sql("CREATE DATABASE IF NOT EXISTS shop")
        (spark.read.option("header", True).csv(str(out / "raw" / "orders.csv"))
         .select("id", F.col("amount").cast("double").alias("amount"), "email")
         .write.mode("overwrite").saveAsTable("shop.orders"))
    elif job == "clean":
        (spark.read.parquet(str(out / "warehouse" / "shop.db" / "orders"))
         .where("amount > 0")
         .select("id", "amount", F.sha2("email", 256).alias("email_hash"))
         .write.mode("overwrite").saveAsTable("shop.clean"))
    elif job == "report":
        (spark.table("shop.clean")
         .agg((F.sum("amount") * 2).alias("total"), F.count("id").alias("n"))
         .write.mode("overwrite").saveAsTable("shop.report"))
    elif job == "export":
        print(len(spark.table("shop.orders").select("email").collect()), "emails exported")
    handle.flush()
    lineage_listener.disable(spark)
    spark.stop()


def main(argv: list[str]) -> None:
    if len(argv) == 3 and argv[1] in JOBS:
        run(argv[1], Path(argv[2]))
        return
    if len(argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    out = Path(argv[1]).resolve()
    write_orders(out / "raw")
    for job in JOBS:
        print(f"+ {job}", flush=True)
        subprocess.run([sys.executable, __file__, job, str(out)], check=True, cwd=out)


if __name__ == "__main__":
    main(sys.argv)
