"""Accuracy: each reproduction with its exact edges, on real Spark."""
from __future__ import annotations

import duckdb


def test_nvl2_only_first_argument_decides(lineage, people):
    got = lineage.run("SELECT nvl2(email, name, dept) AS n FROM people")
    assert got.simple() == {("n", "name", "derived"), ("n", "dept", "derived"), ("n", "email", "conditional")}


def test_distinct_and_drop_duplicates_group_rows(lineage, spark, people):
    got = lineage.run("SELECT DISTINCT dept, upper(name) AS u FROM people")
    assert got.simple() == {("dept", "dept", "identity"), ("u", "name", "derived"),
                            (None, "dept", "group_by"), (None, "name", "group_by")}
    dd = lineage.run(spark.table("people").select("id", "dept").dropDuplicates(["dept"]).collect)
    assert dd.simple() == {("id", "id", "identity"), ("dept", "dept", "identity"), (None, "dept", "group_by")}


def test_offset_window_functions_are_derived(lineage, people):
    got = lineage.run("SELECT lag(amount) OVER (PARTITION BY dept ORDER BY id) AS p, "
                      "lead(name) OVER (ORDER BY id) AS n, nth_value(email, 2) OVER (ORDER BY id) AS t FROM people")
    assert got.simple("direct") == {("p", "amount", "derived"), ("n", "name", "derived"), ("t", "email", "derived")}
    assert ("p", "amount", "aggregate") not in got.simple()
    assert {("p", "dept", "window"), ("p", "id", "window"), ("n", "id", "window")} <= got.simple("indirect")


def test_value_computed_only_from_conditions_has_direct_sources(lineage, people):
    got = lineage.run("SELECT CASE WHEN id = 1 THEN 'a' ELSE 'b' END AS c, if(email IS NOT NULL, 1, 0) AS i "
                      "FROM people")
    assert got.simple() == {("c", "id", "derived"), ("i", "email", "derived")}
    agg = lineage.run("SELECT sum(CASE WHEN amount - id <= 30 THEN 1 ELSE 0 END) AS s FROM people")
    assert agg.simple() == {("s", "amount", "aggregate"), ("s", "id", "aggregate")}
    assert got.edge("c", "id").expression == "CASE WHEN id = 1 THEN 'a' ELSE 'b' END"
    kept = lineage.run("SELECT CASE WHEN id = 1 THEN name ELSE 'b' END AS c FROM people")
    assert kept.simple() == {("c", "name", "derived"), ("c", "id", "conditional")}


def test_union_outputs_name_their_branch(lineage, people, depts):
    got = lineage.run("SELECT name AS k FROM people UNION ALL SELECT upper(title) AS k FROM depts")
    assert got.simple() == {("k", "name", "rename"), ("k", "title", "derived")}
    assert got.edge("k", "name").expression == "UNION branch 1: name"
    assert got.edge("k", "title").expression == "UNION branch 2: upper(title)"
    assert all(e.expression for e in got.edges)


def test_target_column_names_keep_spaces(lineage, spark, people):
    got = lineage.run(lambda: spark.sql("CREATE TABLE t_spaces USING parquet AS "
                                        "SELECT id AS `order count `, name AS ` lead` FROM people"))
    assert got.simple() == {("order count ", "id", "rename"), (" lead", "name", "rename")}


def test_cte_read_twice_once_inside_union_keeps_its_origin(lineage, people, depts):
    got = lineage.run("WITH c AS (SELECT name FROM people) "
                      "SELECT name AS v FROM c UNION ALL SELECT title AS v FROM depts "
                      "UNION ALL SELECT upper(name) AS v FROM c")
    assert got.simple() == {("v", "name", "rename"), ("v", "title", "rename"), ("v", "name", "derived")}
    joined = lineage.run("WITH c AS (SELECT name FROM people) "
                         "SELECT u.v, c2.name AS second FROM (SELECT name AS v FROM c UNION ALL SELECT title FROM depts) u "
                         "JOIN c c2 ON u.v = c2.name")
    assert joined.simple("direct") == {("v", "name", "rename"), ("v", "title", "rename"),
                                       ("second", "name", "rename")}


def test_cte_first_reference_unaliased_in_union_then_read_again(lineage, people, depts):
    """The first reference of a CTE shares the definition's exprIds; a UNION over it gives its
    output those ids a new meaning, which must not leak into a later reference of the CTE."""
    joined = lineage.run("WITH c AS (SELECT name, dept FROM people) "
                         "SELECT x.name, c2.name AS second FROM (SELECT name, dept FROM c "
                         "UNION ALL SELECT title, dept FROM depts) x JOIN c c2 ON x.dept = c2.dept")
    assert joined.simple("direct") == {("name", "name", "identity"), ("name", "title", "rename"),
                                       ("second", "name", "rename")}
    assert {(e.source_dataset, e.source_column) for e in joined.edges if e.target_column == "second"} == {
        (people, "name")}
    scalar = lineage.run("WITH c AS (SELECT name FROM people) "
                         "SELECT name, (SELECT max(name) FROM c) AS m FROM (SELECT name FROM c "
                         "UNION ALL SELECT title FROM depts)")
    assert scalar.simple("direct") == {("name", "name", "identity"), ("name", "title", "rename"),
                                       ("m", "name", "aggregate")}
    nested = lineage.run("WITH c AS (SELECT name, dept FROM people), "
                         "d AS (SELECT name, dept FROM c UNION ALL SELECT title, dept FROM depts) "
                         "SELECT d.name, c.name AS cn FROM d JOIN c ON d.dept = c.dept")
    assert nested.simple("direct") == {("name", "name", "identity"), ("name", "title", "rename"),
                                       ("cn", "name", "rename")}


