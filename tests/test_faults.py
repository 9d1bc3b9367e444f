"""The fault matrix: full, read-only, corrupt, old, newer and busy stores, SIGTERM.

Faults are injected for real: a tiny or read-only tmpfs mount where the machine
allows mounting (root), else the test is skipped with the reason. Each test counts
the edges it expected against the edges found, and grep the raw files it left.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
import pytest

import lineage_listener
from lineage_listener.cli import main as cli_main
from lineage_listener.store import doctor, spool
from lineage_listener.store.batch import Batch
from lineage_listener.store.schema import SCHEMA_VERSION, schema_sql

ROOT = Path(__file__).resolve().parents[1]
QUERY = "SELECT upper(name) AS u, amount * 2 AS a FROM people WHERE id > 0"
EXPECTED = {("u", "name", "derived"), ("a", "amount", "derived"), (None, "id", "filter")}


@contextmanager
def tmpfs(where: Path, size: str = "4m") -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip()}): fault needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def remount(where: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True)


def fill(where: Path) -> Path:
    """Fill the file system at ``where`` to the last byte."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def edges(store: Path) -> set[tuple]:
    with duckdb.connect(str(store), read_only=True) as con:
        return set(con.execute("SELECT target_column, source_column, transform FROM column_lineage").fetchall())


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """The per-store temp spool folder of this test lives under tmp_path (inspectable, removable)."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def capture_once(spark, store: Path, **options) -> tuple[object, bool]:
    handle = lineage_listener.enable(spark, store=str(store), lock_timeout=0.5, **options)
    spark.sql(QUERY).collect()
    return handle, handle.flush(60)


def test_full_disk_on_first_write_leaves_no_partial_store(spark, people, tmp_path, private_tmp):
    disk = tmp_path / "disk"
    with tmpfs(disk, "8m"):
        store = disk / "lineage.duckdb"
        filler = fill(disk)
        try:
            handle, ok = capture_once(spark, store)
            assert ok is False
            assert not store.exists(), "a full disk must not leave a (0-byte) store behind"
            left = [p for p in disk.rglob("*") if p.is_file() and p.name not in ("filler", "lineage.duckdb.lock")]
            assert left == [], "no partial store, temporary or spool file on the full disk"
            assert not list(private_tmp.rglob("*.tmp"))
            assert spool.pending(store), "lineage must wait in the spool"
            filler.unlink()  # space again: the next write creates the store and ingests the spool
            assert handle.flush(60) is True
        finally:
            lineage_listener.disable(spark)
        assert edges(store) == EXPECTED
        assert spool.pending(store) == []


def test_nothing_writable_holds_in_memory_then_writes(spark, people, tmp_path, private_tmp, caplog):
    disk = tmp_path / "ro"
    with tmpfs(disk, "8m"):
        store = disk / "lineage.duckdb"
        remount(disk, "ro")
        os.chmod(private_tmp, 0o500)
        remount_tmp = tmp_path / "tmpro"
        with tmpfs(remount_tmp, "1m"):
            remount(remount_tmp, "ro")
            tempfile.tempdir = str(remount_tmp)  # the fallback spool folder is read-only too
            caplog.set_level(logging.WARNING)
            try:
                handle, ok = capture_once(spark, store)
                assert ok is False
                assert "holding" in caplog.text and "rows in memory" in caplog.text
                assert "kept in memory" not in caplog.text
                remount(disk, "rw")
                assert handle.flush(60) is True
            finally:
                lineage_listener.disable(spark)
        assert edges(store) == EXPECTED


def test_dropped_rows_are_counted_and_recorded(spark, people, tmp_path, private_tmp, caplog):
    disk = tmp_path / "ro"
    with tmpfs(disk, "8m"):
        store = disk / "lineage.duckdb"
        remount(disk, "ro")
        ro_tmp = tmp_path / "tmpro"
        with tmpfs(ro_tmp, "1m"):
            remount(ro_tmp, "ro")
            tempfile.tempdir = str(ro_tmp)
            handle = lineage_listener.enable(spark, store=str(store), lock_timeout=0.5)
            handle.capture.writer.max_held_rows = 1  # the second batch pushes the first out
            try:
                spark.sql(QUERY).collect()
                assert handle.flush(60) is False
                spark.sql("SELECT id FROM people").collect()
                assert handle.flush(60) is False
                assert "dropped" in caplog.text
                remount(disk, "rw")
                assert handle.flush(60) is True
            finally:
                lineage_listener.disable(spark)
        with duckdb.connect(str(store), read_only=True) as con:
            recorded = con.execute("SELECT error FROM capture_errors WHERE error LIKE '%dropped%'").fetchall()
            kept = set(con.execute("SELECT target_column, source_column FROM column_lineage").fetchall())
        assert len(recorded) == 1 and "of 1 queries were dropped" in recorded[0][0]
        assert kept == {("id", "id")}  # the newest batch was kept, the oldest counted as dropped


def test_corrupt_store_spools_and_doctor_recovers(spark, people, tmp_path, private_tmp, caplog):
    store = tmp_path / "lineage.duckdb"
    store.write_bytes(b"this is not a duckdb file" * 100)
    try:
        _, ok = capture_once(spark, store)
    finally:
        lineage_listener.disable(spark)
    assert ok is False
    assert "a person must act" in caplog.text and "doctor" in caplog.text
    assert "will be written on the next" not in caplog.text
    checked = doctor.examine(store)
    assert not checked.healthy and any("--move-corrupt" in line for line in checked.lines())
    files = spool.pending(store)
    rows = sum(len(Batch.from_json(f.read_text(encoding="utf-8"))) for f in files)
    assert rows and any(f"{len(files)} spooled batches ({rows} rows" in line for line in checked.lines())
    assert cli_main(["doctor", "--store", str(store), "--move-corrupt"]) == 0
    assert edges(store) == EXPECTED
    assert list(tmp_path.glob("lineage.duckdb.corrupt-*")), "the unreadable file is kept for a person"


def old_store(path: Path) -> None:
    """A store as the first release wrote it: no schema_version, queries without target_dataset."""
    with duckdb.connect(str(path)) as con:
        con.execute(schema_sql().split("CREATE OR REPLACE VIEW")[0].split("-- Problems capture met")[0])
        con.execute("ALTER TABLE queries DROP COLUMN target_dataset")
        con.execute("DROP TABLE edges; DROP TABLE edge_sets; DROP TABLE edge_captures")
        con.execute("""CREATE TABLE column_lineage (query_id TEXT, run_id TEXT, target_dataset TEXT,
                       target_column TEXT, source_dataset TEXT, source_column TEXT, transform TEXT, kind TEXT,
                       expression TEXT, masking BOOLEAN, captured_at TIMESTAMP)""")
        con.execute("INSERT INTO queries (query_id, status) VALUES ('old-1', 'succeeded')")
        con.execute("INSERT INTO column_lineage (query_id, target_column, source_column, transform) "
                    "VALUES ('old-1', 'x', 'y', 'identity')")


def test_older_store_is_migrated_in_place(spark, people, tmp_path):
    store = tmp_path / "old.duckdb"
    old_store(store)
    try:
        _, ok = capture_once(spark, store)
    finally:
        lineage_listener.disable(spark)
    assert ok is True
    assert edges(store) == EXPECTED | {("x", "y", "identity")}  # old rows kept, new ones added
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT max(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
        assert con.execute("SELECT count(*) FROM queries WHERE target_dataset IS NULL").fetchone()[0] >= 1
        assert con.execute("SELECT count(*) FROM capture_errors").fetchone()[0] == 0


def test_newer_store_is_left_alone_and_lineage_spooled(spark, people, tmp_path, private_tmp, caplog):
    store = tmp_path / "newer.duckdb"
    with duckdb.connect(str(store)) as con:
        con.execute(schema_sql())
        con.execute("CREATE TABLE schema_version (version INTEGER, applied_at TIMESTAMP, by_package TEXT)")
        con.execute("INSERT INTO schema_version VALUES (?, now(), 'future')", [SCHEMA_VERSION + 1])
    try:
        _, ok = capture_once(spark, store)
    finally:
        lineage_listener.disable(spark)
    assert ok is False
    assert "newer" in caplog.text and "doctor" in caplog.text
    assert edges(store) == set()
    spooled = [Batch.from_json(f.read_text()) for f in spool.pending(store)]  # the action; the run's end
    assert [len(b.rows["queries"]) for b in spooled] == [1, 0]
    assert [r[7] is not None for b in spooled for r in b.rows["runs"]] == [False, True]
    assert not doctor.examine(store).healthy


def hold_store(store: Path, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    ready, release = tmp_path / "hold.ready", tmp_path / "hold.release"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import duckdb, time, pathlib
        con = duckdb.connect({str(store)!r})
        pathlib.Path({str(ready)!r}).write_text("x")
        deadline = time.monotonic() + 120
        while not pathlib.Path({str(release)!r}).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    """)])
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return holder, release


