"""Labels Spark keeps (column comments, column metadata, table properties), recorded at capture on real
Spark, and propagated from there like any declared label."""
from __future__ import annotations

import subprocess
import sys

import duckdb

from lineage_listener.govern.answers import column_labels
from lineage_listener.query import open_store


def spark_labels(store) -> set[tuple[str, str, str, str, str]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return set(con.execute("SELECT dataset, column_name, label, source, origin FROM column_labels").fetchall())


def test_a_tables_comment_tags_and_properties_are_labels_that_travel(lineage, tmp_path):
    spark = lineage.spark
    spark.sql("DROP TABLE IF EXISTS gov_customers")
    spark.sql("""CREATE TABLE gov_customers (id INT, email STRING COMMENT 'work email [classification: pii.email]',
                 ssn STRING, country STRING) USING parquet
                 TBLPROPERTIES ('lineage.classification.ssn' = 'pii, confidential', 'team' = 'crm')""")
    lineage.run("INSERT INTO gov_customers VALUES (1, 'a@x', '123', 'de')")
    out = tmp_path / "export"
    lineage.run(lambda: spark.table("gov_customers").selectExpr("id", "email", "sha2(ssn, 256) AS ssn_hash")
                .write.parquet(str(out)))
    table = "spark_catalog.default.gov_customers"
    found = spark_labels(lineage.store)
    assert {(d, c, lb, s, o) for d, c, lb, s, o in found if d == table} == {
        (table, "email", "pii.email", "spark", "column comment"),
        (table, "ssn", "pii", "spark", "table property lineage.classification.ssn"),
        (table, "ssn", "confidential", "spark", "table property lineage.classification.ssn")}
    with duckdb.connect(str(lineage.store), read_only=True) as con:  # seen again at each read: one history row each
        changes = con.execute("SELECT dataset, column_name, label, origin, changed_at FROM label_changes").fetchall()
        assert len(changes) == 3, changes
    answer = column_labels(open_store(lineage.store), f"file:{out}")
    cols = {c["column"]: c for c in answer["columns"]}
    assert [(x["label"], x["source"]) for x in cols["email"]["labels"]] == [("pii.email", "propagated")]
    assert cols["ssn_hash"]["labels"] == [] and {m["label"] for m in cols["ssn_hash"]["masked"]} == {"pii", "confidential"}
    # a property removed from the table: capture records labels it reads, never their removal; unset says it
    spark.sql("ALTER TABLE gov_customers UNSET TBLPROPERTIES ('lineage.classification.ssn')")
    lineage.run(lambda: spark.table("gov_customers").select("ssn").collect())
    assert (table, "ssn", "confidential", "spark", "table property lineage.classification.ssn") in spark_labels(
        lineage.store)
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", "classify", "unset", "--store", str(lineage.store),
                           table, "ssn", "confidential", "--source", "spark", "--by", "dpo"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "unset confidential (spark)" in proc.stdout, proc.stderr
    assert {(c, lb) for d, c, lb, _, _ in spark_labels(lineage.store) if d == table} == {
        ("email", "pii.email"), ("ssn", "pii")}
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        assert [r[:2] + r[3:] for r in con.execute(
            "SELECT action, source, changed_by, label FROM label_changes WHERE label = 'confidential' ORDER BY changed_at"
        ).fetchall()] == [("set", "spark", "confidential"), ("unset", "spark", "confidential")]
        assert con.execute("SELECT changed_by FROM label_changes WHERE action = 'unset'").fetchall() == [("dpo",)]


def test_column_metadata_on_a_written_column_labels_the_target(lineage, tmp_path):
    from pyspark.sql import functions as F

    spark = lineage.spark
    out = tmp_path / "contacts"
    lineage.run(lambda: spark.range(2).select(
        "id", F.lit("a@x").alias("email", metadata={"classification": "pii.email"}), F.lit("de").alias("country"))
        .write.parquet(str(out)))
    assert spark_labels(lineage.store) == {(f"file:{out}", "email", "pii.email", "spark", "column metadata")}


def test_a_plan_without_classification_records_no_label(lineage, tmp_path):
    spark = lineage.spark
    captured = lineage.run(lambda: spark.range(3).selectExpr("id", "id * 2 AS twice").write.parquet(str(tmp_path / "x")))
    assert captured.edges
    assert spark_labels(lineage.store) == set()
