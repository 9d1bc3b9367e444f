"""The capture's store writer attaches the store to an in-memory database it keeps, per batch (DuckDB
1.4 on): the file is closed between batches (another process opens it), a user's read-write
connection in the same process is shared, and a read-only one makes the batch wait in the spool,
as with a new connection per batch."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from lineage_listener.store import spool, writer as store_writer
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import QueryStarted
from lineage_listener.store.writer import StoreWriter


@pytest.fixture(autouse=True, params=[True, False], ids=["attached", "connection per batch"])
def attach(request, monkeypatch) -> None:
    """Both ways a writer opens the store: attached (DuckDB 1.4 on), a connection per batch (before)."""
    if request.param and not store_writer.ATTACH_SAFE:
        pytest.skip("DuckDB before 1.4: the writer opens a connection per batch")
    monkeypatch.setattr(store_writer, "ATTACH_SAFE", request.param)


def batch(query_id: str) -> Batch:
    b = Batch()
    b.add(QueryStarted(query_id=query_id, started_at="2026-01-01 10:00:00"))
    return b


def started(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in con.execute("SELECT query_id FROM query_starts ORDER BY query_id").fetchall()]


def test_store_closed_between_batches(tmp_path: Path) -> None:
    store = tmp_path / "l.duckdb"
    writer = StoreWriter(store)
    assert writer.write(batch("q1")) and writer.write(batch("q2"))
    assert not store.with_name(store.name + ".wal").exists(), "checkpointed when detached"
    other = subprocess.run([sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
                            "print(c.execute('SELECT count(*) FROM query_starts').fetchone()[0])", str(store)],
                           capture_output=True, text=True, timeout=60)
    assert other.stdout.strip() == "2", other.stderr  # another process writes it: nothing holds the file
    assert writer.write(batch("q3"))
    writer.close()
    with duckdb.connect(str(store), read_only=True) as con:
        assert started(con) == ["q1", "q2", "q3"]


def test_users_connection_in_this_process(tmp_path: Path) -> None:
    store = tmp_path / "l.duckdb"
    writer = StoreWriter(store, lock_timeout=0.5)
    assert writer.write(batch("q1"))
    con = duckdb.connect(str(store))  # read-write, left open: the writer shares its database
    try:
        assert writer.write(batch("q2"))
        assert started(con) == ["q1", "q2"]
    finally:
        con.close()
    ro = duckdb.connect(str(store), read_only=True)  # read-only: the batch waits in the spool
    try:
        assert writer.write(batch("q3")) is False
        assert spool.pending(store)
    finally:
        ro.close()
    assert writer.write(batch("q4"))  # the spool first, then the batch
    assert spool.pending(store) == []
    writer.close()
    with duckdb.connect(str(store), read_only=True) as con:
        assert started(con) == ["q1", "q2", "q3", "q4"]


def test_a_forked_child_exits_cleanly_with_the_writers_database(tmp_path: Path) -> None:
    """A process forked while capture's writer has its in-memory database open: the child ends
    normally (DuckDB crashes a process that tears down a database inherited through a fork), and a
    writer of the child writes through a database of its own."""
    if not store_writer.ATTACH_SAFE:
        pytest.skip("a connection per batch: no in-memory database between batches")
    script = """
import os, sys
from lineage_listener.store.writer import StoreWriter
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import QueryStarted

def batch(q):
    b = Batch(); b.add(QueryStarted(query_id=q, started_at="2026-01-01 10:00:00")); return b

parent = StoreWriter(sys.argv[1] + "/parent.duckdb")
assert parent.write(batch("p1"))
for child_writes in (False, True):
    pid = os.fork()
    if pid == 0:
        if child_writes:
            assert StoreWriter(sys.argv[1] + "/child.duckdb").write(batch("c1"))
        sys.exit(0)  # the interpreter's own teardown, as at the end of a script
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
assert parent.write(batch("p2"))
parent.close()
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0"], done.stderr
    for name, queries in (("parent", ["p1", "p2"]), ("child", ["c1"])):
        with duckdb.connect(str(tmp_path / f"{name}.duckdb"), read_only=True) as con:
            assert started(con) == queries
