"""Plan shapes -> exact edges, with real Spark and a real DuckDB store."""
from __future__ import annotations


def test_project_identity_rename_derived(lineage, people):
    got = lineage.run("SELECT id, name AS full_name, upper(name) AS u FROM people")
    assert got.simple("direct") == {("id", "id", "identity"), ("full_name", "name", "rename"), ("u", "name", "derived")}
    assert got.simple("indirect") == set()
    assert {e.source_dataset for e in got.edges} == {people}
    assert got.edge("u", "name").expression == "upper(name)"
    q = got.queries[0]
    assert q["target_dataset"] is None and q["status"] == "succeeded" and q["action"] == "collectToPython"
    assert q["sql_text"].startswith("SELECT id")


def test_filter_is_indirect_only(lineage, people):
    got = lineage.run("SELECT name FROM people WHERE amount > 100")
    assert got.simple("direct") == {("name", "name", "identity")}
    assert got.simple("indirect") == {(None, "amount", "filter")}
    assert got.edge(None, "amount").expression == "amount > 100"
    # a filter column never appears as a direct source
    assert not any(e.source_column == "amount" and e.kind == "direct" for e in got.edges)


def test_aggregate_group_by_having(lineage, people):
    got = lineage.run("SELECT dept, sum(amount) * 2 AS total, count(*) AS n FROM people "
                      "GROUP BY dept HAVING sum(amount) > 5")
    assert got.simple("direct") == {("dept", "dept", "identity"), ("total", "amount", "aggregate")}
    assert got.simple("indirect") == {(None, "dept", "group_by"), (None, "amount", "filter")}
    assert got.edge("total", "amount").expression == "sum(amount) * 2"


def test_inner_join_condition(lineage, people, depts):
    got = lineage.run("SELECT p.name, d.title FROM people p JOIN depts d ON p.dept = d.dept")
    assert got.simple("direct") == {("name", "name", "identity"), ("title", "title", "identity")}
    joins = {(e.source_dataset, e.source_column) for e in got.edges if e.transform == "join"}
    assert joins == {(people, "dept"), (depts, "dept")}
    assert all(e.target_column is None for e in got.edges if e.kind == "indirect")


def test_join_using_and_outer(lineage, people, depts):
    got = lineage.run("SELECT dept, name, title FROM people LEFT OUTER JOIN depts USING (dept)")
    assert ("dept", "dept", "identity") in got.simple("direct")
    assert {e.source_dataset for e in got.edges if e.transform == "join"} == {people, depts}


def test_self_join_with_aliases(lineage, people):
    got = lineage.run("SELECT a.name AS left_name, b.name AS right_name FROM people a JOIN people b ON a.id = b.id + 1")
    assert got.simple("direct") == {("left_name", "name", "rename"), ("right_name", "name", "rename")}
    assert got.simple("indirect") == {(None, "id", "join")}


def test_semi_and_anti_join_are_filters(lineage, people, depts):
    got = lineage.run("SELECT name FROM people LEFT SEMI JOIN depts ON people.dept = depts.dept")
    assert got.simple("direct") == {("name", "name", "identity")}
    assert {(e.source_dataset, e.source_column, e.transform) for e in got.edges if e.kind == "indirect"} == {
        (people, "dept", "filter"), (depts, "dept", "filter")}
    anti = lineage.run("SELECT name FROM people LEFT ANTI JOIN depts ON people.dept = depts.dept")
    assert {e.transform for e in anti.edges if e.kind == "indirect"} == {"filter"}


def test_union_is_positional(lineage, people, depts):
    got = lineage.run("SELECT name AS v FROM people UNION ALL SELECT title FROM depts")
    assert {(e.source_dataset, e.source_column, e.transform) for e in got.edges} == {
        (people, "name", "rename"), (depts, "title", "rename")}


def test_sort_limit_distinct(lineage, people):
    got = lineage.run("SELECT DISTINCT name FROM people ORDER BY name DESC LIMIT 2")
    assert got.simple() == {("name", "name", "identity"), (None, "name", "sort"), (None, "name", "group_by")}


def test_window(lineage, people):
    got = lineage.run("SELECT name, rank() OVER (PARTITION BY dept ORDER BY amount) AS r, "
                      "sum(amount) OVER (PARTITION BY dept) AS dept_total FROM people")
    assert got.simple() == {
        ("name", "name", "identity"),
        ("r", "dept", "window"), ("r", "amount", "window"),
        ("dept_total", "amount", "aggregate"), ("dept_total", "dept", "window"),
    }


def test_cte_with_column_aliases(lineage, people):
    got = lineage.run("WITH c(person, money) AS (SELECT name, amount * 2 FROM people) "
                      "SELECT person, money FROM c WHERE money > 1")
    assert got.simple() == {("person", "name", "rename"), ("money", "amount", "derived"), (None, "amount", "filter")}
    assert got.edge("money", "amount").expression == "amount * 2"


