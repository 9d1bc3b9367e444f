"""Many processes writing one store: every batch ends in the store, once, after the spool is ingested.

Real processes, a real DuckDB file. Each writer's first batch meets a store another process holds
(so it is spooled, whatever the machine's speed); the rest race each other for the file, with and
without the turn lock, ingesting each other's spool files as they get in. A writer that opens the
store just as another commits and closes it keeps that commit (the moment is forced with strace,
which delays the opener's lock call). A checkpoint that fails when the store is closed (a full
tmpfs) keeps what was committed, and says so.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from lineage_listener.store import spool
from lineage_listener.store.batch import Batch
from lineage_listener.store.connection import open_writable, release
from lineage_listener.store.rows import row_of
from lineage_listener.store.upsert import commit_batch
from lineage_listener.store.writer import StoreWriter

EDGES = 40

#: One writer process: batch 0 while the test holds the store, then "go" on stdin, then the rest.
#: Prints one JSON line per batch: its query id and whether ``write`` reached the store.
WRITER = """
import json, sys
from lineage_listener.store import spool
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import row_of
from lineage_listener.store.writer import StoreWriter

store, job, batches, edges, turn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
spool.TURN_LOCK = turn == "on"
writer = StoreWriter(store, lock_timeout=0.2)
for n in range(batches):
    if n == 1:
        sys.stdin.readline()
    b = Batch()
    qid = f"job{job}:{n}"
    now = "2026-01-01 00:00:00"
    b.add(row_of("queries", (qid, "run", "save", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None, 5,
                             now, f"file:/out/{job}")))
    for e in range(edges):
        b.add(row_of("column_lineage", (qid, "run", f"file:/out/{job}", f"c{e}", "file:/in", f"c{e}", "identity",
                                        "direct", f"c{e}", False, now)))
    print(json.dumps([qid, writer.write(b), bool(writer._held)]), flush=True)
writer.close()
"""


def _edges_per_query(store: Path) -> dict[str, int]:
    with duckdb.connect(str(store), read_only=True) as con:
        return dict(con.execute("SELECT query_id, count(*) FROM column_lineage GROUP BY query_id").fetchall())


@pytest.mark.parametrize("turn", ["off", "on"])
def test_every_batch_of_concurrent_writers_is_stored(tmp_path: Path, turn: str) -> None:
    store = tmp_path / "lineage.duckdb"
    assert StoreWriter(store).write(Batch())
    jobs, batches = 6, 6
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    holder = duckdb.connect(str(store))  # another process's hold: every first batch must be spooled
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(store), str(j), str(batches), str(EDGES), turn],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for j in range(jobs)]
    try:
        first = [json.loads(p.stdout.readline() or "null") for p in procs]
        assert all(f is not None and f[1] is False for f in first), first  # spooled while the store was held
        holder.close()
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    fates = first + [json.loads(line) for out, _ in outs for line in out.splitlines()]
    assert all(p.returncode == 0 for p in procs), [err[-500:] for _, err in outs]
    assert not any(held for _, _, held in fates), "a spool folder is writable: nothing is held in memory"
    assert StoreWriter(store).write(Batch())  # ingest what is left
    assert _edges_per_query(store) == {f"job{j}:{n}": EDGES for j in range(jobs) for n in range(batches)}
    left = [f.name for d in spool.dirs(store) if d.is_dir() for f in d.iterdir()]
    assert left == [], left  # no .json waiting, no .bad quarantined, no .tmp


#: A writer with the turn lock on (the default); the other writer below holds the store without it,
#: as a user's ``duckdb`` session or another tool does.
OPENER = """
import sys
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import row_of
from lineage_listener.store.writer import StoreWriter

b = Batch()
b.add(row_of("queries", ("late", "run", "save", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None, 5,
                         "2026-01-01 00:00:00", "file:/out")))
print(StoreWriter(sys.argv[1], lock_timeout=120).write(b), flush=True)
"""


#: The lineage server's writer (``serve``, ``consume``): one group writer, its batch answered once written.
GROUP_OPENER = """
import queue, sys
from pathlib import Path
from lineage_listener.store.batch import Batch
from lineage_listener.store.group_writer import GroupWriter, Settings
from lineage_listener.store.rows import row_of

b = Batch()
b.add(row_of("queries", ("late", "run", "save", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None, 5,
                         "2026-01-01 00:00:00", "file:/out")))
answers = queue.Queue()
writer = GroupWriter(Path(sys.argv[1]), Settings(lock_timeout=120))
writer.submit(b, answers.put)
status, _ = answers.get(timeout=300)
writer.close()
print(status == 200, flush=True)
"""


@pytest.mark.parametrize("writer", ["capture", "server"])
def test_commit_while_another_writer_opens_the_store_is_kept(tmp_path: Path, writer: str) -> None:
    """Capture's writer and the server's group writer alike."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed: it forces the moment between the opener's read and lock")
    store = tmp_path / "lineage.duckdb"
    assert StoreWriter(store).write(Batch())
    host = duckdb.connect()
    con = open_writable(store, host)  # this process holds the store
    trace = tmp_path / "opener.strace"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    opener = subprocess.Popen(["strace", "-f", "-qq", "-o", str(trace), "-P", str(store), "-e", "trace=openat,fcntl",
                               "-e", "inject=fcntl:delay_enter=3000000", sys.executable, "-c",
                               OPENER if writer == "capture" else GROUP_OPENER, str(store)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        while "O_RDWR" not in (trace.read_text() if trace.exists() else ""):  # opened; its lock call waits
            if opener.poll() is not None:
                pytest.skip(f"strace cannot trace here: {opener.stderr.read()[-300:]}")
            time.sleep(0.01)
        commit_batch(con, _query_batch("early"))
        release(con, host)  # committed and checkpointed into the file, then unlocked: the opener gets in
        out, err = opener.communicate(timeout=300)
    finally:
        if opener.poll() is None:
            opener.kill()
    assert out.strip().splitlines()[-1:] == ["True"], err[-1000:]  # after any progress bar of the slow attach
    with duckdb.connect(str(store), read_only=True) as check:
        assert [r[0] for r in check.execute("SELECT query_id FROM queries ORDER BY 1").fetchall()] == ["early", "late"]


def _query_batch(query_id: str) -> Batch:
    b = Batch()
    b.add(row_of("queries", (query_id, "run", "save", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None,
                             5, "2026-01-01 00:00:00", "file:/out")))
    return b


@contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip()}): the fault needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_checkpoint_failing_on_close_keeps_the_batch(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with _tmpfs(tmp_path / "small", "20m") as mnt:
        store = mnt / "lineage.duckdb"
        host = duckdb.connect()
        b = Batch()
        for e in range(3000):
            b.add(row_of("column_lineage", ("q1", "run", "file:/out", f"c{e}", "file:/in", f"c{e}", "identity",
                                            "direct", f"c{e}", False, "2026-01-01 00:00:00")))
        con = open_writable(store, host)
        commit_batch(con, b)  # in the write-ahead log; the checkpoint on close writes it into the file
        free = os.statvfs(mnt)
        filler = mnt / "filler"
        with filler.open("wb") as f:
            f.write(b"\0" * (free.f_bavail * free.f_frsize))  # the disk is full now
        with caplog.at_level(logging.WARNING, logger="lineage_listener"):
            release(con, host)  # the checkpoint fails; the store is closed all the same
        assert [r.getMessage() for r in caplog.records if "checkpoint failed" in r.getMessage()], caplog.text
        filler.unlink()
        host.close()
        assert _edges_per_query(store) == {"q1": 3000}
