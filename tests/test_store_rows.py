"""The store's row types against its schema, instruction rows through the spool, spool files of an
older version, and the group writer's caller-owned transaction."""
from __future__ import annotations

import json
import random
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

from lineage_listener.store import spool, upsert
from lineage_listener.store.batch import Batch
from lineage_listener.store.group_writer import GroupWriter, Settings
from lineage_listener.store.rows import (INSTRUCTIONS, LABEL_ROWS, ROWS, DatasetColumnRow, DatasetRow, EdgeRow,
                                         LabelFile, LabelUnset, QueryRow, Retarget, RunRow)
from lineage_listener.store.schema import schema_sql
from lineage_listener.store.upsert import commit_batch
from lineage_listener.store.writer import StoreWriter

AT = "2026-01-01 10:00:00"


def schema_columns() -> dict[str, list[str]]:
    """Every table's and view's columns in order, from schema.sql and views.sql applied to a new database."""
    con = duckdb.connect()
    try:
        con.execute(schema_sql())
        rows = con.execute("SELECT table_name, column_name FROM information_schema.columns "
                           "ORDER BY table_name, ordinal_position").fetchall()
    finally:
        con.close()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return out


def test_every_row_type_has_its_tables_columns_in_schema_order() -> None:
    """A row type's fields are the columns of its table (or view) in schema.sql, by name and order;
    the only row types without a table are the writer's instructions and the label changes."""
    columns = schema_columns()
    without = set()
    for cls in ROWS:
        if cls.TABLE not in columns:
            without.add(cls)
            continue
        assert list(cls._fields) == columns[cls.TABLE], cls.__name__
        assert set(cls.KEY) <= set(cls._fields), cls.__name__
        assert bool(cls.MERGE) == bool(cls.KEY) or cls.TABLE == "column_labels", cls.__name__
    assert without == {*INSTRUCTIONS, LabelUnset, LabelFile}


def edge(query_id: str, target: str, column: str = "a") -> EdgeRow:
    return EdgeRow(query_id=query_id, run_id="app", target_dataset=target, target_column=column,
                   source_dataset="db.src", source_column=column, transform="identity", kind="direct",
                   expression=column, masking=False, captured_at=AT)


def query(query_id: str, target: str) -> QueryRow:
    return QueryRow(query_id=query_id, run_id="app", action="command", command="Insert", sql_text=None,
                    status="succeeded", error=None, duration_ms=1, captured_at=AT, target_dataset=target)


def test_a_retarget_goes_through_the_spool_and_is_applied(tmp_path: Path) -> None:
    """A nested write stored under its path; the wrapper's batch with a Retarget, spooled (JSON) and read back as
    a Retarget, renames the stored edges to the table and drops the unused path dataset."""
    store = tmp_path / "lineage.duckdb"
    writer = StoreWriter(store)
    inner = Batch()
    inner.add(RunRow(run_id="app", app_id="app", app_name=None, spark_version=None, spark_user=None, master=None,
                     started_at=AT, ended_at=None))
    inner.add(query("q1", "file:/w/t"))
    inner.add(DatasetRow(dataset="file:/w/t", kind="path", format="parquet", location=None, properties=None,
                         first_seen=AT, last_seen=AT))
    inner.add(DatasetColumnRow(dataset="file:/w/t", column_name="a", data_type="int", nullable=True,
                               first_seen=AT, last_seen=AT, ordinal=1))
    inner.add(edge("q1", "file:/w/t"))
    assert writer.write(inner)
    wrapper = Batch()
    wrapper.add(query("q1", "db.t"))  # the wrapper event's query row names the table
    wrapper.add(Retarget(query_id="q1", target_dataset="db.t", previous_target="file:/w/t"))
    kept = spool.write(store, wrapper)
    assert kept is not None
    assert json.loads(kept.read_text())["retarget"] == [["q1", "db.t", "file:/w/t"]]
    back = Batch.from_json(kept.read_text())
    assert back.rows["retarget"] == [Retarget("q1", "db.t", "file:/w/t")]
    assert type(back.rows["retarget"][0]) is Retarget
    assert writer.write(Batch())  # ingests the spool
    assert not spool.pending(store)
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT DISTINCT target_dataset FROM column_lineage").fetchall() == [("db.t",)]
        assert con.execute("SELECT count(*) FROM datasets WHERE dataset = 'file:/w/t'").fetchone()[0] == 0


