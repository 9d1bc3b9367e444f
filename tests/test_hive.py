"""Hive tables (HiveTableRelation, InsertIntoHiveTable, Hive CTAS) in a Hive-enabled Spark of its own."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb

JOB = """
import lineage_listener
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.warehouse.dir", {wh!r}).enableHiveSupport().getOrCreate())
handle = lineage_listener.enable(spark, store={store!r})
spark.sql("CREATE TABLE src (k INT, v STRING) STORED AS TEXTFILE")
spark.sql("INSERT INTO src VALUES (1, 'a')")
spark.sql("CREATE TABLE dst (k INT, vv STRING) STORED AS TEXTFILE")
spark.sql("INSERT INTO dst SELECT k, upper(v) FROM src")
spark.sql("CREATE TABLE ctas STORED AS TEXTFILE AS SELECT k * 2 AS k2 FROM src")
assert handle.flush(120)
spark.stop()
"""


def test_hive_tables(tmp_path: Path) -> None:
    store = tmp_path / "hive.duckdb"
    script = tmp_path / "hive_job.py"
    script.write_text(textwrap.dedent(JOB.format(wh=str(tmp_path / "wh"), store=str(store))))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.returncode == 0, proc.stderr[-3000:]
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
