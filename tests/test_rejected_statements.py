"""Statements Spark rejects during analysis: one failed ``queries`` row each with
the action, the SQL text, Spark's error class and message; no edges, no datasets, and no log
line above debug. Spark 4 reports them to listeners (action ``analyze``); Spark 3.5 does not
call listeners for them at all, so there they leave no trace (and still no log line)."""
from __future__ import annotations

import logging
from pathlib import Path

import duckdb
import pytest

pytest.importorskip("lineage_listener.capture.pipeline")

#: (statement, error class Spark 4 gives it)
REJECTED = [
    ("SELECT nosuchcol FROM range(3) WHERE 'password=hunter2' IS NOT NULL", "UNRESOLVED_COLUMN.WITH_SUGGESTION"),
    ("INSERT INTO no_such_table SELECT 1", "TABLE_OR_VIEW_NOT_FOUND"),
    ("SELECT id + array(1) AS v FROM range(3)", "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES"),
    ("SELECT id FROM range(2) a JOIN range(2) b ON true", "AMBIGUOUS_REFERENCE"),
]
DATAFRAME_CLASS = "UNRESOLVED_COLUMN.WITH_SUGGESTION"  # spark.range(3).select("zzz")


def reports_rejections(spark_version: str) -> bool:
    """Spark 4 calls ``onFailure("analyze", ...)``; 3.5's ``QueryExecution`` has no such call."""
    return int(spark_version.split(".")[0]) >= 4


def rows(store: Path, sql: str) -> list[tuple]:
    if not store.exists():
        return []
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql).fetchall()


def loud_lines(text: str) -> list[str]:
    """Console lines lineage-listener wrote at warning level or above."""
    return [line for line in text.splitlines() if "lineage" in line.lower()
            and any(level in line for level in ("WARN", "ERROR", "CRITICAL", "could not"))]


def test_rejected_statements_in_process(lineage, spark, tmp_path, caplog, capfd):
    caplog.set_level(logging.DEBUG, logger="lineage_listener")

    def rejected():
        for sql, _ in REJECTED:
            with pytest.raises(Exception, match="AnalysisException|cannot|ambiguous|mismatch"):
                spark.sql(sql)
        with pytest.raises(Exception, match="zzz"):
            spark.range(3).select("zzz")

    got = lineage.run(rejected)
    loud = [r for r in caplog.records if r.name.startswith("lineage_listener") and r.levelno > logging.DEBUG]
    assert loud == [], [r.getMessage() for r in loud]
    err = capfd.readouterr().err
    assert loud_lines(err) == []
    # PySpark logs each analysis error it converts: once for the user's call, never again for capture's
    assert err.count("QueryContextLogger") <= len(REJECTED) + 1

    assert got.edges == []
    assert rows(lineage.store, "SELECT * FROM datasets") == []
    assert rows(lineage.store, "SELECT * FROM dataset_columns") == []
    if not reports_rejections(spark.version):  # measured: Spark 3.5 never calls the listener
        assert got.queries == []
        return
    assert len(got.queries) == len(REJECTED) + 1
    assert {(q["action"], q["status"], q["target_dataset"]) for q in got.queries} == {("analyze", "failed", None)}
    by_sql = {q["sql_text"]: q for q in got.queries}
    for sql, error_class in REJECTED:
        stored = sql.replace("hunter2", "***")  # redacted as every stored text is
        assert stored in by_sql, sorted(map(str, by_sql))
        assert f"[{error_class}]" in by_sql[stored]["error"], by_sql[stored]["error"]
    assert by_sql[None]["error"].startswith("ExtendedAnalysisException: [UNRESOLVED_COLUMN")
    assert "`zzz`" in by_sql[None]["error"]
    assert by_sql["INSERT INTO no_such_table SELECT 1"]["command"] == "InsertIntoStatement"
    assert not any("hunter2" in str(v) for q in got.queries for v in q.values())
    assert not any("\n'Project" in q["error"] for q in got.queries)  # the unresolved plan is not stored

    # no edges, so no graph answer can reach them; one row each in the store for audits
    failed = rows(lineage.store, "SELECT count(*) FROM queries WHERE status = 'failed' AND action = 'analyze'")
    assert failed == [(len(REJECTED) + 1,)]

def test_rejected_statements_zero_code(tmp_path):
    """One spark-submit job, every error class, through the JVM bridge."""
    from tests.test_bridge_jobs import capture_args, run_job
    from lineage_listener.jar import bridge_jar

    bridge_jar()
    script = tmp_path / "job.py"
    out = tmp_path / "out"
    script.write_text(
        "import json, sys\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.appName('rejected_job').getOrCreate()\n"
        "failed = 0\n"
        f"for sql in {[s for s, _ in REJECTED]!r}:\n"
        "    try:\n"
        "        spark.sql(sql)\n"
        "    except Exception:\n"
        "        failed += 1\n"
        "try:\n"
        "    spark.range(3).select('zzz')\n"
        "except Exception:\n"
        "    failed += 1\n"
        f"spark.range(3).selectExpr('id AS kept').write.parquet({str(out)!r})\n"
        "print('REJECTED', failed, spark.version)\n"
        "spark.stop()\n")
    store = tmp_path / "lineage.duckdb"
    rc, stdout, err = run_job([*capture_args(store), str(script)], tmp_path)
    assert rc == 0, stdout[-2000:] + err[-3000:]
    line = [ln for ln in stdout.splitlines() if ln.startswith("REJECTED")][0]
    _, failed, version = line.split()
    assert int(failed) == len(REJECTED) + 1
    assert loud_lines(err) == [], loud_lines(err)
    kept = rows(store, "SELECT target_column, source_dataset, source_column, transform FROM column_lineage")
    assert [(t, c, tr) for t, _, c, tr in kept] == [("kept", "id", "rename")]
    # the only datasets are the good write's: nothing named after a rejected statement
    assert {r[0] for r in rows(store, "SELECT dataset FROM datasets")} == {f"file:{out}", kept[0][1]}
    got = rows(store, "SELECT sql_text, error, target_dataset, status FROM queries WHERE action = 'analyze'")
    if not reports_rejections(version):
        assert got == []
        return
    assert len(got) == len(REJECTED) + 1
    assert {(r[2], r[3]) for r in got} == {(None, "failed")}
    by_sql = {r[0]: r[1] for r in got}
    for sql, error_class in REJECTED:
        assert f"[{error_class}]" in by_sql[sql.replace("hunter2", "***")]
    assert "[UNRESOLVED_COLUMN" in by_sql[None] and "`zzz`" in by_sql[None]
    assert not any("hunter2" in str(v) for r in got for v in r)
