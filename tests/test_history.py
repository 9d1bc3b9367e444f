"""History at scale: each edge stored once, exact time windows, per-query rows, prune, migration.

Stores are written through the store's write path (``write_batch``, as capture
writes), except the schema-5 store, built with that version's DDL
(``fixtures/stores/schema_v5.sql``, schema.sql at version 5) and rows as it stored them.
"""
from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from lineage_listener.cli import main as cli_main
from lineage_listener.query import open_store
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import row_of
from lineage_listener.store.connection import open_readonly, open_writable
from lineage_listener.store.doctor import examine
from lineage_listener.store.prune import prune
from lineage_listener.store.schema import SCHEMA_VERSION
from lineage_listener.store.upsert import commit_batch
from tests.server_helpers import Server

DAY1 = datetime(2026, 1, 1, 6, 0)
V5_DDL = Path(__file__).parent / "fixtures" / "stores" / "schema_v5.sql"


def day(n: int) -> datetime:
    return DAY1 + timedelta(days=n - 1)


def job_batch(job: str, n: int, columns: list[str], source: str = "spark_catalog.raw.events",
              extra: list[tuple] = ()) -> Batch:
    """One run of ``job`` on day ``n``: a copy of ``columns`` plus a filter key, as capture writes it."""
    run, query, at = f"app-{job}-{n}", f"app-{job}-{n}:1:x", day(n).isoformat(sep=" ")
    target = f"spark_catalog.mart.{job}"
    b = Batch()
    b.add(row_of("runs", (run, run, job, "4.3.0", "me", "local", at, at)))
    b.add(row_of("queries", (query, run, "save", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None, 10, at,
                      target)))
    for c in columns:
        b.add(row_of("column_lineage", (query, run, target, c, source, c, "identity", "direct", c, False, at)))
    b.add(row_of("column_lineage", (query, run, target, None, source, "ts", "filter", "indirect", "ts > 0", False, at)))
    for row in extra:
        b.add(row_of("column_lineage", (query, run, target, *row, at)))
    return b


def write(path: Path, *batches: Batch) -> None:
    con = open_writable(path)
    try:
        for b in batches:
            commit_batch(con, b)
    finally:
        con.close()


def count(path: Path, sql: str) -> int:
    con = open_readonly(path)  # waits while a writer (the server's prune) holds the file
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def test_a_job_run_daily_stores_its_edges_once_and_every_run(tmp_path):
    store = tmp_path / "lineage.duckdb"
    write(store, *(job_batch("daily", n, ["a", "b", "c"]) for n in range(1, 31)))
    assert count(store, "SELECT count(*) FROM edges") == 4
    assert count(store, "SELECT count(*) FROM edge_sets") == 4          # one set, four members
    assert count(store, "SELECT count(*) FROM edge_captures") == 30     # one row a day
    # column_lineage keeps its per-query meaning: every run's four rows
    assert count(store, "SELECT count(*) FROM column_lineage") == 120
    assert count(store, "SELECT count(DISTINCT query_id) FROM column_lineage WHERE target_column = 'a'") == 30
    with duckdb.connect(str(store), read_only=True) as con:
        first, last, n = con.execute("SELECT first_seen, last_seen, captures FROM lineage_edge_history "
                                     "WHERE target_column = 'b'").fetchone()
    assert (first, last, n) == (day(1), day(30), 30)
    g = open_store(store).upstream("spark_catalog.mart.daily", "b")
    data = g.edges[("spark_catalog.raw.events", "b"), ("spark_catalog.mart.daily", "b")]
    assert (data["captures"], data["first_seen"], data["captured_at"], data["run_id"]) == (
        30, day(1), day(30), "app-daily-30")
    # replaying a day's batch adds nothing
    write(store, job_batch("daily", 7, ["a", "b", "c"]))
    assert count(store, "SELECT count(*) FROM column_lineage") == 120


def test_time_windows_are_exact(tmp_path):
    """An edge seen on day 3 and day 30 but not between is not in days 10-20."""
    store = tmp_path / "lineage.duckdb"
    batches = []
    for n in range(1, 31):
        columns = ["a", "b", "gap"] if n in (3, 30) else ["a", "b"]
        batches.append(job_batch("w", n, columns))
    write(store, *batches)
    s = open_store(store)
    gap = ("spark_catalog.raw.events", "gap"), ("spark_catalog.mart.w", "gap")
    with pytest.raises(LookupError):  # nothing reaches 'gap' in the window: not even the column's edges
        s.upstream("spark_catalog.mart.w", "gap", since=day(10), until=day(20)).edges[gap]
    g = s.downstream("spark_catalog.raw.events", "gap", since=day(10), until=day(20))
    assert ("spark_catalog.mart.w", "gap") not in g
    g = s.downstream("spark_catalog.raw.events", "gap", since=day(10), until=day(30))
    assert g.edges[gap]["captures"] == 1 and g.edges[gap]["first_seen"] == day(30)
    g = s.downstream("spark_catalog.raw.events", "gap")
    assert (g.edges[gap]["captures"], g.edges[gap]["first_seen"], g.edges[gap]["captured_at"]) == (2, day(3), day(30))
    # the other columns: captures counted within the window only
    a = s.downstream("spark_catalog.raw.events", "a", since=day(10), until=day(20))
    assert a.edges[("spark_catalog.raw.events", "a"), ("spark_catalog.mart.w", "a")]["captures"] == 11
    # per-run answers for the window: exactly the runs of days 10..20
    caps = s.captures(a)[("spark_catalog.raw.events", "a"), ("spark_catalog.mart.w", "a")]
    assert [c["run_id"] for c in caps] == [f"app-w-{n}" for n in range(10, 21)]


