"""A batch that can never be written sinks only itself: spooled, held, live, or refused by a server.

Real DuckDB files and a real ``lineage-listener serve`` on 127.0.0.1. A "poison" query carries a
capture time that is no time: DuckDB cannot cast it, today or on any later try.
"""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

from lineage_listener.store import doctor, remote, spool
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import row_of
from lineage_listener.store.remote import RemoteWriter
from lineage_listener.store.writer import StoreWriter
from tests.server_helpers import TOKEN, Server, free_port
from tests.test_server_writers import edges_in

AT = "2026-03-01 10:00:00"


def batch(*queries: tuple[str, int], poison: str | None = None) -> Batch:
    """Queries ``(name, edges)`` writing ``db.<name>`` from ``db.src``; ``poison``: that one's time is no time."""
    b = Batch()
    b.add(row_of("runs", ("run-1", "app", "poison", "4.3.0", None, "local[2]", AT, None)))
    for name, edges in queries:
        at = "not a time" if name == poison else AT
        b.add(row_of("queries", (name, "run-1", "save", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None, 5,
                          AT, f"db.{name}")))
        for i in range(edges):
            b.add(row_of("column_lineage", (name, "run-1", f"db.{name}", f"c{i}", "db.src", f"c{i}", "identity", "direct",
                                     f"c{i}", False, at)))
    return b


def queries_in(store: Path) -> dict[str, int]:
    """Edges per query in the store."""
    with duckdb.connect(str(store), read_only=True) as con:
        return dict(con.execute("SELECT q.query_id, count(e.query_id) FROM queries q LEFT JOIN column_lineage e "
                                "ON e.query_id = q.query_id GROUP BY 1").fetchall())


def errors_in(store: Path) -> list[str]:
    with duckdb.connect(str(store), read_only=True) as con:
        return [r[0] for r in con.execute("SELECT error FROM capture_errors WHERE stage = 'spool'").fetchall()]


def bad_files(anchor: Path) -> list[Path]:
    return [f for d in spool.dirs(anchor) if d.is_dir() for f in sorted(d.glob("*.bad"))]


def test_a_spooled_batch_that_cannot_be_written_blocks_none_behind_it(tmp_path: Path) -> None:
    store = tmp_path / "lineage.duckdb"
    spool.write(store, batch(("one", 2)))
    spool.write(store, batch(("mixed_ok", 3), ("mixed_bad", 2), poison="mixed_bad"))
    spool.write(store, batch(("three", 1)))
    writer = StoreWriter(store)
    assert writer.write(batch(("four", 2)))
    assert queries_in(store) == {"one": 2, "mixed_ok": 3, "three": 1, "four": 2}
    assert spool.pending(store) == []
    [bad] = bad_files(store)
    kept = json.loads(bad.read_text())
    assert [q[0] for q in kept["queries"]] == ["mixed_bad"], "only the query that cannot be written is kept"
    [error] = errors_in(store)
    assert bad.stem in error and "ConversionException" in error and "1 of its queries" in error
    assert writer.write(batch(("five", 1)))  # the kept file is not tried again
    assert errors_in(store) == [error] and bad_files(store) == [bad] and queries_in(store)["five"] == 1
    assert any("1 spooled batches could not be read or written" in line for line in doctor.examine(store).lines())


def test_a_live_or_held_batch_that_cannot_be_written_sinks_only_itself(tmp_path: Path) -> None:
    store = tmp_path / "lineage.duckdb"
    writer = StoreWriter(store)
    assert not writer.write(batch(("live_ok", 2), ("live_bad", 1), poison="live_bad")), "not all of it is stored"
    assert queries_in(store) == {"live_ok": 2}
    writer._held.append(batch(("held_bad", 1), poison="held_bad"))  # as when no spool folder was writable
    assert writer.write(batch(("after", 3)))
    assert queries_in(store) == {"live_ok": 2, "after": 3}
    assert sorted(q for f in bad_files(store) for q, *_ in json.loads(f.read_text())["queries"]) == \
        ["held_bad", "live_bad"]
    assert len(errors_in(store)) == 2 and not writer.waiting()


def test_a_batch_the_server_refuses_is_kept_and_the_rest_sent(tmp_path: Path) -> None:
    srv = Server(tmp_path / "server.duckdb", output=tmp_path / "server.log").start()
    try:
        writer = RemoteWriter(srv.url, TOKEN)
        spool.write(writer.path, batch(("r1", 2)))
        spool.write(writer.path, batch(("r_bad", 2), poison="r_bad"))
        spool.write(writer.path, batch(("r3", 1)))
        assert writer.write(batch(("r4", 1)))
        assert not writer.write(batch(("r_live_bad", 1), poison="r_live_bad")), "refused: not in the store"
        assert writer.spooled() == [], "nothing waits to be resent"
        assert sorted(q for f in bad_files(writer.path) for q, *_ in json.loads(f.read_text())["queries"]) == \
            ["r_bad", "r_live_bad"]
        spool.write(writer.path, batch(("r5", 1)))
        spool.write(writer.path, batch(("r_bad2", 1), poison="r_bad2"))
        assert remote.push(srv.url, token=TOKEN) == (1, 1, 0)
    finally:
        srv.stop()
    assert edges_in(srv.store)[0] == 2 + 1 + 1 + 1
    for f in bad_files(writer.path):
        f.unlink()


def test_a_server_that_is_down_keeps_every_batch_in_order(tmp_path: Path) -> None:
    writer = RemoteWriter(f"http://127.0.0.1:{free_port()}", TOKEN, lock_timeout=1)
    try:
        assert not writer.write(batch(("d1", 1))) and not writer.write(batch(("d2", 1)))
        assert len(writer.spooled()) == 2 and bad_files(writer.path) == []
    finally:
        for f in writer.spooled():
            f.unlink()