def job(tmp_path: Path, store: Path, body: str, prelude: str = "") -> subprocess.Popen:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(prelude) + textwrap.dedent(f"""
        import sys
        from pyspark.sql import SparkSession
        import lineage_listener
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        lineage_listener.enable(spark, store={str(store)!r})
        for i in range(3):
            spark.range(5).selectExpr(f"id * {{i}} AS x{{i}}").collect()
    """) + textwrap.dedent(body))
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_busy_store_at_exit_spools_instead_of_stalling(tmp_path, private_tmp):
    store = tmp_path / "busy.duckdb"
    duckdb.connect(str(store)).close()
    holder, release = hold_store(store, tmp_path)
    try:
        started = time.monotonic()
        proc = job(tmp_path, store, "")
        _, err = proc.communicate(timeout=180)
        took = time.monotonic() - started
        assert proc.returncode == 0, err[-2000:]
        assert spool.pending(store), "the busy store's lineage waits in the spool"
        print(f"exit with a busy store took {took:.1f} s")
    finally:
        release.write_text("x")
        holder.wait(30)
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", "sql", "--store", str(store),
                           "SELECT count(*) FROM column_lineage"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[2] == "3", proc.stdout  # the CLI ingested the spool before answering
    assert spool.pending(store) == []


def test_cli_says_when_spooled_lineage_is_pending(tmp_path, private_tmp):
    store = tmp_path / "pending.duckdb"
    duckdb.connect(str(store)).close()
    holder, release = hold_store(store, tmp_path)
    try:
        from lineage_listener.store.batch import Batch
        assert spool.write(store.absolute(), Batch()) is not None
        proc = subprocess.run([sys.executable, "-m", "lineage_listener", "sql", "--store", str(store), "SELECT 1"],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        release.write_text("x")
        holder.wait(30)
    assert "1 spooled batches of captured lineage are not in this store yet" in proc.stderr


@pytest.mark.parametrize("own_handler, code", [(False, -signal.SIGTERM), (True, 3)])
def test_sigterm_flushes_completed_writes(tmp_path, own_handler, code):
    store = tmp_path / "term.duckdb"
    # The user's own handler is installed before enable(): ours runs first, then theirs decides.
    prelude = "import signal, sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(3))\n" if own_handler else ""
    proc = job(tmp_path, store, "import time\nprint('READY', flush=True)\ntime.sleep(120)\n", prelude)
    assert proc.stdout.readline().strip() == "READY"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err[-2000:]
    assert "SIGTERM: wrote captured lineage" in err
    assert edges(store) == {(f"x{i}", "id", "derived") for i in range(3)}
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs WHERE ended_at IS NOT NULL").fetchone()[0] == 1
