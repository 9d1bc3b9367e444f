"""A small PySpark pipeline for the zero-code demo: it knows nothing about lineage.

    spark-submit $(lineage-listener spark-conf --store out/lineage.duckdb) examples/sample_job.py out

It writes two CSV inputs into OUT/raw, then: cleans orders, joins them to
customers, aggregates revenue per country into parquet, and saves a customer
summary table with saveAsTable.
"""
from __future__ import annotations

import csv
import random
import sys
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

COUNTRIES = ["DE", "FR", "NL", "SE", "US"]


def write_inputs(raw: Path, n_customers: int = 50, n_orders: int = 500) -> None:
    """Generate customers.csv and orders.csv (plain Python, so not part of the lineage)."""
    raw.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(7)
    with open(raw / "customers.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["customer_id", "name", "email", "country"])
        for i in range(n_customers):
            w.writerow([i, f"customer {i}", f"c{i}@example.com", rnd.choice(COUNTRIES)])
    with open(raw / "orders.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["order_id", "customer_id", "amount", "currency", "status"])
        for i in range(n_orders):
            w.writerow([i, rnd.randrange(n_customers), round(rnd.uniform(-5, 200), 2),
                        rnd.choice(["EUR", "USD"]), rnd.choice(["paid", "paid", "refunded"])])


def main(out: Path) -> None:
    spark = (SparkSession.builder.appName("sample_job")
             .config("spark.sql.warehouse.dir", str(out / "warehouse"))
             .getOrCreate())
    top = pipeline(spark, out)
    print("top customers:", [r["name"] for r in top])
    spark.stop()


def pipeline(spark: SparkSession, out: Path) -> list:
    """The job's four steps on ``spark``; returns the top customers (tests reuse it in process)."""
    raw = out / "raw"
    write_inputs(raw)
    customers = spark.read.option("header", True).option("inferSchema", True).csv(str(raw / "customers.csv"))
    orders = spark.read.option("header", True).option("inferSchema", True).csv(str(raw / "orders.csv"))

    # step 1: keep paid orders with a positive amount, convert to EUR
    paid = (orders.where((F.col("status") == "paid") & (F.col("amount") > 0))
            .withColumn("amount_eur", F.when(F.col("currency") == "USD", F.col("amount") * 0.9)
                        .otherwise(F.col("amount"))))
    paid.select("order_id", "customer_id", "amount_eur").write.mode("overwrite").parquet(str(out / "paid_orders"))

    # step 2: join to customers and aggregate revenue per country
    enriched = spark.read.parquet(str(out / "paid_orders")).join(customers, "customer_id")
    revenue = (enriched.groupBy("country")
               .agg(F.round(F.sum("amount_eur"), 2).alias("revenue"), F.count("order_id").alias("orders")))
    revenue.write.mode("overwrite").parquet(str(out / "revenue_by_country"))

    # step 3: a customer summary table in the catalog, with a masked e-mail
    spark.sql("CREATE DATABASE IF NOT EXISTS sales")
    summary = (enriched.groupBy("customer_id", "name", "email")
               .agg(F.sum("amount_eur").alias("total_spend"))
               .select("customer_id", F.upper("name").alias("name"),
                       F.sha2("email", 256).alias("email_hash"), "total_spend"))
    summary.write.mode("overwrite").saveAsTable("sales.customer_summary")

    # step 4: an action that returns rows to the driver
    return spark.table("sales.customer_summary").orderBy(F.desc("total_spend")).limit(3).collect()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "demo-output").resolve())
