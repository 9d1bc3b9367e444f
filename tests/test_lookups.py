"""The store's lookups and the indexes: a read connection takes an index only for rows that are few
for their table (at most 0.1% of its rows), so a hop on a small store scans its tables; where the rows
are few enough, a hop finds edges by the index on their near end and captures by the index on their
sets, whatever else the question asks (direct edges only, a time bound). Checked on the plans DuckDB
runs (``EXPLAIN ANALYZE``), not on timings."""
from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from lineage_listener.query.expand import Filters, _hop_sql, captures, nearest_captures
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import row_of
from lineage_listener.store.connection import open_readonly, open_writable
from lineage_listener.store.upsert import commit_batch

T0 = datetime(2026, 1, 1)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Forty datasets in a chain (a copy, a masked copy, a filter and a driver read each), written daily."""
    path = tmp_path_factory.mktemp("lookups") / "lineage.duckdb"
    con = open_writable(path)
    try:
        batch = Batch()
        for day in range(5):
            for i in range(1, 40):
                q, run, when = f"q{i}:{day}", f"run{day}", (T0 + timedelta(days=day, minutes=i)).isoformat(sep=" ")
                src, tgt = f"spark_catalog.db.t{i - 1}", f"spark_catalog.db.t{i}"
                for row in ((tgt, "a", src, "a", "identity", "direct", "a", False),
                            (tgt, "h", src, "a", "derived", "direct", "sha2(a, 256)", True),
                            (tgt, None, src, "b", "filter", "indirect", "b > 0", False),
                            (None, None, src, "a", "identity", "direct", "a", False)):
                    batch.add(row_of("column_lineage", (q, run, *row, when)))
        commit_batch(con, batch)
    finally:
        con.close()
    return path


def scans(con: duckdb.DuckDBPyConnection, run, profile: Path) -> dict[str, set[str]]:
    """How each table was read by the last query ``run`` makes on ``con``, as DuckDB's profiler saw
    it run: table -> {"Index Scan", "Sequential Scan"}."""
    con.execute(f"PRAGMA enable_profiling = 'json'; PRAGMA profiling_output = '{profile}'")
    try:
        run()
    finally:
        con.execute("PRAGMA disable_profiling")
    found: dict[str, set[str]] = {}

    def walk(op: dict) -> None:
        info = op.get("extra_info", {})
        if "Table" in info:
            found.setdefault(info["Table"].rsplit(".", 1)[-1], set()).add(info.get("Type", ""))
        for child in op.get("children", []):
            walk(child)
    for op in json.loads(profile.read_text())["operator"]:
        walk(op)
    return found


def as_large(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con`` reading as on a store whose tables are large beside what a question finds (every
    lookup's rows at most 0.1% of its table's): DuckDB takes an index wherever a scan's filters
    allow it. What the tests below check is that the lookups' other conditions never stop it."""
    con.execute("SET index_scan_percentage = 1")
    return con


def hop(store: Path, direction: str, filters: Filters, tmp_path: Path, large: bool) -> tuple[list, dict]:
    """The rows of one hop from the chain's middle, and how it read each table."""
    sql, params = _hop_sql(direction, filters)
    near = "spark_catalog.db.t5" if direction == "upstream" else "spark_catalog.db.t4"
    con = open_readonly(store)
    try:
        if large:
            as_large(con)
        rows: list = []
        found = scans(con, lambda: rows.extend(con.execute(sql, {**params, "d": [near], "c": ["a"]}).fetchall()),
                      tmp_path / "plan.json")
    finally:
        con.close()
    return sorted(rows, key=repr), found


def test_a_read_connection_takes_an_index_only_for_few_rows_of_a_table_and_a_writer_keeps_the_default(
        store, tmp_path):
    con = open_readonly(store)
    try:
        read = con.execute("SELECT current_setting('index_scan_max_count'), "
                           "current_setting('index_scan_percentage')").fetchone()
    finally:
        con.close()
    writer = open_writable(tmp_path / "other.duckdb")
    try:
        write = writer.execute("SELECT current_setting('index_scan_max_count')").fetchone()[0]
    finally:
        writer.close()
    assert read == (0, 0.001)          # the index for at most 0.1% of a table's rows, however few
    assert write == 2048               # DuckDB's default: the writer's lookups and upserts as they were


@pytest.mark.parametrize("direction", ["upstream", "downstream"])
def test_a_hop_on_a_small_store_scans_its_tables_and_finds_what_the_index_finds(store, tmp_path, direction):
    filters = Filters(direct_only=True)
    rows, found = hop(store, direction, filters, tmp_path, large=False)
    by_index, _ = hop(store, direction, filters, tmp_path, large=True)
    assert rows and rows == by_index
    assert found["edges"] == {"Sequential Scan"}, found          # a few rows of a few hundred
    assert found["edge_captures"] == {"Sequential Scan"}, found


@pytest.mark.parametrize("direction", ["upstream", "downstream"])
@pytest.mark.parametrize("filters", [Filters(), Filters(direct_only=True), Filters(since=T0, until=T0 + timedelta(3))],
                         ids=["all", "direct_only", "window"])
def test_a_hop_finds_edges_and_captures_by_their_indexes(store, tmp_path, direction, filters):
    rows, found = hop(store, direction, filters, tmp_path, large=True)
    assert rows                                   # the hop finds edges
    assert found["edges"] == {"Index Scan"}, found
    assert found["edge_captures"] == {"Index Scan"}, found


