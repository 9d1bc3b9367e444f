"""The store's classification tables (schema 9): an older store migrated on its first write, label rows
through the one door (a batch: written, spooled and replayed alike), and reading them back."""
from __future__ import annotations

import duckdb

from lineage_listener.govern import labelstore
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import row_of
from lineage_listener.store.connection import open_writable
from lineage_listener.store.schema import SCHEMA_VERSION
from lineage_listener.store.writer import StoreWriter

NEW_TABLES = ("column_labels", "label_changes", "masking_functions", "policy_violations")


def test_a_schema_8_store_gets_the_label_tables_on_its_first_write(tmp_path):
    store = tmp_path / "old.duckdb"
    open_writable(store).close()
    with duckdb.connect(str(store)) as con:  # as schema 8 left it
        for table in NEW_TABLES:
            con.execute(f"DROP TABLE {table}")
        con.execute("DELETE FROM schema_version")
        con.execute("INSERT INTO schema_version (version, by_package) VALUES (8, 'lineage-listener')")
    assert StoreWriter(store).write(labelstore.set_batch([("t", "email", "pii", True)], by="ann"))
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT max(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert set(NEW_TABLES) <= tables
        assert con.execute("SELECT dataset, column_name, label, value, source, set_by FROM column_labels"
                           ).fetchall() == [("t", "email", "pii", True, "set", "ann")]


def test_label_rows_survive_the_spool_and_a_replay_changes_nothing(tmp_path):
    store = tmp_path / "s.duckdb"
    batch = labelstore.file_batch("/repo/labels.yml", [("t", "email", "pii.email", True), ("t", "name", "pii", False)],
                                  ["tokenize"], by="ci")
    batch.add(row_of("queries", ("q1", "r1", "save", "Cmd", None, "succeeded", None, 1, "2026-01-01T00:00:00", "t")))
    again = Batch.from_json(batch.to_json())  # what a spool file holds
    parts = again.by_query()
    assert sum(len(p.rows["column_labels"]) for p in parts) == 2  # kept with the first part, once
    writer = StoreWriter(store)
    assert writer.write(again) and writer.write(again)
    with duckdb.connect(str(store), read_only=True) as con:
        decl = labelstore.declared(con)
        assert labelstore.masking_functions(con) == frozenset({"tokenize"})
        assert con.execute("SELECT count(*) FROM label_changes").fetchone()[0] == 2  # the replay added none
    assert {(n, d.label, d.value, d.source, d.origin) for n, items in decl.items() for d in items} == {
        (("t", "email"), "pii.email", True, "file", "/repo/labels.yml"),
        (("t", "name"), "pii", False, "file", "/repo/labels.yml")}


def test_a_read_only_store_without_the_tables_has_no_labels(tmp_path):
    store = tmp_path / "s.duckdb"
    open_writable(store).close()
    with duckdb.connect(str(store)) as con:
        con.execute("DROP TABLE column_labels")
        con.execute("DROP TABLE label_changes")
    with duckdb.connect(str(store), read_only=True) as con:
        assert labelstore.declared(con) == {} and labelstore.history(con) == []
