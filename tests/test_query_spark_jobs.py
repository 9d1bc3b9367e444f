"""Multi-job lineage captured from real Spark, asked through the query API."""
from __future__ import annotations

import pytest

import lineage_listener
from lineage_listener.query import open_store
from lineage_listener.query.reports import impact, provenance


@pytest.fixture()
def chained_store(spark, tmp_path):
    """Three jobs: csv -> table (CTAS), table read BY PATH -> masked table, -> report."""
    store = tmp_path / "lineage.duckdb"
    raw = tmp_path / "raw"
    spark.sql("SELECT * FROM VALUES (1, 'a@x', 10.0D), (2, 'b@x', 250.0D) AS t(id, email, amount)") \
        .write.mode("overwrite").option("header", "true").csv(str(raw))
    spark.sql("DROP TABLE IF EXISTS q_orders"); spark.sql("DROP TABLE IF EXISTS q_clean")
    spark.sql("DROP TABLE IF EXISTS q_report")
    handle = lineage_listener.enable(spark, store=str(store))
    try:
        # job 1: a table from the raw csv
        spark.read.option("header", "true").option("inferSchema", "true").csv(str(raw)) \
            .selectExpr("id", "email", "amount * 2 AS amount").write.saveAsTable("q_orders")
        location = spark.sql("DESCRIBE TABLE EXTENDED q_orders").where("col_name = 'Location'").first()[1]
        # job 2: reads the table's files by path, hashes the email, filters on amount
        spark.read.parquet(location).where("amount > 5") \
            .selectExpr("id", "sha2(email, 256) AS email_hash", "amount").write.saveAsTable("q_clean")
        # job 3: aggregates the clean table
        spark.sql("CREATE TABLE q_report USING parquet AS SELECT sum(amount) AS total, count(email_hash) AS n FROM q_clean")
        # a read-only access of the raw email column
        spark.table("q_orders").select("email").collect()
        assert handle.flush(60)
    finally:
        lineage_listener.disable(spark)
    return store


def _table(store, short):
    rows = open_store(store).sql(
        f"SELECT dataset FROM datasets WHERE dataset LIKE '%.{short}'").fetchall()
    assert rows, f"table {short} not captured"
    return rows[0][0]


def test_upstream_crosses_three_jobs_and_a_path_read(chained_store):
    report, orders, clean = (_table(chained_store, t) for t in ("q_report", "q_orders", "q_clean"))
    g = open_store(chained_store).upstream(report, "total")
    assert g.has_edge((clean, "amount"), (report, "total"))
    assert g.edges[(clean, "amount"), (report, "total")]["transform"] == "aggregate"
    # job 2 read q_orders by its location: the path is folded into the table name
    assert g.has_edge((orders, "amount"), (clean, "amount"))
    assert not any(n[0].startswith("file:") and "q_orders" in n[0] for n in g)
    origins = {n for n in g if g.in_degree(n) == 0}
    assert any(ds.startswith("file:") and col == "amount" for ds, col in origins)
    p = provenance(open_store(chained_store), report, "total")
    assert any(o["column"] == "amount" and o["dataset"].startswith("file:") for o in p["origins"])


def test_masking_on_the_path_and_read_access(chained_store):
    orders, clean = _table(chained_store, "q_orders"), _table(chained_store, "q_clean")
    r = impact(open_store(chained_store), orders, "email")
    status = {(d["dataset"], d["column"]): d["masking"] for d in r["downstream"]}
    assert status[(clean, "email_hash")] == "masked"
    assert any(x["target_dataset"] is None for x in r["reads"]), "the collect() read is an access record"
