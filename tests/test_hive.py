"""Hive tables (HiveTableRelation, InsertIntoHiveTable, Hive CTAS) in a Hive-enabled Spark of its own
(``tests/hive_app.py``)."""
from __future__ import annotations

from pathlib import Path

import duckdb


def test_hive_tables(hive_app: Path) -> None:
    store = hive_app / "hive.duckdb"
    with duckdb.connect(str(store), read_only=True) as con:
        queries = con.execute("SELECT command, target_dataset FROM queries ORDER BY captured_at").fetchall()
        edges = set(con.execute("SELECT target_dataset, target_column, source_dataset, source_column, transform "
                                "FROM column_lineage WHERE source_dataset LIKE 'spark_catalog.%'").fetchall())
        fmt = con.execute("SELECT format FROM datasets WHERE dataset = 'spark_catalog.default.src'").fetchone()
        errors = con.execute("SELECT count(*) FROM capture_errors").fetchone()[0]
    assert queries == [("InsertIntoHiveTable", "spark_catalog.default.src"),
                       ("InsertIntoHiveTable", "spark_catalog.default.dst"),
                       ("CreateHiveTableAsSelectCommand", "spark_catalog.default.ctas")]
    assert edges == {
        ("spark_catalog.default.dst", "k", "spark_catalog.default.src", "k", "identity"),
        ("spark_catalog.default.dst", "vv", "spark_catalog.default.src", "v", "derived"),
        ("spark_catalog.default.ctas", "k2", "spark_catalog.default.src", "k", "derived"),
    }
    assert fmt == ("hive",)
    assert errors == 0
