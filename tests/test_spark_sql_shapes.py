"""Plan shapes Spark's own SQL tests produce (``bench/sql_corpus_probe.py`` finds them), each with
its exact edges, on real Spark."""
from __future__ import annotations

import logging

import pytest

from tests.test_plan_reader import reader  # noqa: F401 - the bridge jar's reader, loaded in the driver


def _spark_at_least(spark, major: int, minor: int) -> bool:
    found = tuple(int(p) for p in spark.version.split(".")[:2])
    return found >= (major, minor)


def _query(got, command: str):
    """The captured query of root ``command`` alone: Spark runs a recursive CTE's anchor as a
    query of its own, which the listener is told of too."""
    from conftest import Captured

    return Captured(got.store, [q["query_id"] for q in got.queries if q["command"] == command])


def _run_known(lineage, caplog, sql: str):
    """Capture ``sql``; the walk met no plan node it has no handler for."""
    with caplog.at_level(logging.WARNING, logger="lineage_listener"):
        got = lineage.run(sql)
    assert not [r.getMessage() for r in caplog.records if "unknown plan node" in r.getMessage()]
    return got


RECURSIVE = {
    # Each output is a UNION of the anchor's column and the recursion's value; its WHERE filters.
    "anchor and recursion": (
        "WITH RECURSIVE r(n, who) AS (SELECT id, name FROM people "
        "UNION ALL SELECT n + 1, upper(who) FROM r WHERE n < 5) SELECT n, who FROM r",
        None, {("n", "id", "rename"), ("n", "id", "derived"), ("who", "name", "rename"),
               ("who", "name", "derived"), (None, "id", "filter")}),
    # Step one copies ``b`` (dept) into ``a``; ``b`` becomes ``concat(a, b)``: name and dept reach
    # ``a`` as values computed from them only through two steps of the recursion.
    "two steps back": (
        "WITH RECURSIVE f(a, b) AS (SELECT name, dept FROM people "
        "UNION ALL SELECT b, concat(a, b) FROM f WHERE length(a) < 20) SELECT a AS first FROM f",
        "direct", {("first", "name", "rename"), ("first", "dept", "rename"), ("first", "dept", "derived"),
                   ("first", "name", "derived")}),
}


@pytest.mark.parametrize("case", sorted(RECURSIVE))
def test_recursive_cte(lineage, spark, people, case):
    if not _spark_at_least(spark, 4, 1):
        pytest.skip("WITH RECURSIVE needs Spark 4.1")
    sql, kind, expected = RECURSIVE[case]
    got = _query(lineage.run(sql), "WithCTE")
    assert got.simple(kind) == expected
    assert [q["status"] for q in got.queries] == ["succeeded"]


#: Columns a recursion rotates through: ``x_i`` takes ``x_(i+1)``, the last takes ``upper(x_1)``.
ROTATED = 6


def test_recursive_cte_followed_as_many_rounds_as_it_needs(lineage, spark, tmp_path):
    """``x_i`` copies ``c_j`` for every ``j >= i`` (down the rotation) and is derived from every
    ``c_j`` (through ``upper``): ``(x_1, c_6, derived)`` is ``2 * ROTATED - 1`` rounds away, more
    than one round per output."""
    if not _spark_at_least(spark, 4, 1):
        pytest.skip("WITH RECURSIVE needs Spark 4.1")
    cols = [f"c{j}" for j in range(1, ROTATED + 1)]
    xs = [f"x{i}" for i in range(1, ROTATED + 1)]
    path = tmp_path / "rotated"
    spark.sql("SELECT " + ", ".join(f"'{c}' AS {c}" for c in cols)).write.parquet(str(path))
    spark.read.parquet(str(path)).createOrReplaceTempView("rotated")
    sql = (f"WITH RECURSIVE r(n, {', '.join(xs)}) AS (SELECT 0, {', '.join(cols)} FROM rotated "
           f"UNION ALL SELECT n + 1, {', '.join(xs[1:])}, upper(x1) FROM r WHERE n < 3) "
           f"SELECT {', '.join(xs)} FROM r")
    got = _query(lineage.run(sql), "WithCTE")
    want = {(x, c, "rename") for i, x in enumerate(xs) for c in cols[i:]}
    want |= {(x, c, "derived") for x in xs for c in cols}
    assert got.simple("direct") == want


#: A recursion joining a table: Spark runs its anchor and each round as queries of their own.
STEPPED = ("WITH RECURSIVE r(n, who) AS (SELECT id, name FROM people "
           "UNION ALL SELECT r.n + 1, p.name FROM r JOIN people p ON p.id = r.n + 1 WHERE r.n < 3) "
           "SELECT n, who FROM r")


