"""Capture never breaks the job: bad stores, locks, failing queries, unknown plan nodes."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

import lineage_listener
from lineage_listener.lineage import nodes
from lineage_listener.store.writer import StoreWriter


def test_unwritable_store_spools_and_job_succeeds(spark, people, tmp_path, caplog):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where the store's folder should be")
    store = blocker / "lineage.duckdb"
    handle = lineage_listener.enable(spark, store=str(store), lock_timeout=0.5)
    try:
        rows = spark.sql("SELECT name FROM people").collect()
        assert len(rows) == 3  # the job itself is unaffected
        assert handle.flush(60) is False  # not in the store...
        spooled = StoreWriter(store).spooled()
        assert spooled, "captured lineage must be spooled, not dropped"  # ...but kept
        assert "spooled" in caplog.text
    finally:
        lineage_listener.disable(spark)
    for f in spooled:
        f.unlink()


def test_locked_store_edges_arrive_after_release(spark, people, tmp_path):
    store = tmp_path / "locked.duckdb"
    duckdb.connect(str(store)).close()
    ready, release = tmp_path / "locked.ready", tmp_path / "locked.release"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import duckdb, time, pathlib
        con = duckdb.connect({str(store)!r})
        pathlib.Path({str(ready)!r}).write_text("x")
        deadline = time.monotonic() + 120  # held until the test says so (or two minutes)
        while not pathlib.Path({str(release)!r}).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    """)])
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        handle = lineage_listener.enable(spark, store=str(store), lock_timeout=0.5)
        spark.sql("SELECT upper(name) AS u FROM people").collect()
        assert handle.flush(60) is False  # locked by the other process: spooled
        release.write_text("x")
        assert holder.wait(30) == 0
        assert handle.flush(60) is True  # released: the spool is ingested first
    finally:
        lineage_listener.disable(spark)
        holder.kill()
    with duckdb.connect(str(store), read_only=True) as con:
        edges = con.execute("SELECT target_column, source_column, transform FROM column_lineage").fetchall()
    assert edges == [("u", "name", "derived")]
    assert StoreWriter(store).spooled() == []


def test_unknown_plan_node_falls_back_to_derived(lineage, people, monkeypatch, caplog):
    monkeypatch.delitem(nodes.HANDLERS, "Generate")
    got = lineage.run("SELECT name, explode(tags) AS tag FROM people")
    assert ("tag", "tags", "derived") in got.simple()
    assert ("name", "name", "identity") in got.simple()
    assert got.queries[0]["status"] == "succeeded"
    assert "unknown plan node Generate" in caplog.text


def test_script_transformation_node(lineage, spark, people):
    got = lineage.run("SELECT TRANSFORM(name, dept) USING 'cat' AS (n STRING, d STRING) FROM people")
    assert {(t, s) for t, s, _ in got.simple("direct")} >= {("n", "name"), ("n", "dept"), ("d", "name")}
    assert {tr for _, _, tr in got.simple("direct")} == {"derived"}


def test_walker_crash_is_recorded_not_raised(lineage, people, monkeypatch):
    def boom(node, walk):
        raise RuntimeError("walker exploded")
    monkeypatch.setitem(nodes.HANDLERS, "Filter", boom)
    got = lineage.run("SELECT name FROM people WHERE amount > 1")
    assert [q["status"] for q in got.queries] == ["lineage_error"]
    assert "walker exploded" in got.queries[0]["error"]
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM capture_errors WHERE stage = 'walk'").fetchone()[0] == 1


def test_enabling_twice_does_not_double_capture(lineage, spark, people):
    again = lineage_listener.enable(spark, store=str(lineage.store))
    assert again is lineage.handle
    got = lineage.run("SELECT id FROM people")
    assert len(got.queries) == 1 and len(got.edges) == 1


@pytest.mark.parametrize("stop", [True, False])
def test_script_exits_promptly(tmp_path, stop):
    store = tmp_path / "exit.duckdb"
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        import lineage_listener
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        lineage_listener.enable(spark, store={str(store)!r})
        spark.range(5).selectExpr("id * 3 AS x").collect()
        {"spark.stop()" if stop else "pass"}
    """))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.returncode == 0, proc.stderr[-2000:]
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT target_column, transform FROM column_lineage").fetchall() == [("x", "derived")]
        assert con.execute("SELECT ended_at IS NOT NULL FROM runs").fetchone()[0]
    assert time.monotonic() - started < 120


def test_enable_on_a_connect_client_says_where_capture_goes():
    class ConnectSession:  # what a Spark Connect client session looks like from here: no _jsparkSession
        __module__ = "pyspark.sql.connect.session"

    with pytest.raises(TypeError, match="Spark Connect client.*start-connect-server.sh"):
        lineage_listener.enable(ConnectSession())
