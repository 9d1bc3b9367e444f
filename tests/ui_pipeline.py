"""A four-job pipeline for the UI tests: raw -> clean -> marts/exports, with a PII column that reaches
one export in clear text, one mart masked and one column both ways, and a 22-column sum (45 columns
upstream of one column: the sum, 22 in raw/metrics, 22 in the rows they came from).
Plain PySpark; the tests capture it into a store."""
from __future__ import annotations

from pathlib import Path
from typing import Any

WIDE = 22


def pipeline(spark: Any, out: Path) -> None:
    from pyspark.sql import functions as F

    raw, clean, marts = out / "raw", out / "clean", out / "marts"
    # job 1: ingest
    spark.createDataFrame([(1, "ann", "ann@example.com", "DE"), (2, "bob", "bob@example.com", "FR")],
                          "customer_id int, name string, email string, country string") \
        .write.mode("overwrite").parquet(str(raw / "customers"))
    spark.createDataFrame([(10, 1, 12.5, "paid"), (11, 2, 7.0, "refunded"), (12, 1, 3.0, "paid")],
                          "order_id int, customer_id int, amount double, status string") \
        .write.mode("overwrite").parquet(str(raw / "orders"))
    spark.createDataFrame([tuple(range(i, i + WIDE)) for i in range(3)],
                          ", ".join(f"m{i:02d} int" for i in range(WIDE))) \
        .write.mode("overwrite").parquet(str(raw / "metrics"))
    # job 2: clean (same table names under clean/)
    orders = spark.read.parquet(str(raw / "orders")).where(F.col("status") == "paid")
    orders.select("order_id", "customer_id", "amount").write.mode("overwrite").parquet(str(clean / "orders"))
    customers = spark.read.parquet(str(raw / "customers"))
    customers.select("customer_id", F.initcap("name").alias("name"), F.lower("email").alias("email"), "country") \
        .write.mode("overwrite").parquet(str(clean / "customers"))
    # job 3: marts and exports
    c = spark.read.parquet(str(clean / "customers"))
    o = spark.read.parquet(str(clean / "orders"))
    spend = o.join(c, "customer_id").groupBy("customer_id", "name", "email").agg(F.sum("amount").alias("spend"))
    spend.select("customer_id", "name", F.sha2("email", 256).alias("email_hash"), "spend") \
        .write.mode("overwrite").parquet(str(marts / "customer_spend"))
    c.select("customer_id", "email", "country").write.mode("overwrite").parquet(str(out / "exports" / "partner"))
    c.select("customer_id", F.sha2("email", 256).alias("email_sha"), F.col("email").alias("email_plain")) \
        .write.mode("overwrite").parquet(str(marts / "contacts"))
    m = spark.read.parquet(str(raw / "metrics"))
    m.select(sum((F.col(f"m{i:02d}") for i in range(1, WIDE)), F.col("m00")).alias("total")) \
        .write.mode("overwrite").parquet(str(marts / "metrics_total"))
    # job 4: a newsletter list whose contact is masked on one path and clear on the other
    k = spark.read.parquet(str(marts / "contacts"))
    k.select(F.coalesce("email_sha", "email_plain").alias("contact")) \
        .write.mode("overwrite").parquet(str(out / "exports" / "newsletter"))