def test_dataframe_self_union_then_join(lineage, spark, people, depts):
    names = spark.table("people").select("name", "dept")
    both = names.union(spark.table("depts").select("title", "dept"))
    df = both.join(names.withColumnRenamed("name", "again"), "dept")
    got = lineage.run(df.collect)
    assert got.simple("direct") == {("dept", "dept", "identity"), ("name", "name", "identity"),
                                    ("name", "title", "rename"), ("again", "name", "rename")}


def test_create_view_with_column_list_names_view_columns(lineage, spark, people):
    spark.sql("CREATE TABLE IF NOT EXISTS t_view_src USING parquet AS SELECT id, name FROM people")
    got = lineage.run(lambda: spark.sql("CREATE OR REPLACE VIEW v_cols (x, y) AS SELECT id, name FROM t_view_src"))
    assert got.simple() == {("x", "id", "rename"), ("y", "name", "rename")}


def test_outer_reference_in_scalar_subquery(lineage, spark, people):
    spark.sql("CREATE TABLE IF NOT EXISTS t_outer (s DOUBLE) USING parquet")
    got = lineage.run(lambda: spark.sql("INSERT INTO t_outer SELECT (SELECT amount + id AS r) AS s FROM people"))
    assert got.simple() == {("s", "amount", "derived"), ("s", "id", "derived")}


def test_rollup_over_union(lineage, people, depts):
    got = lineage.run("SELECT k, sum(v) AS s FROM (SELECT dept AS k, amount AS v FROM people "
                      "UNION ALL SELECT dept AS k, 1.0D AS v FROM depts) z GROUP BY ROLLUP(k)")
    assert got.simple("direct") == {("k", "dept", "rename"), ("s", "amount", "aggregate")}
    with duckdb.connect(str(got.store), read_only=True) as con:
        errors = con.execute("SELECT error FROM capture_errors WHERE stage = 'plan'").fetchall()
    assert errors == []  # read whole from the JVM object: nothing lost, nothing to record


def test_rollup_over_union_in_a_ctas_and_in_a_subquery(lineage, spark, people, depts):
    """The null field nested where the plan JSON nests plans: a CTAS command's ``query`` field and
    a scalar subquery's ``plan`` (TPC-DS q5/q77/q80 run as CTAS)."""
    rollup = ("SELECT k, sum(v) AS s FROM (SELECT dept AS k, amount AS v FROM people "
              "UNION ALL SELECT dept AS k, 1.0D AS v FROM depts) z GROUP BY ROLLUP(k)")
    got = lineage.run(lambda: spark.sql(f"CREATE TABLE t_rollup_ctas USING parquet AS {rollup}"))
    assert got.simple("direct") == {("k", "dept", "rename"), ("s", "amount", "aggregate")}
    sub = lineage.run(f"SELECT name, (SELECT max(s) FROM ({rollup})) AS m FROM people")
    assert sub.simple("direct") == {("name", "name", "identity"), ("m", "amount", "aggregate")}
    for store_query in (got, sub):
        with duckdb.connect(str(store_query.store), read_only=True) as con:
            errors = {r[0] for r in con.execute("SELECT error FROM capture_errors WHERE stage = 'plan'").fetchall()}
        assert errors == set()


def test_unpivot_over_union_reads_the_null_projections_from_the_jvm(lineage, people, depts):
    """UNPIVOT is an Expand too; over a UNION its rows are not the child's columns by position,
    so only the JVM object gives the right sources."""
    got = lineage.run("SELECT * FROM (SELECT dept, name AS a, email AS b FROM people "
                      "UNION ALL SELECT dept, title AS a, title AS b FROM depts) UNPIVOT (v FOR q IN (a, b))")
    assert {(e.target_column, e.source_dataset, e.source_column) for e in got.edges if e.kind == "direct"} == {
        ("dept", people, "dept"), ("dept", depts, "dept"),
        ("v", people, "name"), ("v", people, "email"), ("v", depts, "title")}
    with duckdb.connect(str(got.store), read_only=True) as con:
        errors = con.execute("SELECT error FROM capture_errors WHERE stage = 'plan'").fetchall()
    assert errors == []  # read whole from the JVM object: nothing lost, nothing to record