@pytest.mark.parametrize("statement", ["select", "ctas"])
def test_recursive_cte_steps_are_not_queries(lineage, spark, people, reader, statement):
    """The statement alone is a query (the steps are known with the bridge jar's reader)."""
    if not _spark_at_least(spark, 4, 1):
        pytest.skip("WITH RECURSIVE needs Spark 4.1")
    spark.sql("DROP TABLE IF EXISTS stepped")
    sql = STEPPED if statement == "select" else f"CREATE TABLE stepped USING parquet AS {STEPPED}"
    got = lineage.run(sql)
    assert [q["status"] for q in got.queries] == ["succeeded"]
    assert got.simple("direct") == {("n", "id", "rename"), ("n", "id", "derived"), ("who", "name", "rename")}
    assert got.simple("indirect") == {(None, "id", "filter"), (None, "id", "join")}
    if statement == "ctas":
        assert got.queries[0]["target_dataset"] == "spark_catalog.default.stepped"
        spark.sql("DROP TABLE stepped")


def test_sql_table_function_is_its_body(lineage, spark, people, caplog):
    if not _spark_at_least(spark, 4, 0):
        pytest.skip("SQL table functions need Spark 4.0")
    spark.sql("CREATE OR REPLACE TEMPORARY FUNCTION big_spenders(floor_amount DOUBLE) "
              "RETURNS TABLE (who STRING, spent DOUBLE) "
              "RETURN SELECT name, amount * 2 FROM people WHERE amount > floor_amount")
    got = _run_known(lineage, caplog, "SELECT who, spent FROM big_spenders(20)")
    assert got.simple() == {("who", "name", "rename"), ("spent", "amount", "derived"), (None, "amount", "filter")}
    joined = lineage.run("SELECT p.id, s.spent FROM people p, LATERAL big_spenders(p.amount) s")
    assert joined.simple("direct") == {("id", "id", "identity"), ("spent", "amount", "derived")}


def test_sql_scalar_function_is_its_expression(lineage, spark, people):
    if not _spark_at_least(spark, 4, 0):
        pytest.skip("SQL functions need Spark 4.0")
    spark.sql("CREATE OR REPLACE TEMPORARY FUNCTION label_of(who STRING, d STRING) RETURNS STRING "
              "RETURN concat(upper(who), '/', d)")
    spark.sql("CREATE OR REPLACE TEMPORARY FUNCTION same(x INT) RETURNS INT RETURN x")
    got = lineage.run("SELECT label_of(name, dept) AS tag, same(id) AS key FROM people")
    assert got.simple() == {("tag", "name", "derived"), ("tag", "dept", "derived"), ("key", "id", "rename")}
    assert got.edge("tag", "name").expression == "CAST(concat(upper(name), '/', dept) AS STRING)"  # the return type


def test_pipe_where_filters_the_rows_before_it(lineage, spark, people, caplog):
    if not _spark_at_least(spark, 4, 0):
        pytest.skip("SQL pipe syntax needs Spark 4.0")
    got = _run_known(lineage, caplog, "FROM people |> WHERE amount > 10 |> SELECT id, upper(name) AS u "
                                      "|> WHERE id > 1")
    assert got.simple() == {("id", "id", "identity"), ("u", "name", "derived"), (None, "amount", "filter"),
                            (None, "id", "filter")}


def test_inline_table_evaluated_when_run_is_local_data(lineage, caplog):
    # ``now()`` keeps the VALUES unevaluated until the query runs (Spark 3.5: ResolvedInlineTable).
    got = _run_known(lineage, caplog, "SELECT a, upper(b) AS ub, t FROM VALUES ('one', 'x', now()), "
                                      "('two', 'y', now()) AS data(a, b, t)")
    assert got.simple() == {("a", "a", "identity"), ("ub", "b", "derived"), ("t", "t", "identity")}
    assert {e.source_dataset for e in got.edges} == {got.edges[0].source_dataset}
    assert got.edges[0].source_dataset.startswith("local:")


def test_nearest_by_join_pairs_rows_by_its_ranking(lineage, spark, people, depts, caplog):
    """``JOIN ... APPROX NEAREST k BY DISTANCE e``: each side's columns are copied; the ranking decides which
    right rows pair with each left row, a join influence like a join's condition."""
    if not _spark_at_least(spark, 4, 2):
        pytest.skip("NEAREST BY joins need Spark 4.2")
    got = _run_known(lineage, caplog, "SELECT p.id, d.title FROM people p JOIN depts d "
                                      "APPROX NEAREST 1 BY DISTANCE abs(p.amount - length(d.title))")
    assert {(e.target_column, e.source_dataset, e.source_column, e.transform) for e in got.edges} == {
        ("id", people, "id", "identity"), ("title", depts, "title", "identity"),
        (None, people, "amount", "join"), (None, depts, "title", "join")}
    left = _run_known(lineage, caplog, "SELECT p.name, d.dept FROM people p LEFT OUTER JOIN depts d "
                                       "EXACT NEAREST 2 BY SIMILARITY -abs(p.id - length(d.dept))")
    assert left.simple() == {("name", "name", "identity"), ("dept", "dept", "identity"),
                             (None, "id", "join"), (None, "dept", "join")}
