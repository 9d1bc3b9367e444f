"""``runs.ended_at`` is set however a script ends: ``disable()`` before ``spark.stop()`` included.

``disable()`` while the application goes on ends the run then (the end of its capture), and
nothing is written after: the application's later end does not move it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb


def test_disable_then_stop_records_ended_at(tmp_path):
    store = tmp_path / "ended.duckdb"
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        import lineage_listener
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        handle = lineage_listener.enable(spark, store={str(store)!r})
        spark.range(5).selectExpr("id * 3 AS x").collect()
        handle.flush()
        lineage_listener.disable(spark)
        import duckdb
        with duckdb.connect({str(store)!r}, read_only=True) as con:   # capture ended: so did the run
            print("ended at disable:", con.execute("SELECT ended_at FROM runs").fetchone()[0])
        spark.stop()
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.returncode == 0, proc.stderr[-2000:]
    with duckdb.connect(str(store), read_only=True) as con:
        runs = con.execute("SELECT started_at, ended_at FROM runs").fetchall()
        assert con.execute("SELECT target_column, transform FROM column_lineage").fetchall() == [("x", "derived")]
    assert len(runs) == 1
    started, ended = runs[0]
    assert ended is not None and ended >= started
    assert f"ended at disable: {ended}" in proc.stdout
