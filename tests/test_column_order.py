"""Columns keep their schema order: ``dataset_columns.ordinal``, the REST schema route and the UI's order."""
from __future__ import annotations

import json
import urllib.parse
import urllib.request

import duckdb

from tests.server_helpers import Server


def test_columns_are_stored_and_served_in_schema_order(spark, lineage, tmp_path):
    src = tmp_path / "src"
    spark.sql("SELECT 1 AS zeta, 'a' AS alpha, named_struct('m', 1, 'b', 2) AS nest, 2.0D AS beta") \
        .write.mode("overwrite").parquet(str(src))
    out = tmp_path / "out"
    captured = lineage.run(lambda: spark.read.parquet(str(src)).selectExpr("beta", "zeta AS omega", "alpha")
                           .write.mode("overwrite").parquet(str(out)))
    assert captured.queries, "the write was not captured"
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        order = {ds: [c for c, _ in rows] for ds, rows in _by_dataset(con.execute(
            "SELECT dataset, column_name, ordinal FROM dataset_columns ORDER BY dataset, ordinal").fetchall()).items()}
    assert order[f"file:{src}"] == ["zeta", "alpha", "nest", "nest.m", "nest.b", "beta"]
    assert order[f"file:{out}"] == ["beta", "omega", "alpha"]

    server = Server(lineage.store, token=None).start()
    try:
        q = urllib.parse.urlencode({"dataset": f"file:{out}"})
        with urllib.request.urlopen(f"{server.url}/api/schema?{q}", timeout=30) as r:
            body = json.load(r)
    finally:
        server.stop()
    assert [c["name"] for c in body["columns"]] == ["beta", "omega", "alpha"]
    assert [c["position"] for c in body["columns"]] == [1, 2, 3]


def test_a_store_without_ordinals_migrates_and_lists_old_columns_last(tmp_path):
    """A schema-4 store (no ``ordinal``) gains the column on first write; its old rows sort by name, last."""
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.rows import row_of
    from lineage_listener.store.writer import StoreWriter

    store = tmp_path / "old.duckdb"
    writer = StoreWriter(store)
    first = Batch()
    first.add(row_of("dataset_columns", ("file:/d", "b", "int", True, "2026-01-01 00:00:00", "2026-01-01 00:00:00")))
    assert writer.write(first)
    with duckdb.connect(str(store)) as con:
        con.execute("ALTER TABLE dataset_columns DROP COLUMN ordinal")
        con.execute("UPDATE schema_version SET version = 4")
    later = Batch()
    later.add(row_of("dataset_columns", ("file:/d", "z", "int", True, "2026-01-02 00:00:00", "2026-01-02 00:00:00", 1)))
    assert StoreWriter(store).write(later)
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("SELECT column_name, ordinal FROM dataset_columns "
                           "ORDER BY ordinal NULLS LAST, column_name").fetchall()
    assert rows == [("z", 1), ("b", None)]


def _by_dataset(rows):
    out: dict[str, list] = {}
    for ds, col, pos in rows:
        out.setdefault(ds, []).append((col, pos))
    return out
