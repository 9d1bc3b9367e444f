"""The notebook flow: ``enable()``, actions, ``disable()``, then the user's own connection to the store.

After ``disable()`` returns (and after ``flush()``, streams included) the store is complete and
closed: the run's end is written, nothing waits for interpreter exit, and a connection the user
keeps open in the same process (read-only or not, DuckDB allows one configuration per file per
process) never makes capture warn or spool. Scripts run as real processes, so exit is exercised.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import duckdb

import lineage_listener
from lineage_listener.store import spool

ROOT = Path(__file__).resolve().parents[1]

PRELUDE = """
    import duckdb, lineage_listener
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
"""


def run_script(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(PRELUDE) + textwrap.dedent(body))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def assert_clean(store: Path, proc: subprocess.CompletedProcess) -> None:
    """No capture line on stderr, nothing spooled beside the store or in the temp spool folder."""
    said = [line for line in proc.stderr.splitlines() if "lineage-listener" in line]
    assert said == [], said
    assert spool.pending(store.absolute()) == []
    assert not any(d.exists() for d in spool.dirs(store.absolute())), spool.dirs(store.absolute())


def test_read_only_connection_after_disable_and_open_store(tmp_path: Path) -> None:
    """The README's flow, verbatim: the user's read-only connection stays open until exit."""
    proc = run_script(tmp_path, """
        h = lineage_listener.enable(spark, store="l.duckdb")
        spark.range(5).selectExpr("id as k").write.parquet("out")
        lineage_listener.disable(spark)
        con = duckdb.connect("l.duckdb", read_only=True)   # the user queries the lineage with SQL
        print("edges", con.execute("select count(*) from column_lineage").fetchone()[0])
        print("ended", con.execute("select count(*) from runs where ended_at is not null").fetchone()[0])
        store = lineage_listener.open_store("l.duckdb")      # read-only too: the same configuration
        graph = store.upstream("file:" + __import__("os").path.abspath("out"), "k")
        print("upstream", sorted(c for _, c in graph.nodes))
        print("sql", store.sql("select count(*) from queries").fetchall()[0][0])  # kept open until exit
    """)
    assert_clean(tmp_path / "l.duckdb", proc)
    assert "edges 1" in proc.stdout and "ended 1" in proc.stdout, proc.stdout
    assert "upstream ['id', 'k']" in proc.stdout and "sql 1" in proc.stdout, proc.stdout


def test_stream_flush_disable_stop_then_read_write_connection(tmp_path: Path) -> None:
    """A stream: flush(), disable(), spark.stop(), then a read-write connection held until exit."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "0.json").write_text('{"id": 1, "name": "ann"}\n')
    proc = run_script(tmp_path, """
        h = lineage_listener.enable(spark, store="l.duckdb")
        q = (spark.readStream.schema("id INT, name STRING").json("in").selectExpr("id", "upper(name) AS u")
             .writeStream.format("parquet").option("path", "out").option("checkpointLocation", "ck").start())
        q.processAllAvailable()
        h.flush()
        con = duckdb.connect("l.duckdb", read_only=True)   # after flush(): the stream's batch is there
        print("stream edges", con.execute("select count(*) from column_lineage").fetchone()[0])
        con.close()
        lineage_listener.disable(spark)
        spark.stop()
        con = duckdb.connect("l.duckdb")
        print("ended", con.execute("select count(*) from runs where ended_at is not null").fetchone()[0])
    """)
    assert_clean(tmp_path / "l.duckdb", proc)
    assert "stream edges 2" in proc.stdout and "ended 1" in proc.stdout, proc.stdout