def test_temp_view_is_transparent(lineage, spark, people):
    spark.sql("CREATE OR REPLACE TEMP VIEW rich AS SELECT name AS who, amount FROM people WHERE amount > 50")
    got = lineage.run("SELECT who FROM rich")
    assert got.simple() == {("who", "name", "rename"), (None, "amount", "filter")}
    assert {e.source_dataset for e in got.edges} == {people}


def test_persistent_view_is_a_dataset(lineage, spark, people):
    spark.sql("CREATE TABLE IF NOT EXISTS base_t USING parquet AS SELECT id, name FROM people")
    created = lineage.run(lambda: spark.sql("CREATE OR REPLACE VIEW v_names AS SELECT upper(name) AS n FROM base_t"))
    assert created.queries[0]["target_dataset"] == "spark_catalog.default.v_names"
    assert created.simple() == {("n", "name", "derived")}
    got = lineage.run("SELECT n FROM v_names")
    assert {(e.source_dataset, e.source_column, e.transform) for e in got.edges} == {
        ("spark_catalog.default.v_names", "n", "identity")}


def test_explode_generate(lineage, people):
    got = lineage.run("SELECT name, explode(tags) AS tag FROM people")
    assert got.simple() == {("name", "name", "identity"), ("tag", "tags", "derived")}


def test_scalar_in_exists_subqueries(lineage, people, depts):
    got = lineage.run("SELECT name, (SELECT max(amount) FROM people) AS top FROM people p "
                      "WHERE dept IN (SELECT dept FROM depts) "
                      "AND EXISTS (SELECT 1 FROM depts d WHERE d.title = p.name)")
    assert ("top", "amount", "aggregate") in got.simple("direct")
    assert ("name", "name", "identity") in got.simple("direct")
    filters = {(e.source_dataset, e.source_column) for e in got.edges if e.transform == "filter"}
    assert {(people, "dept"), (depts, "dept"), (depts, "title"), (people, "name")} <= filters
    assert not any(e.kind == "direct" and e.source_dataset == depts for e in got.edges)


def test_repartition_sample_passthrough(lineage, spark, people):
    df = spark.table("people").repartition(2).sample(0.9, seed=1).select("name")
    got = lineage.run(df.collect)
    assert got.simple() == {("name", "name", "identity")}


def test_cached_dataframe(lineage, spark, people):
    cached = spark.table("people").selectExpr("name", "amount * 10 AS a10").cache()
    cached.count()
    got = lineage.run(lambda: cached.select("a10").collect())
    assert got.simple() == {("a10", "amount", "derived")}
    cached.unpersist()


def test_local_sources(lineage, spark):
    got = lineage.run(lambda: spark.range(3).selectExpr("id * 2 AS twice").collect())
    assert got.simple() == {("twice", "id", "derived")}
    assert all(e.source_dataset.startswith("local:") for e in got.edges)
    rows = lineage.run(lambda: spark.createDataFrame([(1, "x")], "k int, v string").select("v").collect())
    assert rows.simple() == {("v", "v", "identity")}
    assert all(e.source_dataset.startswith("local:") for e in rows.edges)


def test_catalog_table_source_name(lineage, spark, people):
    spark.sql("CREATE TABLE IF NOT EXISTS cat_src USING parquet AS SELECT id, name FROM people")
    got = lineage.run("SELECT name FROM cat_src")
    assert {e.source_dataset for e in got.edges} == {"spark_catalog.default.cat_src"}


def test_datasource_v2_file_relation(lineage, spark, people):
    spark.conf.set("spark.sql.sources.useV1SourceList", "")
    try:
        df = spark.read.parquet(people[len("file:"):])
        assert df._jdf.queryExecution().analyzed().nodeName() == "DataSourceV2Relation"
        got = lineage.run(lambda: df.selectExpr("upper(name) AS n").collect())
    finally:
        spark.conf.unset("spark.sql.sources.useV1SourceList")
    assert {(e.source_dataset, e.target_column, e.source_column, e.transform) for e in got.edges} == {
        (people, "n", "name", "derived")}


def test_persistent_view_over_aggregate(lineage, spark, people):
    spark.sql("CREATE TABLE IF NOT EXISTS base_agg USING parquet AS SELECT dept, amount FROM people")
    spark.sql("CREATE OR REPLACE VIEW v_dept AS SELECT dept, sum(amount) AS total FROM base_agg GROUP BY dept")
    got = lineage.run("SELECT total FROM v_dept WHERE dept = 'a'")
    assert {(e.source_dataset, e.source_column, e.transform) for e in got.edges} == {
        ("spark_catalog.default.v_dept", "total", "identity"), ("spark_catalog.default.v_dept", "dept", "filter")}
