"""A CTAS / saveAsTable names its table, not its path, and the store is the same whichever way the
rename is applied: in the batch (both events in one batch, the usual case) or in SQL afterwards."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

import lineage_listener
from lineage_listener.plan.classes import WRAPPER_COMMANDS
from lineage_listener.store import retarget
from lineage_listener.store.batch import Batch
from lineage_listener.store.writer import StoreWriter

TABLES = {
    "queries": "query_id, action, command, status, target_dataset",
    "datasets": "dataset, kind, format, location, properties",
    "dataset_columns": "dataset, column_name, data_type, nullable, ordinal",
    "column_lineage": "query_id, target_dataset, target_column, source_dataset, source_column, transform, kind, "
                      "expression, masking",
}


def contents(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return {t: sorted(con.execute(f"SELECT {cols} FROM {t}").fetchall(), key=repr) for t, cols in TABLES.items()}


def split(batch: Batch) -> list[Batch]:
    """The batch as two: everything, then its retargets (the inner write already in the store)."""
    first, second = Batch(), Batch()
    for table, rows in batch.rows.items():
        (second if table == "retarget" else first).rows[table].extend(rows)
    return [first, second]


def test_the_retarget_in_the_batch_equals_the_one_in_the_store(spark, people, tmp_path, monkeypatch):
    batches: list[Batch] = []
    store = tmp_path / "folded.duckdb"
    handle = lineage_listener.enable(spark, store=str(store), after_write=lambda b: batches.append(b))
    try:
        spark.sql("CREATE TABLE rt_ctas USING parquet AS SELECT id, upper(name) AS u FROM people")
        spark.table("people").selectExpr("id", "amount * 2 AS a2").write.mode("overwrite").saveAsTable("rt_saved")
        spark.sql("INSERT INTO rt_saved SELECT id, amount FROM people")
        assert handle.flush(60)
    finally:
        lineage_listener.disable(spark)
        spark.sql("DROP TABLE IF EXISTS rt_ctas")
        spark.sql("DROP TABLE IF EXISTS rt_saved")
    assert any(b.rows["retarget"] for b in batches), "a CTAS gives a retarget instruction"
    folded = contents(store)
    assert {q[-1] for q in folded["queries"]} >= {"spark_catalog.default.rt_ctas", "spark_catalog.default.rt_saved"}
    assert not any(d[1] == "path" and d[0].rstrip("/").endswith(("/rt_ctas", "/rt_saved")) for d in folded["datasets"]), \
        "no dataset for a table's own location"
    with duckdb.connect(str(store), read_only=True) as con:
        stray = con.execute("SELECT count(*) FROM edges WHERE target_dataset LIKE 'file:%'").fetchone()[0]
    assert stray == 0, "the path-named edges are never written"

    in_sql = tmp_path / "in_sql.duckdb"  # the same batches, the rename applied in SQL after the write
    writer = StoreWriter(in_sql)
    with monkeypatch.context() as m:
        m.setattr(retarget, "in_batch", lambda rows: {t: list(r) for t, r in rows.items()})
        assert all(writer.write(b) for b in batches)
    assert contents(in_sql) == folded

    later = tmp_path / "later.duckdb"  # the wrapper's retarget in a later batch than the inner write
    writer = StoreWriter(later)
    assert all(writer.write(part) for b in batches for part in split(b))
    assert contents(later) == folded
    assert all(writer.write(b) for b in batches)  # replayed: nothing twice
    assert contents(later) == folded


def test_a_wrapper_in_the_next_batch_moves_the_edges_and_forgets_the_path(spark, people, tmp_path):
    """Each event its own batch: the saveAsTable's nested write is stored under the path, then its
    wrapper's batch (the upgraded queries row, the table, the retarget) moves it to the table."""
    batches: list[Batch] = []
    store = tmp_path / "apart.duckdb"
    handle = lineage_listener.enable(spark, store=str(store), max_batch_rows=1, after_write=batches.append)
    try:
        spark.table("people").selectExpr("id", "amount * 2 AS a2").write.mode("overwrite").saveAsTable("rt_apart")
        assert handle.flush(60)
    finally:
        lineage_listener.disable(spark)
        spark.sql("DROP TABLE IF EXISTS rt_apart")
    [wrapper] = [b for b in batches if b.rows["retarget"]]
    assert not wrapper.rows["column_lineage"], "the wrapper came in a batch of its own, after the nested write"
    [(query_id, table, path)] = wrapper.rows["retarget"]
    assert table == "spark_catalog.default.rt_apart" and path.rstrip("/").endswith("/rt_apart")
    with duckdb.connect(str(store), read_only=True) as con:
        [(stored_id, command, target)] = con.execute("SELECT query_id, command, target_dataset FROM queries").fetchall()
        assert (stored_id, target) == (query_id, table) and command in WRAPPER_COMMANDS
        assert con.execute("SELECT DISTINCT target_dataset FROM column_lineage").fetchall() == [(table,)]
        assert set(con.execute("SELECT target_column, transform FROM column_lineage").fetchall()) == {
            ("id", "identity"), ("a2", "derived")}
        assert con.execute("SELECT count(*) FROM datasets WHERE dataset = ?", [path]).fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM dataset_columns WHERE dataset = ?", [path]).fetchone()[0] == 0
        assert con.execute("SELECT location FROM datasets WHERE dataset = ?", [table]).fetchone()[0] == path
        assert con.execute("SELECT column_name FROM dataset_columns WHERE dataset = ? ORDER BY ordinal",
                           [table]).fetchall() == [("id",), ("a2",)]
