"""A small warehouse for the access tests: raw and staging tables a marts reader may not read, marts
it may, and paths on both sides, with SQL literals on every side (the leak test looks for them).

acc_raw.customers -> acc_staging.customers_clean -> acc_marts.customer_summary -> acc_marts.region_totals
                                                                               -> <out>/exports/partner_feed
acc_marts.region_totals -> <out>/lake/marts/region_copy (readable by its path)
a driver read of acc_raw.customers.ssn; a stream from a hidden folder to a hidden sink and one from a
hidden folder to a readable sink (<out>/lake/marts/stream_out).
Plain PySpark; the tests capture it into a store. A marts reader may read ``spark_catalog.acc_marts.*`` and
``file:/**/marts/**`` (:data:`READER`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

#: The read grant of the marts reader.
READER = ("spark_catalog.acc_marts.*", "file:/**/marts/**")
#: Strings of what a marts reader may not read: names, columns, SQL literals. None may appear in any
#: answer to that reader.
HIDDEN_LITERALS = ("zz-literal-staging@example.com", "ZZLITERALREGION", "999-LITERAL-SSN", "ZZSTREAMLITERAL")
HIDDEN_COLUMNS = ("ssn", "secret_score")
#: SQL literals of queries that read and wrote only readable datasets: a marts reader sees them.
VISIBLE_LITERALS = ("VISIBLELITERAL",)


def pipeline(spark: Any, out: Path) -> None:
    from pyspark.sql import functions as F

    for db in ("acc_raw", "acc_staging", "acc_marts"):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    for table in ("acc_raw.customers", "acc_staging.customers_clean", "acc_marts.customer_summary",
                  "acc_marts.region_totals"):
        spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.createDataFrame(
        [(1, "ann@example.com", "111-22-3333", "EMEA", 0.7), (2, "bob@example.com", "222-33-4444", "APAC", 0.2)],
        "customer_id int, email string, ssn string, region string, secret_score double") \
        .write.mode("overwrite").format("parquet").saveAsTable("acc_raw.customers")
    spark.sql("""CREATE TABLE acc_staging.customers_clean USING parquet AS
                 SELECT customer_id, lower(email) AS email, ssn, region, secret_score * 100 AS secret_score
                 FROM acc_raw.customers WHERE email <> 'zz-literal-staging@example.com'""")
    spark.sql("""CREATE TABLE acc_marts.customer_summary USING parquet AS
                 SELECT region, count(*) AS customers, max(email) AS top_email
                 FROM acc_staging.customers_clean WHERE region <> 'ZZLITERALREGION' GROUP BY region""")
    spark.sql("""CREATE TABLE acc_marts.region_totals USING parquet AS
                 SELECT region, customers * 2 AS doubled, top_email FROM acc_marts.customer_summary
                 WHERE region <> 'VISIBLELITERAL'""")
    spark.table("acc_marts.customer_summary").select("region", "top_email") \
        .write.mode("overwrite").parquet(str(out / "exports" / "partner_feed"))
    spark.table("acc_marts.region_totals").select("region", "doubled") \
        .write.mode("overwrite").parquet(str(out / "lake" / "marts" / "region_copy"))
    spark.sql("SELECT ssn FROM acc_raw.customers WHERE ssn = '999-LITERAL-SSN'").collect()
    _streams(spark, out)


def _streams(spark: Any, out: Path) -> None:
    from pyspark.sql import functions as F

    for side in ("hidden_in", "mart_feed"):
        folder = out / "streams" / side
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "part-0.json").write_text('{"id": 1, "tag": "a"}\n')
    hidden = (spark.readStream.schema("id int, tag string").json(str(out / "streams" / "hidden_in"))
              .where(F.col("tag") != "ZZSTREAMLITERAL").select("id", "tag")
              .writeStream.format("parquet").option("checkpointLocation", str(out / "checkpoints" / "hidden"))
              .trigger(availableNow=True).start(str(out / "streams" / "hidden_out")))
    seen = (spark.readStream.schema("id int, tag string").json(str(out / "streams" / "mart_feed"))
            .select("id", "tag")
            .writeStream.format("parquet").option("checkpointLocation", str(out / "checkpoints" / "marts"))
            .trigger(availableNow=True).start(str(out / "lake" / "marts" / "stream_out")))
    hidden.awaitTermination()
    seen.awaitTermination()


if __name__ == "__main__":
    import sys

    from pyspark.sql import SparkSession

    import lineage_listener

    out = Path(sys.argv[1])
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.warehouse.dir", str(out / "warehouse"))
             .getOrCreate())
    handle = lineage_listener.enable(spark, store=str(out / "lineage.duckdb"))
    pipeline(spark, out)
    assert handle.flush(120)
    lineage_listener.disable(spark)