def test_a_spool_file_of_an_older_version_is_ingested(tmp_path: Path) -> None:
    """A spool file written before rows were typed (and before later columns: queries without
    target_dataset, dataset_columns without ordinal, an instruction row) is ingested; what it
    lacks is null."""
    store = tmp_path / "lineage.duckdb"
    old = {
        "runs": [["app", "app", "job", "3.5.1", "me", "local[2]", AT, None]],
        "queries": [["q1", "app", "save", "CreateDataSourceTableAsSelectCommand", None, "succeeded", None, 5, AT]],
        "datasets": [["db.t", "table", "parquet", None, None, AT, AT]],
        "dataset_columns": [["db.t", "a", "int", True, AT, AT]],
        "column_lineage": [["q1", "app", "db.t", "a", "db.src", "a", "identity", "direct", "a", False, AT]],
        "query_started": [["q1", "2026-01-01 09:59:59"]],
    }
    folder = spool.dirs(store)[0]
    folder.mkdir(parents=True)
    (folder / "1-old.json").write_text(json.dumps(old), encoding="utf-8")
    assert StoreWriter(store).write(Batch())
    assert not spool.pending(store) and not list(folder.glob("*.bad"))
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT target_dataset, duration_ms FROM queries").fetchall() == [(None, 1000)]
        assert con.execute("SELECT column_name, ordinal FROM dataset_columns").fetchall() == [("a", None)]
        assert con.execute("SELECT target_dataset, source_dataset FROM column_lineage").fetchall() == \
            [("db.t", "db.src")]


def test_group_writer_commits_a_group_and_refuses_its_bad_batch_alone(tmp_path: Path) -> None:
    """Batches queued while the store is held are written in one caller-owned transaction; the group
    with a bad batch is rolled back and written batch by batch: the bad one refused (422), the others in."""
    store = tmp_path / "lineage.duckdb"
    assert StoreWriter(store).write(Batch())  # the store exists
    writer = GroupWriter(store, Settings(lock_timeout=120))
    answers: dict[str, tuple[int, dict]] = {}
    done = threading.Event()

    def batch(name: str, captured_at: str = AT) -> Batch:
        b = Batch()
        b.add(query(name, "db.t")._replace(captured_at=captured_at))
        b.add(edge(name, "db.t", column=name))
        return b

    def answer(name: str):
        def take(result: tuple[int, dict]) -> None:
            answers[name] = result
            if len(answers) == 5:
                done.set()
        return take
    try:
        with spool.turn(store, lambda: time.monotonic() + 30) as got:
            assert got
            writer.submit(batch("first"), answer("first"))
            while not writer.stats()["writing"]:  # the writer holds "first" and waits for the store
                time.sleep(0.01)
            for name in ("g1", "g2", "g3"):
                writer.submit(batch(name), answer(name))
            writer.submit(batch("bad", captured_at="not a time"), answer("bad"))
        assert done.wait(60), answers
        stats = writer.stats()
    finally:
        writer.close()
    assert {name: status for name, (status, _) in answers.items()} == \
        {"first": 200, "g1": 200, "g2": 200, "g3": 200, "bad": 422}
    assert stats["split"] == 1 and stats["refused"] == 1 and stats["batches"] == 4
    with duckdb.connect(str(store), read_only=True) as con:
        assert sorted(r[0] for r in con.execute("SELECT query_id FROM queries").fetchall()) == \
            ["first", "g1", "g2", "g3"]
        assert con.execute("SELECT count(*) FROM column_lineage WHERE query_id = 'bad'").fetchone()[0] == 0


def _random_rows(cls: type, rng: random.Random, n: int, types: dict[str, str]) -> list:
    """``n`` rows of ``cls`` over two keys, each other column null or one of a few values of its type
    (an empty JSON object among a JSON column's)."""
    rows = []
    for _ in range(n):
        values = []
        for field in cls._fields:
            if field in cls.KEY:
                values.append(rng.choice(["k1", "k2"]))
            elif field.endswith(("_at", "_seen")):
                values.append(rng.choice([None, f"2026-01-0{rng.randint(1, 9)} 10:00:00"]))
            elif field in ("ordinal", "attempts") or types[field] in ("BIGINT", "INTEGER"):
                values.append(rng.choice([None, 1, 2, 3]))
            elif field == "nullable":
                values.append(rng.choice([None, True, False]))
            elif types[field] == "JSON":
                values.append(rng.choice([None, "{}", '{"a": 1}', '{"b": 2}']))
            else:
                values.append(rng.choice([None, "x", "y", "z"]))
        rows.append(cls._make(values))
    return rows


