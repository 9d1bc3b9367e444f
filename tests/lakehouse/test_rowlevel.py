"""MERGE / UPDATE / DELETE on Delta Lake and Apache Iceberg (copy-on-write and merge-on-read):
exact edges and the absence of wrong ones, one ``queries`` row per statement, no format-internal work.

Rules: docs/reference/semantics.md, "Row-level writes". Tables are small and made per test; the session is shared.
"""
from __future__ import annotations

import itertools
from typing import Any

import duckdb
import pytest

#: Target kinds: how the table is made, the command that writes it, its format.
KINDS = {
    "delta": ("db.{n}", "USING delta", "MergeIntoCommand", "delta"),
    "iceberg-cow": ("ice.db.{n}", "USING iceberg TBLPROPERTIES ('format-version'='2', "
                    "'write.merge.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
                    "'write.delete.mode'='copy-on-write')", "ReplaceData", "iceberg"),
    "iceberg-mor": ("ice.db.{n}", "USING iceberg TBLPROPERTIES ('format-version'='2', "
                    "'write.merge.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
                    "'write.delete.mode'='merge-on-read')", "WriteDelta", "iceberg"),
}
COMMANDS = {"delta": {"MERGE": "MergeIntoCommand", "UPDATE": "UpdateCommand", "DELETE": "DeleteCommand"},
            "iceberg-cow": dict.fromkeys(("MERGE", "UPDATE", "DELETE"), "ReplaceData"),
            "iceberg-mor": dict.fromkeys(("MERGE", "UPDATE", "DELETE"), "WriteDelta")}
#: The MERGE source of each target kind: Delta for Delta; Iceberg for Iceberg (on Spark 4.1, Delta 4.4's
#: tables cannot be read inside Iceberg's row-level rewrite: "Table does not support reads").
SOURCES = {"delta": "db.src", "iceberg-cow": "ice.db.src", "iceberg-mor": "ice.db.src"}
_names = itertools.count()


def full(name: str) -> str:
    return name if name.startswith("ice.") else "spark_catalog." + name


def make_target(spark: Any, kind: str, rows: str | None = "(1, 1.0D, 'a'), (2, -2.0D, 'b'), (3, 5.0D, 'z')") -> str:
    """A new target table of ``kind`` (id int, amount double, name string) with ``rows`` (None: empty)."""
    pattern, using, _, _ = KINDS[kind]
    name = pattern.format(n=f"t{next(_names)}_{kind.replace('-', '_')}")
    spark.sql(f"CREATE TABLE {name} (id INT, amount DOUBLE, name STRING) {using}")
    if rows:
        spark.sql(f"INSERT INTO {name} VALUES {rows}")
    return name


@pytest.fixture(scope="module")
def src(spark: Any) -> None:
    for name, using in (("db.src", "delta"), ("ice.db.src", "iceberg")):
        spark.sql(f"CREATE TABLE {name} (id INT, amount DOUBLE, name STRING) USING {using}")
        spark.sql(f"INSERT INTO {name} VALUES (1, 10.0D, 'x'), (3, 3.0D, 'c'), (5, 200.0D, 'big')")


def edges(captured: Any) -> set[tuple[str | None, str, str, str]]:
    """``{(target column, source dataset, source column, transform)}`` of everything captured."""
    return {(e.target_column, e.source_dataset, e.source_column, e.transform) for e in captured.edges}


def run(lineage: Any, statement: str) -> Any:
    """Run one SQL statement (commands run eagerly: no ``collect``) and return what it captured."""
    return lineage.run(lambda: lineage.spark.sql(statement))


def one_query(captured: Any, command: str, target: str, sql: str | None) -> dict:
    assert len(captured.queries) == 1, [(q["action"], q["command"]) for q in captured.queries]
    q = captured.queries[0]
    assert (q["command"], q["target_dataset"], q["status"]) == (command, target, "succeeded")
    assert q["sql_text"] == sql
    return q


def dataset_format(store: Any, name: str) -> str | None:
    with duckdb.connect(str(store), read_only=True) as con:
        row = con.execute("SELECT format FROM datasets WHERE dataset = ?", [name]).fetchone()
    return row[0] if row else None


MERGE = """MERGE INTO {t} t USING {s} s ON t.id = s.id
WHEN MATCHED AND s.amount > 100 THEN DELETE
WHEN MATCHED THEN UPDATE SET amount = t.amount + s.amount, name = s.name
WHEN NOT MATCHED AND s.amount > 0 THEN INSERT (id, amount, name) VALUES (s.id, s.amount, upper(s.name))
WHEN NOT MATCHED BY SOURCE AND t.amount < 0 THEN DELETE
WHEN NOT MATCHED BY SOURCE THEN UPDATE SET amount = t.amount * 0.5"""