def test_long_lived_process_enables_twice_with_the_users_connection_open(
        spark: Any, tmp_path: Path, caplog: Any) -> None:
    """A notebook kernel: capture on and off twice, the user's connection open throughout the second
    half; the run ends at each disable() and is reopened by the capture enabled in between."""
    store = tmp_path / "l.duckdb"
    caplog.set_level(logging.WARNING, logger="lineage_listener")

    lineage_listener.enable(spark, store=str(store))
    spark.range(3).selectExpr("id AS a").write.parquet(str(tmp_path / "one"))
    lineage_listener.disable(spark)
    with duckdb.connect(str(store), read_only=True) as ro:  # querying between the two captures
        (first_end,) = ro.execute("SELECT ended_at FROM runs").fetchone()
        assert first_end is not None
        assert ro.execute("SELECT count(*) FROM column_lineage").fetchone() == (1,)

    con = duckdb.connect(str(store))  # the user's own connection, left open from here on
    try:
        handle = lineage_listener.enable(spark, store=str(store))
        spark.range(3).selectExpr("id * 2 AS b").write.parquet(str(tmp_path / "two"))
        assert handle.flush(60)
        assert con.execute("SELECT count(*), count(ended_at) FROM runs").fetchone() == (1, 0)  # reopened
        assert con.execute("SELECT count(*) FROM column_lineage").fetchone() == (2,)
        lineage_listener.disable(spark)
        (second_end,) = con.execute("SELECT ended_at FROM runs").fetchone()
        assert second_end is not None and second_end >= first_end
        assert con.execute("SELECT count(*) FROM column_lineage").fetchone() == (2,)
    finally:
        con.close()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("lineage_listener")] == []
    assert spool.pending(store) == []


def test_disabling_one_session_keeps_the_run_of_another_open(spark: Any, tmp_path: Path) -> None:
    """Two sessions of one application capture into one store: the run ends with the last capture."""
    store = tmp_path / "l.duckdb"
    other = spark.newSession()
    lineage_listener.enable(spark, store=str(store))
    handle = lineage_listener.enable(other, store=str(store))
    try:
        spark.range(2).selectExpr("id AS b").write.parquet(str(tmp_path / "b"))
        other.range(2).selectExpr("id AS c").write.parquet(str(tmp_path / "c"))
        assert handle.flush(60)
        lineage_listener.disable(spark)
        with duckdb.connect(str(store), read_only=True) as con:
            assert con.execute("SELECT count(*), count(ended_at) FROM runs").fetchone() == (1, 0)
    finally:
        lineage_listener.disable(other)
        lineage_listener.disable(spark)
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*), count(ended_at) FROM runs").fetchone() == (1, 1)


def test_a_reopened_run_is_ended_by_the_end_written_with_it(tmp_path: Path) -> None:
    """``run_reopened`` clears an end before the batch's own ``runs`` rows: an end in the same batch holds."""
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.rows import row_of
    from lineage_listener.store.writer import StoreWriter

    writer = StoreWriter(tmp_path / "l.duckdb")

    def run(ended: str | None, reopen: bool) -> Batch:
        b = Batch()
        if reopen:
            b.add(row_of("run_reopened", ("app-1",)))
        b.add(row_of("runs", ("app-1", "app-1", "job", "4.0", "u", "local", "2026-01-01 10:00:00", ended)))
        return b

    def ended() -> Any:
        with duckdb.connect(str(writer.path), read_only=True) as con:
            return con.execute("SELECT ended_at FROM runs").fetchone()[0]

    assert writer.write(run("2026-01-01 11:00:00", reopen=True)) and str(ended()) == "2026-01-01 11:00:00"
    assert writer.write(run(None, reopen=False)) and str(ended()) == "2026-01-01 11:00:00"  # nulls clear nothing
    assert writer.write(run(None, reopen=True)) and ended() is None
    both = run(None, reopen=True)
    both.extend(run("2026-01-01 12:00:00", reopen=False))
    assert writer.write(both) and str(ended()) == "2026-01-01 12:00:00"


def test_a_read_only_connection_held_while_capture_writes_is_named(tmp_path: Path, caplog: Any) -> None:
    """While capture is on, a read-only connection of the same process blocks its writes: one line says
    so and how to avoid it, the batch is spooled and written once the connection is closed."""
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.rows import row_of
    from lineage_listener.store.writer import StoreWriter

    writer = StoreWriter(tmp_path / "l.duckdb", lock_timeout=0.5)
    b = Batch()
    b.add(row_of("runs", ("app-1", "app-1", "job", "4.0", "u", "local", "2026-01-01 10:00:00", None)))
    assert writer.write(b)
    caplog.set_level(logging.WARNING, logger="lineage_listener")
    with duckdb.connect(str(writer.path), read_only=True):
        assert not writer.write(b) and not writer.write(b)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "read-only connection" in said[0] and "after flush() or disable()" in said[0], said
    assert len(writer.spooled()) == 2
    assert writer.write(Batch()) and writer.spooled() == []

