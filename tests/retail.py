"""A four-job retail pipeline with PII, run as four real Spark applications under zero-code capture.

raw CSV files -> ``retail_ingest`` (clean tables) -> ``retail_fact`` (a wide fact table) ->
``retail_marts`` (marts; a join and a group-by on email) -> ``retail_exports`` (one export hashes
email with ``sha2``, a partner CSV copies it in clear). Each job is its own ``spark-submit`` with
``$(lineage-listener spark-conf --store ...)``, sharing a Hive metastore and warehouse, so the store
holds four applications whose captures are apart in time (a window can start between two jobs).

What the email reaches, by construction:
- clear copies: ``customers_clean.email``, ``fact_order_lines.email`` and
  ``exports/partner_top_customers.csv [email]``;
- a masked copy: ``exports/customer_emails_hashed [email_sha256]`` (``sha2``);
- influence only: ``customers_masked`` (joined on email with the consents file),
  ``customer_ltv`` (grouped by email), and every column the partner export sorts or filters.

Run one job by hand: ``spark-submit tests/retail.py JOB ROOT`` (ROOT holds raw/, warehouse/, exports/).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

JOBS = ("retail_ingest", "retail_fact", "retail_marts", "retail_exports")

CUSTOMERS = [  # customer_id, name, email, ssn, phone, age, country
    (1, " ann lee ", "Ann@Example.com", "123-45-6789", "+49 30 1234567", 34, "de"),
    (2, "bob ray", "bob@example.com", "987-65-4321", "+33 1 23456789", 27, "fr"),
    (3, "cid moe", "cid@example.org", "555-12-3456", "+39 06 1234567", 45, "it"),
    (4, "dee fox", "dee@example.net", "222-33-4444", "+44 20 7946000", 61, "gb"),
]
ORDERS = [  # order_id, customer_id, product, quantity, unit_price, currency, order_date, status
    (100, 1, "lamp", 2, 40.0, "EUR", "2026-10-01", "paid"),
    (101, 2, "desk", 1, 250.0, "GBP", "2026-10-02", "paid"),
    (102, 3, "chair", 4, 60.0, "USD", "2026-10-03", "paid"),
    (103, 1, "shelf", 1, 120.0, "EUR", "2026-10-05", "cancelled"),
    (104, 4, "rug", 3, 80.0, "GBP", "2026-10-07", "paid"),
    (105, 3, "lamp", 1, 40.0, "USD", "2026-10-09", "paid"),
]
FX = [("EUR", 1.0), ("GBP", 1.17), ("USD", 0.92)]
CONSENTS = [("ann@example.com", True), ("bob@example.com", False), ("cid@example.org", True),
            ("dee@example.net", True)]


def write_raw(root: Path) -> None:
    """The raw CSV files the ingest job reads."""
    raw = root / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    files = {
        "customers.csv": ("customer_id,name,email,ssn,phone,age,country", CUSTOMERS),
        "orders.csv": ("order_id,customer_id,product,quantity,unit_price,currency,order_date,status", ORDERS),
        "fx_rates.csv": ("currency,rate_to_eur", FX),
        "consents.csv": ("email,newsletter", CONSENTS),
    }
    for name, (header, rows) in files.items():
        (raw / name).write_text(header + "\n" + "".join(",".join(str(v) for v in r) + "\n" for r in rows))


def _csv(spark: Any, root: Path, name: str, schema: str) -> Any:
    return spark.read.option("header", True).schema(schema).csv(str(root / "raw" / name))


def ingest(spark: Any, root: Path) -> None:
    """raw CSV -> ``warehouse.customers_clean``, ``warehouse.orders_clean``."""
    from pyspark.sql import functions as F

    spark.sql("CREATE DATABASE IF NOT EXISTS warehouse")
    customers = _csv(spark, root, "customers.csv", "customer_id INT, name STRING, email STRING, ssn STRING, "
                                                   "phone STRING, age INT, country STRING")
    (customers.select("customer_id", F.initcap(F.trim("name")).alias("name"),
                      F.lower(F.trim("email")).alias("email"), "ssn", "phone", "age",
                      F.upper("country").alias("country"))
     .write.mode("overwrite").format("parquet").saveAsTable("warehouse.customers_clean"))
    orders = _csv(spark, root, "orders.csv", "order_id INT, customer_id INT, product STRING, quantity INT, "
                                             "unit_price DOUBLE, currency STRING, order_date DATE, status STRING")
    (orders.where(F.col("status") != "cancelled")
     .select("order_id", "customer_id", "product", "quantity", "unit_price", "currency", "order_date",
             (F.col("quantity") * F.col("unit_price")).alias("amount"))
     .write.mode("overwrite").format("parquet").saveAsTable("warehouse.orders_clean"))


def fact(spark: Any, root: Path) -> None:
    """Clean tables + FX rates -> the wide ``warehouse.fact_order_lines``."""
    spark.sql("CREATE DATABASE IF NOT EXISTS warehouse")
    _csv(spark, root, "fx_rates.csv", "currency STRING, rate_to_eur DOUBLE").createOrReplaceTempView("fx")
    spark.sql("DROP TABLE IF EXISTS warehouse.fact_order_lines")
    spark.sql("""
        CREATE TABLE warehouse.fact_order_lines USING parquet AS
        SELECT o.order_id, o.customer_id, c.email, c.name, c.country, c.age,
               o.product, o.quantity, o.unit_price, o.currency, o.amount, fx.rate_to_eur,
               round(o.amount * fx.rate_to_eur, 2) AS net_revenue_eur,
               o.order_date, date_trunc('MONTH', o.order_date) AS order_month,
               o.amount > 100 AS is_large_order,
               CASE WHEN c.age < 30 THEN 'young' WHEN c.age < 50 THEN 'middle' ELSE 'senior' END AS age_band
        FROM warehouse.orders_clean o
        JOIN warehouse.customers_clean c ON o.customer_id = c.customer_id
        JOIN fx ON o.currency = fx.currency""")


def marts(spark: Any, root: Path) -> None:
    """``warehouse.customer_ltv`` (grouped by email) and ``warehouse.customers_masked`` (joined on email)."""
    from pyspark.sql import functions as F

    spark.sql("CREATE DATABASE IF NOT EXISTS warehouse")
    fact_lines = spark.table("warehouse.fact_order_lines")
    (fact_lines.groupBy("email")
     .agg(F.min("customer_id").alias("customer_id"), F.max("age").alias("age"),
          F.sum("net_revenue_eur").alias("ltv_eur"), F.count("order_id").alias("orders"))
     .drop("email")
     .write.mode("overwrite").format("parquet").saveAsTable("warehouse.customer_ltv"))
    consents = _csv(spark, root, "consents.csv", "email STRING, newsletter BOOLEAN")
    customers = spark.table("warehouse.customers_clean")
    (customers.join(consents, "email")
     .select("customer_id", F.sha2("ssn", 256).alias("ssn_sha256"), F.expr("mask(phone)").alias("phone_masked"),
             "newsletter")
     .write.mode("overwrite").format("parquet").saveAsTable("warehouse.customers_masked"))


def exports(spark: Any, root: Path) -> None:
    """A hashed email export (parquet) and a partner CSV with email in clear."""
    from pyspark.sql import functions as F

    ltv = spark.table("warehouse.customer_ltv")
    customers = spark.table("warehouse.customers_clean")
    (customers.join(ltv, "customer_id")
     .select("customer_id", F.sha2("email", 256).alias("email_sha256"), "ltv_eur")
     .write.mode("overwrite").parquet(str(root / "exports" / "customer_emails_hashed")))
    (customers.join(ltv, "customer_id").where(F.col("ltv_eur") > 100).orderBy(F.col("ltv_eur").desc())
     .select("email", "name", F.round("ltv_eur", 0).alias("ltv_eur"))
     .write.mode("overwrite").option("header", True).csv(str(root / "exports" / "partner_top_customers.csv")))


def exports_fixed(spark: Any, root: Path) -> None:
    """The fix docs/governance.md describes: the partner export writes ``sha2(email, 256)`` (overwriting
    it); and an export that gets the email in clear, then masked rows appended (its clear rows stay)."""
    from pyspark.sql import functions as F

    ltv = spark.table("warehouse.customer_ltv")
    customers = spark.table("warehouse.customers_clean")
    top = customers.join(ltv, "customer_id").where(F.col("ltv_eur") > 100).orderBy(F.col("ltv_eur").desc())
    (top.select(F.sha2("email", 256).alias("email"), "name", F.round("ltv_eur", 0).alias("ltv_eur"))
     .write.mode("overwrite").option("header", True).csv(str(root / "exports" / "partner_top_customers.csv")))
    eu = str(root / "exports" / "partner_eu.csv")
    top.select("email", "name").write.mode("overwrite").option("header", True).csv(eu)
    top.select(F.sha2("email", 256).alias("email"), "name").write.mode("append").option("header", True).csv(eu)


STEPS = {"retail_ingest": ingest, "retail_fact": fact, "retail_marts": marts, "retail_exports": exports,
         "retail_exports_fixed": exports_fixed}


def hive_conf(root: Path) -> list[str]:
    """``spark-submit`` flags that let the four applications share their tables."""
    return ["--conf", "spark.sql.catalogImplementation=hive",
            "--conf", f"spark.sql.warehouse.dir={root / 'warehouse'}",
            "--driver-java-options", f"-Dderby.system.home={root} -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"]


@dataclass(frozen=True)
class JobTimes:
    """When one job ran (naive UTC, the store's convention)."""

    started: datetime
    ended: datetime


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def run_pipeline(root: Path, store: Path, gap: float = 1.5, jobs: tuple[str, ...] = JOBS,
                 extra: list[str] | None = None) -> dict[str, JobTimes]:
    """Run ``jobs`` one after another as real applications capturing into ``store``; ``gap`` seconds
    lie between two jobs, so a time window can start between them."""
    from tests.jobs import BASE_CONF, SPARK_HOME, capture_args, finish, job_env
    import subprocess

    write_raw(root)
    base = [a for a in BASE_CONF if a not in ("--driver-java-options", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")]
    times: dict[str, JobTimes] = {}
    for name in jobs:
        started = _now()
        proc = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-submit"), *base, *hive_conf(root),
                                 *capture_args(store), *(extra or []), str(Path(__file__).resolve()), name,
                                 str(root)], cwd=root, env=job_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        rc, out, err = finish(proc)
        if rc != 0:
            raise RuntimeError(f"{name} failed ({rc}): " + "\n".join(
                line for line in (out + err).splitlines() if " INFO " not in line)[-4000:])
        times[name] = JobTimes(started, _now())
        time.sleep(gap)
    return times


def main(argv: list[str]) -> int:
    from pyspark.sql import SparkSession

    name, root = argv[1], Path(argv[2])
    spark = SparkSession.builder.appName(name).enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    STEPS[name](spark, root)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
