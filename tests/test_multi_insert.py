"""A multi-insert (``FROM t INSERT INTO a SELECT .. INSERT INTO b SELECT ..``) is one query per
write, each with its own target and edges: the rows two separate INSERT statements give.

Spark 4 tells the listener of it as one ``multi-commands`` event (a ``Union`` of its writes);
Spark 3.5 of each write on its own. Both give the same rows.
"""
from __future__ import annotations

from typing import Any

import pytest

from lineage_listener.capture import multiwrite
from lineage_listener.capture.reading import facts, planreader
from lineage_listener.plan.classes import MULTI_WRITE
from tests.test_plan_reader import reader  # noqa: F401 - the bridge jar's reader, loaded in the driver


@pytest.fixture
def tables(spark: Any, tmp_path: Any) -> Any:
    """Parquet tables ``mi_src(k, v)``, ``mi_a(k, v)``, ``mi_b(kk)``, and a temp view ``mi_pv`` over a path."""
    for name, cols in (("mi_src", "k INT, v STRING"), ("mi_a", "k INT, v STRING"), ("mi_b", "kk INT")):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE TABLE {name} ({cols}) USING parquet")
    spark.sql("INSERT INTO mi_src VALUES (1, 'x'), (2, 'y')")
    path = tmp_path / "mi_pv"
    spark.sql("SELECT 0 AS k, 'z' AS v").write.parquet(str(path))
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW mi_pv USING parquet OPTIONS (path '{path}')")
    yield "file:" + str(path)
    for name in ("mi_src", "mi_a", "mi_b"):
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _rows(got: Any) -> tuple[list[Any], set[Any]]:
    """The captured writes (command, target) in target order, and every edge with its target."""
    writes = sorted((q["command"], q["target_dataset"], q["status"]) for q in got.queries)
    edges = {(e.target_dataset, e.target_column, e.source_dataset, e.source_column, e.transform, e.kind,
              e.expression, e.masking) for e in got.edges}
    return writes, edges


MULTI = ("FROM mi_src INSERT INTO mi_a SELECT k, upper(v) "
         "INSERT INTO mi_b SELECT k + 1 WHERE k > 1 "
         "INSERT INTO mi_pv SELECT k, v")
SEPARATE = ("INSERT INTO mi_a SELECT k, upper(v) FROM mi_src",
            "INSERT INTO mi_b SELECT k + 1 FROM mi_src WHERE k > 1",
            "INSERT INTO mi_pv SELECT k, v FROM mi_src")


@pytest.mark.parametrize("plan_reader", ["compact", "json"])
def test_multi_insert_is_one_query_per_write(lineage, spark, tables, plan_reader, monkeypatch, request):
    """With the bridge jar's reader and without it (then every fact is read by py4j calls)."""
    if plan_reader == "compact":
        request.getfixturevalue("reader")  # loaded in the driver, or skipped
    monkeypatch.setenv(planreader.ENV, plan_reader)
    multi = _rows(lineage.run(MULTI))
    separate: tuple[list[Any], set[Any]] = ([], set())
    for sql in SEPARATE:
        writes, edges = _rows(lineage.run(sql))
        separate[0].extend(writes)
        separate[1].update(edges)
    assert multi[0] == sorted(separate[0])
    assert multi[1] == separate[1]
    a, b = "spark_catalog.default.mi_a", "spark_catalog.default.mi_b"
    assert [w[1] for w in multi[0]] == sorted([a, b, tables])
    assert {(t, c, s, tr) for t, c, _, s, tr, *_ in multi[1]} == {
        (a, "k", "k", "identity"), (a, "v", "v", "derived"), (b, "kk", "k", "derived"), (b, None, "k", "filter"),
        (tables, "k", "k", "identity"), (tables, "v", "v", "identity")}


def test_a_union_that_is_not_a_multi_insert_is_one_query(lineage, spark, tables):
    got = lineage.run("SELECT k FROM mi_src UNION ALL SELECT kk FROM mi_b")
    assert [(q["command"], q["target_dataset"]) for q in got.queries] == [("Union", None)]


def test_both_fact_readers_name_each_write(spark, reader, tables):
    state = spark._jsparkSession.sessionState()
    mode = spark._jvm.org.apache.spark.sql.execution.CommandExecutionMode.SKIP()
    qe = state.executePlan(state.sqlParser().parsePlan(MULTI), mode)
    plan = qe.analyzed()
    if str(plan.nodeName()) != MULTI_WRITE:
        pytest.skip("this Spark runs each write of a multi-insert as a query of its own")
    by_calls = facts.target(plan, MULTI_WRITE)
    read = planreader.read_query(qe, True)
    assert read is not None and read.fallback is None
    assert read.target == by_calls  # the bridge jar's Facts and the Python readers agree
    names = [(w.get("table") or {}).get("table") or w["paths"][0] for w in by_calls[multiwrite.WRITES]]
    assert names == ["mi_a", "mi_b", tables]
    parts = multiwrite.parts(read.plan.items, read.target)
    assert [p.root for p in parts] == ["InsertIntoHadoopFsRelationCommand"] * 3
    assert [p.target for p in parts] == by_calls[multiwrite.WRITES]


def test_hive_format_multi_insert(hive_app):
    """Hive-format tables (``InsertIntoHiveTable``), in a Hive-enabled Spark of its own (``tests/hive_app.py``)."""
    from pathlib import Path

    import duckdb

    multi, separate = hive_app / "multi.duckdb", hive_app / "separate.duckdb"

    def rows(store: Path) -> tuple[list[Any], set[Any]]:
        with duckdb.connect(str(store), read_only=True) as con:
            queries = sorted(con.execute("SELECT command, target_dataset, status FROM queries").fetchall())
            edges = set(con.execute("SELECT target_dataset, target_column, source_dataset, source_column, "
                                    "transform, kind, expression, masking FROM column_lineage").fetchall())
        return queries, edges

    got = rows(multi)
    assert got == rows(separate)
    assert [q[:2] for q in got[0]] == [("InsertIntoHiveTable", "spark_catalog.default.a"),
                                       ("InsertIntoHiveTable", "spark_catalog.default.b")]
    assert ("spark_catalog.default.b", "kk", "spark_catalog.default.src", "k", "derived") in {e[:5] for e in got[1]}
