"""Labels Delta and Iceberg tables keep (table properties ``lineage.classification.<column>``, column
comments with a ``[classification: ...]`` tag), recorded at capture and propagated to what a job writes."""
from __future__ import annotations

from typing import Any

import duckdb
import pytest

from lineage_listener.govern.answers import column_labels
from lineage_listener.query import open_store
from tests.lakehouse.test_rowlevel import full

FORMATS = {"delta": ("db", "USING delta"), "iceberg": ("ice.db", "USING iceberg")}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_table_properties_and_comment_tags_are_labels(spark: Any, lineage: Any, tmp_path, fmt: str):
    ns, using = FORMATS[fmt]
    table = f"{ns}.labelled_{fmt}"
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(f"""CREATE TABLE {table} (id INT, email STRING COMMENT 'contact [classification: pii.email]',
                  ssn STRING, country STRING) {using}
                  TBLPROPERTIES ('lineage.classification.ssn' = 'pii, confidential')""")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a@x', '123', 'de')")
    out = tmp_path / f"export_{fmt}"
    lineage.run(lambda: spark.table(table).selectExpr("id", "email", "sha2(ssn, 256) AS ssn_hash", "country")
                .write.parquet(str(out)))
    name = full(table)
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        found = set(con.execute("SELECT dataset, column_name, label, source, origin FROM column_labels").fetchall())
    assert found == {
        (name, "email", "pii.email", "spark", "column comment"),
        (name, "ssn", "pii", "spark", "table property lineage.classification.ssn"),
        (name, "ssn", "confidential", "spark", "table property lineage.classification.ssn")}
    cols = {c["column"]: c for c in column_labels(open_store(lineage.store), f"file:{out}")["columns"]}
    assert [(x["label"], x["source"]) for x in cols["email"]["labels"]] == [("pii.email", "propagated")]
    assert cols["ssn_hash"]["labels"] == [] and {m["label"] for m in cols["ssn_hash"]["masked"]} == {
        "pii", "confidential"}
    assert cols["country"]["labels"] == []