def test_per_query_rows_and_event_by_event_union(tmp_path):
    """A query written in three parts (OpenLineage events) has the union, each part at its time."""
    store = tmp_path / "lineage.duckdb"
    parts = [job_batch("ol", 1, cols) for cols in (["a"], ["a", "b"], ["b", "c"])]
    for i, b in enumerate(parts):  # the same query, later times
        b.rows["column_lineage"] = [r[:10] + ((day(1) + timedelta(minutes=i)).isoformat(sep=" "),)
                                    for r in b.rows["column_lineage"]]
    write(store, *parts)
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("SELECT target_column, captured_at FROM column_lineage ORDER BY 2, 1 NULLS FIRST").fetchall()
    assert rows == [(None, day(1)), ("a", day(1)), ("b", day(1) + timedelta(minutes=1)),
                    ("c", day(1) + timedelta(minutes=2))]


def test_prune_keeps_each_edges_first_and_last_time(tmp_path):
    store = tmp_path / "lineage.duckdb"
    write(store, *(job_batch("p", n, ["a"] if n < 20 else ["a", "late"]) for n in range(1, 41)),
          job_batch("gone", 2, ["x"]))
    with duckdb.connect(str(store)) as con:
        done = prune(con, day(30))
    assert (done.queries, done.captures) == (30, 30)            # days 1-29 of p, day 2 of gone
    assert count(store, "SELECT count(*) FROM queries") == 11
    assert count(store, "SELECT min(captured_at) FROM column_lineage") == day(30)
    with duckdb.connect(str(store), read_only=True) as con:
        history = dict(((c, (f, l, n)) for c, f, l, n in con.execute(
            "SELECT target_column, first_seen, last_seen, captures FROM lineage_edge_history "
            "WHERE target_column IS NOT NULL").fetchall()))
    assert history == {"a": (day(1), day(40), 40), "late": (day(20), day(40), 21), "x": (day(2), day(2), 1)}
    # a walk without a window still finds the pruned job's edge; runs before the cut-off are gone
    s = open_store(store)
    g = s.upstream("spark_catalog.mart.gone", "x")
    assert g.has_edge(("spark_catalog.raw.events", "x"), ("spark_catalog.mart.gone", "x"))
    assert s.captures(g) == {}
    assert not s.upstream("spark_catalog.mart.gone", "x", since=day(30)).has_edge(
        ("spark_catalog.raw.events", "x"), ("spark_catalog.mart.gone", "x"))
    # pruning again is stable: the summaries fold, counts stay
    with duckdb.connect(str(store)) as con:
        prune(con, day(35))
    assert count(store, "SELECT sum(captures) FROM edge_captures WHERE set_id IN "
                        "(SELECT set_id FROM edge_sets e JOIN edges USING (edge_id) WHERE target_column = 'late')") == 21
    lines = "\n".join(examine(store).lines())
    assert "oldest capture record 2026-02-04" in lines and "summarised back to 2026-01-01" in lines


def old_and_new(store: Path) -> None:
    """Two runs of a job: 500 days ago and yesterday."""
    now = datetime.utcnow()
    b_old, b_new = job_batch("c", 1, ["a"]), job_batch("c", 2, ["a"])
    for b, at in ((b_old, now - timedelta(days=500)), (b_new, now - timedelta(days=1))):
        for table in ("runs", "queries", "column_lineage"):
            b.rows[table] = [tuple(at.isoformat(sep=" ") if isinstance(v, str) and v.startswith("2026-01-0") else v
                                   for v in r) for r in b.rows[table]]
    write(store, b_old, b_new)


def test_prune_cli(tmp_path, capsys):
    store = tmp_path / "lineage.duckdb"
    old_and_new(store)
    assert cli_main(["prune", "--store", str(store), "--keep", "400d", "--dry-run"]) == 0
    assert "would drop 1 queries, 1 capture records, 1 runs" in capsys.readouterr().out
    assert count(store, "SELECT count(*) FROM queries") == 2
    assert cli_main(["prune", "--store", str(store), "--keep", "400d"]) == 0
    assert count(store, "SELECT count(*) FROM queries") == 1 and count(store, "SELECT count(*) FROM runs") == 1
    assert cli_main(["prune", "--store", str(store), "--keep", "forever"]) == 2


