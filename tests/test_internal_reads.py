"""Spark's own schema inference is not user lineage: reading a CSV with
``header``/``inferSchema`` makes Spark read the file as text (``head``, and ``rdd`` on Spark 4)
before the user's query exists. No queries row, no phantom ``value`` column, no edges."""
from __future__ import annotations

from pathlib import Path

import duckdb


def _store_rows(store: Path, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def test_csv_schema_inference_is_not_a_query(lineage, spark, tmp_path):
    csv = tmp_path / "customers.csv"
    csv.write_text("id,name,amount\n1,ann,2.5\n2,bob,3.0\n")
    src, out = f"file:{csv}", tmp_path / "out"

    def job():
        df = spark.read.option("header", True).option("inferSchema", True).csv(str(csv))
        df.write.parquet(str(out))

    got = lineage.run(job)
    assert [(q["action"], q["target_dataset"]) for q in got.queries] == [("command", f"file:{out}")]
    assert set(_store_rows(lineage.store, "SELECT column_name, data_type FROM dataset_columns WHERE dataset = ?",
                           [src])) == {("id", "integer"), ("name", "string"), ("amount", "double")}
    assert got.simple() == {("id", "id", "identity"), ("name", "name", "identity"),
                            ("amount", "amount", "identity")}
    assert {e.source_dataset for e in got.edges} == {src}


def test_json_inference_and_users_own_text_reads_are_kept_apart(lineage, spark, tmp_path):
    js = tmp_path / "events.json"
    js.write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": "y"}\n')
    csv = tmp_path / "lines.csv"
    csv.write_text("k,v\n1,a\n")
    out = tmp_path / "events_out"
    got = lineage.run(lambda: spark.read.json(str(js)).write.parquet(str(out)))
    assert [(q["action"], q["target_dataset"]) for q in got.queries] == [("command", f"file:{out}")]
    assert {r[0] for r in _store_rows(lineage.store, "SELECT column_name FROM dataset_columns WHERE dataset = ?",
                                      [f"file:{js}"])} == {"a", "b"}

    # a user's own reads of the file as text through the very actions inference uses (the JVM
    # Dataset's head and rdd, as a Scala job calls them) are lineage
    got = lineage.run(lambda: (spark.read.text(str(csv))._jdf.head(), spark.read.text(str(csv))._jdf.rdd().count()))
    actions = sorted(q["action"] for q in got.queries)
    assert actions == (["head", "rdd"] if spark.version >= "4" else ["head"])  # 3.5 fires no `rdd` action
    assert {(e.target_column, e.source_dataset, e.source_column) for e in got.edges} == {
        ("value", f"file:{csv}", "value")}
