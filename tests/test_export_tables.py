"""``export tables``: the store's public tables as Parquet by capture day, read back by Spark SQL."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb

ROOT = Path(__file__).resolve().parents[1]


def test_exported_tables_answer_an_upstream_question_in_spark_sql(spark: Any, lineage: Any, tmp_path: Path) -> None:
    raw, clean, report = tmp_path / "raw", tmp_path / "clean", tmp_path / "report"
    spark.sql("SELECT * FROM VALUES (1, 'a', 5.0D), (2, 'b', 7.5D) AS t(id, region, amount)") \
        .write.parquet(str(raw))
    lineage.run(lambda: spark.read.parquet(str(raw)).selectExpr("id", "region", "amount * 1.25 AS gross")
                .write.parquet(str(clean)))
    lineage.run(lambda: spark.read.parquet(str(clean)).groupBy("region").agg({"gross": "sum"})
                .withColumnRenamed("sum(gross)", "total").write.parquet(str(report)))
    out = tmp_path / "tables"
    done = subprocess.run([sys.executable, "-m", "lineage_listener", "export", "tables", "--store",
                           str(lineage.store), str(out)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert {p.name for p in out.iterdir()} == {"column_lineage", "queries", "runs", "datasets", "streams"}
    spark.read.parquet(str(out / "column_lineage")).createOrReplaceTempView("exported_lineage")
    upstream = spark.sql(f"""
        SELECT DISTINCT hop2.source_dataset, hop2.source_column, hop1.transform, hop2.transform
        FROM exported_lineage hop1 JOIN exported_lineage hop2
          ON hop1.source_dataset = hop2.target_dataset AND hop1.source_column = hop2.target_column
        WHERE hop1.target_dataset = 'file:{report}' AND hop1.target_column = 'total'
          AND hop1.kind = 'direct' AND hop2.kind = 'direct'""").collect()
    assert [tuple(r) for r in upstream] == [(f"file:{raw}", "amount", "aggregate", "derived")]
    days = {r[0] for r in spark.read.parquet(str(out / "queries")).select("capture_day").collect()}
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        assert days == {r[0] for r in con.execute("SELECT DISTINCT CAST(captured_at AS DATE) FROM queries").fetchall()}
    assert spark.read.parquet(str(out / "streams")).count() == 0  # no stream: the columns, no rows
    assert "stream_id" in spark.read.parquet(str(out / "streams")).columns
