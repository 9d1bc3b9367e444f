"""Under a permissive umask (0), every file that holds lineage is its owner's alone: the store, its
write-ahead log while a writer holds it (across DuckDB's own checkpoints), spool files and folders,
quarantined batches and dead letters, whether capture, the command line or the server made them.

Real DuckDB files, a real ``lineage-listener serve`` and CLI processes (they inherit the umask).
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from lineage_listener.kafka.deadletter import DeadLetter
from lineage_listener.store import private, spool
from lineage_listener.store.connection import open_writable, release
from lineage_listener.store.writer import StoreWriter
from tests.server_helpers import ROOT, TOKEN, Server
from tests.test_poison_batches import batch
from tests.test_server_writers import rows

PRIVATE_FILE, PRIVATE_FOLDER = "0o600", "0o700"


def mode(path: Path) -> str:
    return oct(stat.S_IMODE(os.stat(path).st_mode))


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_the_write_ahead_log_stays_the_owners_across_duckdbs_checkpoints(tmp_path: Path) -> None:
    store = tmp_path / "lineage.duckdb"
    host = duckdb.connect()
    con = open_writable(store, host)
    wal = private.wal(store)
    try:
        inode = os.stat(wal).st_ino
        for _ in range(3):  # ~30 MB: past DuckDB's own checkpoint size, which would delete and remake the log
            con.execute("INSERT INTO capture_errors SELECT TIMESTAMP '2026-01-01', NULL, NULL, 'store', "
                        "repeat('x', 100) || i FROM range(100000) t(i)")
            assert (mode(store), mode(wal), os.stat(wal).st_ino) == (PRIVATE_FILE, PRIVATE_FILE, inode)
    finally:
        release(con, host, store)
    assert not wal.exists() and mode(store) == PRIVATE_FILE

    store.chmod(0o640)  # a person shares the store with a group: its log follows
    con = open_writable(store, host)
    try:
        con.execute("INSERT INTO capture_errors VALUES (TIMESTAMP '2026-01-01', NULL, NULL, 'store', 'x')")
        assert mode(wal) == "0o640"
    finally:
        release(con, host, store)
    con = open_writable(store, host)  # a writer that writes nothing leaves no empty log behind
    release(con, host, store)
    assert not wal.exists() and mode(store) == "0o640"


def test_spool_folders_and_files_and_quarantined_batches(tmp_path: Path) -> None:
    store = tmp_path / "lineage.duckdb"
    store.write_text("not a DuckDB file")  # the store needs a person: lineage is spooled meanwhile
    writer = StoreWriter(store, lock_timeout=1)
    assert writer.write(batch(("one", 2))) is False
    [spooled] = spool.pending(store)
    assert spooled.parent == spool.dirs(store)[0]
    assert (mode(spooled.parent), mode(spooled)) == (PRIVATE_FOLDER, PRIVATE_FILE)

    store.unlink()
    spool.write(store, batch(("mixed_ok", 1), ("mixed_bad", 1), poison="mixed_bad"))
    assert writer.write(batch(("live_ok", 1), ("live_bad", 1), poison="live_bad")) is False
    bad = sorted(spooled.parent.glob("*.bad"))
    assert len(bad) == 2 and {mode(f) for f in bad} == {PRIVATE_FILE}  # kept from the spool, and live
    assert mode(store) == PRIVATE_FILE and spool.pending(store) == []

    other = tmp_path / "other.duckdb"
    taken = spool.dirs(other)[0]
    taken.mkdir(mode=0o777)
    os.chown(taken, 65534, 65534)  # another user's folder beside the store: never used
    (taken / "1-planted.json").write_text(json.dumps({"queries": [["planted"]]}))
    assert spool.pending(other) == []
    kept = spool.write(other, batch(("two", 1)))
    assert kept is not None and kept.parent == spool.dirs(other)[1]
    assert (mode(kept.parent), mode(kept)) == (PRIVATE_FOLDER, PRIVATE_FILE)
    kept.unlink()


def test_the_command_line_and_the_server_make_private_stores(tmp_path: Path) -> None:
    events = tmp_path / "events.ndjson"
    events.write_text(json.dumps({
        "eventType": "COMPLETE", "eventTime": "2026-03-01T10:00:00Z",
        "run": {"runId": "0195b0c2-0000-7000-8000-000000000001"}, "job": {"namespace": "n", "name": "j"},
        "inputs": [], "outputs": [], "producer": "https://example.com",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}) + "\n")
    by_cli = tmp_path / "cli.duckdb"
    done = subprocess.run([sys.executable, "-m", "lineage_listener", "ingest", "openlineage", "--store", str(by_cli),
                           str(events)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert mode(by_cli) == PRIVATE_FILE

    by_server = tmp_path / "served" / "lineage.duckdb"
    srv = Server(by_server, extra_args=["--release-idle", "60"]).start()  # holds the store after a write
    try:
        request = urllib.request.Request(f"{srv.url}/api/batches", data=json.dumps({"rows": rows("q", 2)}).encode(),
                                         headers={"Authorization": f"Bearer {TOKEN}",
                                                  "Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=60) as answer:
            assert answer.status == 200
        assert (mode(by_server), mode(private.wal(by_server))) == (PRIVATE_FILE, PRIVATE_FILE)
    finally:
        srv.stop()
    assert mode(by_server) == PRIVATE_FILE and not private.wal(by_server).exists()


def test_dead_letters_are_the_owners(tmp_path: Path) -> None:
    path = tmp_path / "lineage.duckdb.dead-letter.ndjson"
    DeadLetter(path).keep("lineage", 0, 7, b"app-1", b'{"eventType": "COMPLETE"}', "cannot be written")
    assert mode(path) == PRIVATE_FILE and json.loads(path.read_text())["offset"] == 7