@pytest.mark.parametrize("kind", list(KINDS))
def test_merge_with_every_kind_of_clause(spark, lineage, src, kind):
    t = make_target(spark, kind)
    T, SRC = full(t), full(SOURCES[kind])
    stmt = MERGE.format(t=t, s=SOURCES[kind])
    got = run(lineage, stmt)
    one_query(got, COMMANDS[kind]["MERGE"], T, stmt)
    assert edges(got) == {
        # ON: join, whole target; DELETE clause conditions: filter, whole target
        (None, T, "id", "join"), (None, SRC, "id", "join"),
        (None, SRC, "amount", "filter"), (None, T, "amount", "filter"),
        # UPDATE SET amount = t.amount + s.amount; NOT MATCHED BY SOURCE: t.amount * 0.5; INSERT s.amount
        ("amount", T, "amount", "derived"), ("amount", SRC, "amount", "derived"),
        ("amount", SRC, "amount", "identity"), ("amount", SRC, "amount", "conditional"),
        # UPDATE SET name = s.name; INSERT upper(s.name), under AND s.amount > 0
        ("name", SRC, "name", "identity"), ("name", SRC, "name", "derived"), ("name", SRC, "amount", "conditional"),
        # INSERT s.id under AND s.amount > 0; id is never updated: no t.id -> id
        ("id", SRC, "id", "identity"), ("id", SRC, "amount", "conditional"),
    }
    assert dataset_format(lineage.store, T) == KINDS[kind][3]
    assert spark.sql(f"SELECT id, amount, name FROM {t} ORDER BY id").collect() == [
        (1, 11.0, "x"), (3, 8.0, "c"), (5, 200.0, "BIG")]


@pytest.mark.parametrize("kind", ["iceberg-cow", "iceberg-mor"])
def test_update_with_a_subquery_in_where(spark, lineage, src, kind):
    t = make_target(spark, kind)
    T, SRC = full(t), full(SOURCES[kind])
    stmt = f"UPDATE {t} SET amount = amount + 1 WHERE id IN (SELECT id FROM {SOURCES[kind]} WHERE name = 'x')"
    got = run(lineage, stmt)
    one_query(got, COMMANDS[kind]["UPDATE"], T, stmt)
    assert edges(got) == {("amount", T, "amount", "derived"), ("amount", T, "id", "conditional"),
                          ("amount", SRC, "id", "conditional"), ("amount", SRC, "name", "conditional")}


@pytest.mark.parametrize("kind", list(KINDS))
def test_update(spark, lineage, kind):
    t = make_target(spark, kind)
    T = full(t)
    stmt = f"UPDATE {t} SET amount = amount * 2, name = 'n' WHERE name = 'a'"
    got = run(lineage, stmt)
    one_query(got, COMMANDS[kind]["UPDATE"], T, stmt)
    # name = 'n' reads no column: only the WHERE decides it
    assert edges(got) == {("amount", T, "amount", "derived"), ("amount", T, "name", "conditional"),
                          ("name", T, "name", "conditional")}


@pytest.mark.parametrize("kind", ["iceberg-cow", "iceberg-mor"])
def test_delete_with_in_subquery(spark, lineage, src, kind):
    t = make_target(spark, kind)
    T, SRC = full(t), full(SOURCES[kind])
    stmt = f"DELETE FROM {t} WHERE id IN (SELECT id FROM {SOURCES[kind]})"
    got = run(lineage, stmt)
    one_query(got, COMMANDS[kind]["DELETE"], T, stmt)
    assert edges(got) == {(None, T, "id", "filter"), (None, SRC, "id", "filter")}


@pytest.mark.parametrize("kind", list(KINDS))
def test_delete(spark, lineage, kind):
    t = make_target(spark, kind)
    T = full(t)
    stmt = f"DELETE FROM {t} WHERE amount < 0"
    got = run(lineage, stmt)
    one_query(got, COMMANDS[kind]["DELETE"], T, stmt)
    assert edges(got) == {(None, T, "amount", "filter")}


def test_delta_rejects_subqueries_in_delete(spark, lineage, src):
    """Delta's DELETE has no subquery support: the statement fails and nothing is captured as written."""
    t = make_target(spark, "delta")
    with pytest.raises(Exception, match="(?i)subquer"):
        run(lineage, f"DELETE FROM {t} WHERE id IN (SELECT id FROM db.src)")


def test_merge_source_is_a_subquery_with_a_join_and_an_aggregate(spark, lineage, raw):
    t = make_target(spark, "delta")
    T = full(t)
    stmt = f"""MERGE INTO {t} t USING (
        SELECT o.id, sum(o.qty * p.price) AS amount, max(p.name) AS name
        FROM orders o JOIN prices p ON o.pid = p.pid GROUP BY o.id) s
      ON t.id = s.id
      WHEN MATCHED THEN UPDATE SET amount = s.amount
      WHEN NOT MATCHED THEN INSERT (id, amount, name) VALUES (s.id, s.amount, s.name)"""
    got = run(lineage, stmt)
    one_query(got, "MergeIntoCommand", T, stmt)
    O, P = raw["orders"], raw["prices"]
    assert edges(got) == {
        ("amount", O, "qty", "aggregate"), ("amount", P, "price", "aggregate"),
        ("name", P, "name", "aggregate"), ("id", O, "id", "identity"),
        (None, T, "id", "join"), (None, O, "id", "join"),
        (None, O, "pid", "join"), (None, P, "pid", "join"), (None, O, "id", "group_by"),
    }