def test_a_batch_collapsed_by_key_is_stored_as_its_rows_one_by_one() -> None:
    """Every row type written in one collapsed statement (its ``COLLAPSE``) leaves the table exactly as
    its rows written one batch each, in order, over a table that already holds some of the keys."""
    collapsed = [cls for cls in ROWS if cls.COLLAPSE]
    assert {RunRow, DatasetRow, DatasetColumnRow} <= set(collapsed)
    rng = random.Random(11)
    con = duckdb.connect()
    con.execute(schema_sql())
    types = dict(con.execute("SELECT table_name || '.' || column_name, data_type FROM information_schema.columns")
                 .fetchall())
    con.close()
    for cls in collapsed:
        column_types = {f: types[f"{cls.TABLE}.{f}"] for f in cls._fields}
        assert set(cls.COLLAPSE) == set(cls._fields) - set(cls.KEY), cls.__name__
        for trial in range(25):
            before = _random_rows(cls, rng, rng.randint(0, 1), column_types)
            rows = _random_rows(cls, rng, rng.randint(1, 8), column_types)
            tables = []
            for one_by_one in (False, True):
                con = duckdb.connect()
                con.execute(schema_sql())
                for part in [[r] for r in before] + ([[r] for r in rows] if one_by_one else [rows]):
                    batch = Batch()
                    batch.add_all(part)
                    commit_batch(con, batch)
                tables.append(con.execute(f"SELECT * FROM {cls.TABLE} ORDER BY ALL").fetchall())
                con.close()
            assert tables[0] == tables[1], (cls.__name__, trial, before, rows)


@pytest.mark.parametrize("arrow_rows", [0, 10**9], ids=["arrow", "lists"])
def test_rows_bound_in_bulk_are_stored_as_each_row_cast_alone(arrow_rows: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Every table the writer upserts or appends column-wise holds, after one batch, exactly the rows
    each inserted alone with its values cast to the column types: text, integers, booleans, lists,
    JSON, nulls, ISO times and datetimes with and without a zone, and columns of mixed Python types;
    bound as an Arrow table and as lists alike."""
    monkeypatch.setattr(upsert, "ARROW_ROWS", arrow_rows)
    zoned = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    samples = {"TIMESTAMP": ["2026-01-01 10:00:00.123456", None, datetime(2026, 1, 3, 4, 5, 6), zoned],
               "BIGINT": [1, None, 2**40, "7"], "INTEGER": [3, None, 4, 5], "BOOLEAN": [True, None, False, False],
               "JSON": ['{"a": 1}', None, "{}", '[1, "x"]'], "VARCHAR[]": [["g1", "g2"], None, [], ["x"]]}
    con = duckdb.connect()
    con.execute(schema_sql())
    types = dict(con.execute("SELECT table_name || '.' || column_name, data_type FROM information_schema.columns")
                 .fetchall())
    written = [cls for cls in ROWS if cls not in INSTRUCTIONS + LABEL_ROWS and cls is not EdgeRow
               and cls.TABLE in {t.split(".")[0] for t in types}]
    assert {RunRow, QueryRow, DatasetRow, DatasetColumnRow} <= set(written)
    for cls in written:
        column_types = [types[f"{cls.TABLE}.{f}"] for f in cls._fields]
        rows = []
        for n in range(8):  # one key per row: merges are the collapse test's
            values = [f"k{n}" if f in cls.KEY else samples.get(t, ["x", None, "y", "z"])[n % 4]
                      for f, t in zip(cls._fields, column_types)]
            rows.append(cls._make(values))
        if cls is DatasetColumnRow:  # a column whose values Arrow cannot type together
            rows = [r._replace(ordinal=str(r.ordinal) if n % 2 and r.ordinal is not None else r.ordinal)
                    for n, r in enumerate(rows)]
        tables = []
        for alone in (False, True):
            con = duckdb.connect()
            con.execute(schema_sql())
            if alone:
                cast = ", ".join(f"CAST(? AS {t})" for t in column_types)
                for r in rows:
                    con.execute(f"INSERT INTO {cls.TABLE} ({', '.join(cls._fields)}) SELECT {cast}", list(r))
            else:
                batch = Batch()
                batch.rows[cls.TABLE].extend(rows)  # as given: redaction is not under test
                commit_batch(con, batch)
            tables.append(con.execute(f"SELECT * FROM {cls.TABLE} ORDER BY ALL").fetchall())
            con.close()
        assert tables[0] == tables[1] and len(tables[0]) == len(rows), cls.__name__