def v5_store(path: Path, rows: list[tuple]) -> None:
    """A store as schema version 5 held it: one column_lineage row per edge per capture, schema version 5."""
    with duckdb.connect(str(path)) as con:
        con.execute(V5_DDL.read_text())
        con.execute("CREATE TABLE schema_version (version INTEGER, applied_at TIMESTAMP DEFAULT current_timestamp, "
                    "by_package TEXT)")
        con.execute("INSERT INTO schema_version (version, by_package) VALUES (5, 'lineage-listener')")
        con.executemany("INSERT INTO column_lineage VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [tuple(r)[:11] for r in rows])  # the columns version 5 had


def test_a_round_2_store_migrates_in_place(tmp_path):
    rows = []
    for n in range(1, 6):
        rows += job_batch("m", n, ["a", "b"], extra=[(None, "spark_catalog.raw.events", "k", "join", "indirect",
                                                      "k = k", False)]).rows["column_lineage"]
    rows.append(("q-read", "app-r", None, None, "spark_catalog.raw.events", "a", "identity", "direct", "a", False,
                 day(3).isoformat(sep=" ")))   # a collect to the driver
    rows.append(rows[0][:10] + (day(1).isoformat(sep=" "),))  # a row repeated in one capture (older versions)
    store = tmp_path / "v5.duckdb"
    v5_store(store, rows)
    con = open_writable(store)   # migrates
    try:
        assert con.execute("SELECT max(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
        read = con.execute("SELECT * FROM column_lineage").fetchall()
        got = sorted((r[:11] for r in read), key=repr)  # the columns version 5 had
        assert {r[11] for r in read} == {False}  # edges from before Python code was read are no guesses
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                            "WHERE table_type = 'BASE TABLE'").fetchall()}
        sets_before = con.execute("SELECT count(*) FROM edge_sets").fetchone()[0]
        commit_batch(con, job_batch("m", 6, ["a", "b"], extra=[(None, "spark_catalog.raw.events", "k", "join",
                                                               "indirect", "k = k", False)]))
        sets_after = con.execute("SELECT count(*) FROM edge_sets").fetchone()[0]
    finally:
        con.close()
    want = sorted({tuple(datetime.fromisoformat(v) if i == 10 else v for i, v in enumerate(r[:11])) for r in rows},
                  key=repr)
    assert got == want
    assert "column_lineage_before_v6" not in tables and "column_lineage" not in tables  # now a view
    assert sets_after == sets_before   # a set the migration wrote is the set the writer computes
    g = open_store(store).upstream("spark_catalog.mart.m", "a")
    assert g.edges[("spark_catalog.raw.events", "a"), ("spark_catalog.mart.m", "a")]["captures"] == 6


def test_serve_keep_prunes_at_start(tmp_path):
    store = tmp_path / "lineage.duckdb"
    old_and_new(store)
    server = Server(store, extra_args=["--keep", "400d"]).start()
    try:
        deadline = time.monotonic() + 60
        while count(store, "SELECT count(*) FROM queries") != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert count(store, "SELECT count(*) FROM queries") == 1
        assert count(store, "SELECT count(*) FROM edges") == 2   # the edges stay
    finally:
        server.stop()


def test_serve_prunes_while_its_writer_holds_the_store(tmp_path, caplog):
    """The daily prune of ``serve --keep`` runs while the server's writer has the store open (a steady
    stream of batches, or the audit of reads): it goes through that writer, never beside it."""
    from lineage_listener.server import retention
    from lineage_listener.server.state import ServerState
    from lineage_listener.store.group_writer import Settings

    store = tmp_path / "lineage.duckdb"
    old_and_new(store)
    st = ServerState(store, settings=Settings(release_idle=3600))
    answers: list = []
    st.writer.submit(Batch(), answers.append)   # an empty batch: the writer opens the store and keeps it
    deadline = time.monotonic() + 60
    while not answers and time.monotonic() < deadline:
        time.sleep(0.05)
    assert answers and answers[0][0] == 200 and st.writer.stats()["open"]
    stop = retention.start(st, timedelta(days=400), every=3600)
    try:
        def queries() -> int:
            with st.read() as con:
                return con.execute("SELECT count(*) FROM queries").fetchone()[0]
        while queries() != 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert queries() == 1
        assert not [r for r in caplog.records if "pruning" in r.getMessage() and "failed" in r.getMessage()]
        with st.read() as con:
            assert con.execute("SELECT count(*) FROM edges").fetchone()[0] == 2   # the edges stay
    finally:
        stop.set()
        st.writer.close()