def test_in_memory_leaves_are_named_by_their_content(lineage, spark):
    a, b = spark.range(1, 11), spark.range(5, 16)
    got = lineage.run(a.join(b, a.id == b.id).select(a.id.alias("x"), b.id.alias("y")).collect)
    x, y = got.edge("x", "id").source_dataset, got.edge("y", "id").source_dataset
    assert x != y and x.startswith("local:") and y.startswith("local:")
    again = lineage.run(spark.range(1, 11).select("id").collect)
    assert again.edge("id", "id").source_dataset == x  # the same code names the same dataset
    one = lineage.run(spark.createDataFrame([(1,)], ["v"]).crossJoin(spark.createDataFrame([(2,)], ["w"]))
                      .select("v").collect)
    two = lineage.run(spark.createDataFrame([(3,)], ["v"]).select("v").collect)
    assert one.edge("v", "v").source_dataset != two.edge("v", "v").source_dataset


def test_pivot_column_picks_the_cell_it_does_not_feed_the_value(lineage, people):
    """Both pivot forms agree: the pivot column is ``conditional``, the aggregated column ``aggregate``."""
    fast = lineage.run("SELECT * FROM (SELECT dept, id, amount FROM people) "
                       "PIVOT (sum(amount) FOR dept IN ('a' AS a, 'b' AS b))")
    assert {t for t in fast.simple() if t[0] in ("a", "b")} == {
        ("a", "amount", "aggregate"), ("b", "amount", "aggregate"), ("a", "dept", "conditional"),
        ("b", "dept", "conditional")}
    slow = lineage.run("SELECT * FROM (SELECT dept, id, name FROM people) PIVOT (first(name) FOR dept IN ('a' AS a))")
    assert {t for t in slow.simple() if t[0] == "a"} == {("a", "name", "aggregate"), ("a", "dept", "conditional")}


def test_struct_star_names_the_fields(lineage, spark, people):
    """``address.*`` expands to struct reads that carry only the ordinal: named from the type."""
    got = lineage.run(spark.table("people").select("address.*").collect)
    assert {(e.target_column, e.source_column) for e in got.edges} == {("city", "address.city"), ("zip", "address.zip")}


def test_lateral_subquery_outputs_have_their_sources(lineage, people, depts):
    got = lineage.run("SELECT p.id, x.m FROM people p, LATERAL (SELECT max(amount) m FROM people q "
                      "WHERE q.dept = p.dept) x")
    assert got.simple() == {("id", "id", "identity"), ("m", "amount", "aggregate"), (None, "dept", "filter")}
    left = lineage.run("SELECT p.id, x.t FROM people p LEFT JOIN LATERAL (SELECT upper(title) t FROM depts d "
                       "WHERE d.dept = p.dept) x ON true")
    assert {(e.target_column, e.source_dataset, e.source_column, e.transform) for e in left.edges} == {
        ("id", people, "id", "identity"), ("t", depts, "title", "derived"),
        (None, people, "dept", "filter"), (None, depts, "dept", "filter")}


def test_aggregate_filter_clause(lineage, people):
    """``FILTER (WHERE c)``: conditional, or the direct source when the value reads no column."""
    got = lineage.run("SELECT count(*) FILTER (WHERE amount > 10) AS c, sum(id) FILTER (WHERE amount > 10) AS s "
                      "FROM people")
    assert got.simple() == {("c", "amount", "aggregate"), ("s", "id", "aggregate"), ("s", "amount", "conditional")}
    assert got.edge("c", "amount").expression == "count(*) FILTER(WHERE amount > 10)"


def test_insert_overwrite_directory_is_one_query(lineage, spark, people, tmp_path):
    out = tmp_path / "dir_out"
    got = lineage.run(lambda: spark.sql(f"INSERT OVERWRITE DIRECTORY '{out}' USING parquet SELECT name FROM people"))
    assert [(e.target_dataset, e.target_column, e.source_column) for e in got.edges] == [
        (f"file:{out}", "name", "name")]
    with duckdb.connect(str(got.store), read_only=True) as con:
        assert con.execute("SELECT command, target_dataset FROM queries WHERE target_dataset IS NOT NULL "
                           "AND command LIKE 'InsertInto%Dir%'").fetchall() == [("InsertIntoDataSourceDirCommand",
                                                                                  f"file:{out}")]


def test_having_reads_through_the_names_spark_resolved_for_it(lineage, people):
    """HAVING's functions that Spark rewrites (``ifnull``) keep their arguments as written, where a
    column can still be wrapped in the analyzer's ``TempResolvedColumn``: it is the column."""
    got = lineage.run("SELECT sum(amount) AS s FROM people HAVING sum(ifnull(amount, 1)) > 1")
    assert got.simple("direct") == {("s", "amount", "aggregate")}
    assert not [e.expression for e in got.edges if "temp" in e.expression.lower()]


def test_sliding_time_window_is_read_whole(lineage, people):
    """A sliding window is an Expand whose rows toJSON writes as null: read from the JVM object,
    the lineage is whole and the query has no capture error."""
    got = lineage.run("SELECT window.start AS w, count(amount) AS c FROM people "
                      "GROUP BY window(CAST(id AS TIMESTAMP), '10 seconds', '5 seconds')")
    assert got.simple("direct") == {("w", "id", "derived"), ("c", "amount", "aggregate")}
    with duckdb.connect(str(got.store), read_only=True) as con:
        assert con.execute("SELECT error FROM capture_errors").fetchall() == []