def test_capture_lookups_with_a_time_bound_use_the_index_on_sets(store, tmp_path):
    con = as_large(open_readonly(store))
    try:
        edge_id = con.execute("SELECT min(edge_id) FROM edges WHERE target_dataset = 'spark_catalog.db.t3'").fetchone()[0]
        until = Filters(until=T0 + timedelta(days=2))
        assert len(captures(con, [edge_id], until)[edge_id]) == 2   # days 1 and 2, not day 3
        found: list = []
        plan = scans(con, lambda: found.extend(nearest_captures(con, [((edge_id,), T0 + timedelta(hours=1), "next")],
                                                                until)), tmp_path / "plan.json")
    finally:
        con.close()
    assert found == [T0 + timedelta(days=1, minutes=3)]
    assert plan["edge_captures"] == {"Index Scan"}, plan


def test_the_closure_of_datasets_labels_start_from_reads_edges_by_index(store, tmp_path):
    from lineage_listener.govern.reach import reachable_datasets
    from lineage_listener.query.names import Aliases

    con = as_large(open_readonly(store))
    try:
        found: set = set()
        plan = scans(con, lambda: found.update(reachable_datasets(con, {"spark_catalog.db.t2"}, Aliases(con),
                                                                  "upstream", direct_only=True)),
                     tmp_path / "plan.json")   # the last hop: from t1 to t0
    finally:
        con.close()
    assert found == {"spark_catalog.db.t0", "spark_catalog.db.t1", "spark_catalog.db.t2"}
    assert plan["edges"] == {"Index Scan"}, plan


def test_the_datasets_and_key_edges_upstream_are_read_by_index(store, tmp_path):
    from lineage_listener.govern.reach import between, datasets_between, key_edges_among, upstream_datasets
    from lineage_listener.query.names import Aliases

    con = as_large(open_readonly(store))
    try:
        aliases = Aliases(con)
        found: list = []
        hops = scans(con, lambda: found.append(upstream_datasets(con, ["spark_catalog.db.t2"], aliases)),
                     tmp_path / "plan.json")   # the last hop: from t1 to t0
        t = [f"spark_catalog.db.t{i}" for i in range(3)]
        datasets, g = found[0]
        assert datasets == set(t)
        assert sorted(g.edges) == [(t[0], t[1]), (t[1], t[2])]
        assert datasets_between(g, [t[0]], [t[2]]) == set(t)
        assert datasets_between(g, [t[1]], [t[1]]) == {t[1]}
        among = scans(con, lambda: found.append(key_edges_among(con, t, aliases)), tmp_path / "plan.json")
    finally:
        con.close()
    edges = found[1]
    assert sorted(set(edges)) == [((t[0], "a"), (t[1], "a")), ((t[0], "a"), (t[1], "h")),
                                  ((t[1], "a"), (t[2], "a")), ((t[1], "a"), (t[2], "h"))]
    assert between(edges, [(t[0], "a")], [(t[2], "h")]) == {(t[0], "a"), (t[1], "a"), (t[2], "h")}
    assert hops["edges"] == {"Index Scan"}, hops
    assert among["edges"] == {"Index Scan"}, among


def test_the_hops_among_chosen_columns_and_the_captures_paths_use_are_read_by_index(store, tmp_path, monkeypatch):
    from lineage_listener.query.expand import Among, captures_at
    from lineage_listener.query.names import Aliases

    con = as_large(open_readonly(store))
    try:
        aliases = Aliases(con)
        keys = {"spark_catalog.db.t1": {"a"}, "spark_catalog.db.t2": {"a"}}
        aliases.resolve(keys)     # the names are known: the query read last is Among's own
        box: list = []
        with monkeypatch.context() as m:   # the edges with their captures' aggregates: the query before the times
            m.setattr(sys.modules[Among.__module__], "set_times", lambda *args: {})
            plan = scans(con, lambda: Among(con, keys, aliases, Filters(direct_only=True)), tmp_path / "plan.json")
        times = scans(con, lambda: box.append(Among(con, keys, aliases, Filters(direct_only=True))),
                      tmp_path / "times.json")
        rows = box[0]([("spark_catalog.db.t1", "a")], aliases)
        when = T0 + timedelta(days=3, minutes=2)
        pins: dict = {}
        pinned = scans(con, lambda: pins.update(captures_at(con, [(rows[0]["edge_id"], when)])),
                       tmp_path / "pins.json")
    finally:
        con.close()
    assert [(r["target_dataset"], r["target_column"], r["ok_first"], r["ok_last"]) for r in rows] == [
        ("spark_catalog.db.t2", "a", T0 + timedelta(minutes=2), T0 + timedelta(days=4, minutes=2))]
    assert rows[0]["all_times"] == tuple(T0 + timedelta(days=d, minutes=2) for d in range(5))  # every one known
    assert pins == {(rows[0]["edge_id"], when): ("q2:3", "run3")}
    assert plan["edges"] == {"Index Scan"} and plan["edge_captures"] == {"Index Scan"}, plan
    assert times == {"edge_captures": {"Index Scan"}}, times
    assert pinned["edge_captures"] == {"Index Scan"}, pinned
