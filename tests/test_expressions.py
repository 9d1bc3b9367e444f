"""Expression kinds -> transform types, expression text and the masking flag."""
from __future__ import annotations

import pyspark

SPARK_MAJOR = int(pyspark.__version__.split(".")[0])


def test_cast_arithmetic_functions_are_derived(lineage, people):
    got = lineage.run("SELECT CAST(id AS STRING) AS sid, amount * 2 + id AS calc, concat(name, '!') AS c FROM people")
    assert got.simple() == {("sid", "id", "derived"), ("calc", "amount", "derived"), ("calc", "id", "derived"),
                            ("c", "name", "derived")}
    assert got.edge("sid", "id").expression == "CAST(id AS STRING)"


def test_aggregates_and_strongest_transform_wins(lineage, people):
    got = lineage.run("SELECT upper(max(name)) AS m, avg(amount) AS a FROM people")
    assert got.simple() == {("m", "name", "aggregate"), ("a", "amount", "aggregate")}
    assert got.edge("m", "name").expression == "upper(max(name))"


def test_case_when_values_derived_conditions_conditional(lineage, people):
    got = lineage.run("SELECT CASE WHEN amount > 100 THEN name ELSE 'small' END AS label FROM people")
    assert got.simple() == {("label", "name", "derived"), ("label", "amount", "conditional")}
    assert got.edge("label", "amount").kind == "indirect"
    assert got.edge("label", "amount").expression == "amount > 100"


def test_if_coalesce_nvl_nullif(lineage, people):
    got = lineage.run("SELECT if(id > 1, name, dept) AS i, coalesce(email, name) AS c, nvl(email, dept) AS n, "
                      "nullif(name, dept) AS ni FROM people")
    s = got.simple()
    assert {("i", "name", "derived"), ("i", "dept", "derived"), ("i", "id", "conditional")} <= s
    assert ("i", "id", "derived") not in s
    assert {("c", "email", "derived"), ("c", "name", "derived"), ("c", "email", "conditional"),
            ("c", "name", "conditional")} <= s
    assert {("n", "email", "derived"), ("n", "dept", "derived"), ("n", "email", "conditional")} <= s
    assert {("ni", "name", "derived"), ("ni", "name", "conditional"), ("ni", "dept", "conditional")} <= s
    assert ("ni", "dept", "derived") not in s


def test_hashing_and_masking_functions_set_masking(lineage, people):
    got = lineage.run("SELECT sha2(email, 256) AS h, md5(name) AS m, mask(name) AS mk, xxhash64(id) AS x, "
                      "count(email) OVER () AS n, upper(name) AS plain FROM people")
    assert {e.target_column for e in got.edges if e.masking} == {"h", "m", "mk", "x", "n"}
    assert got.edge("plain", "name").masking is False
    assert got.edge("h", "email").transform == "derived"
    assert got.edge("n", "email").transform == "aggregate"


def test_nested_struct_field_access(lineage, people):
    got = lineage.run("SELECT address.city AS town, upper(address.zip) AS z FROM people")
    assert got.simple() == {("town", "address.city", "rename"), ("z", "address.zip", "derived")}


def test_python_udf_is_derived_from_its_arguments(lineage, spark, people):
    from pyspark.sql.functions import udf

    shout = udf(lambda s: (s or "").upper() + "!", "string")
    df = spark.table("people").select(shout("name").alias("loud"), "id")
    got = lineage.run(df.collect)
    assert got.simple() == {("loud", "name", "derived"), ("id", "id", "identity")}


def test_window_aggregate_and_lag(lineage, people):
    got = lineage.run("SELECT lag(amount) OVER (PARTITION BY dept ORDER BY id) AS prev FROM people")
    assert got.simple() == {("prev", "amount", "derived"), ("prev", "dept", "window"), ("prev", "id", "window")}


def test_between_interval_grouping_read_as_written(lineage, people):
    """Spark 4 analyzes BETWEEN as With(common_expression...), day intervals as microseconds,
    grouping() as bit arithmetic on the grouping-set id: edges show what the user wrote."""
    got = lineage.run("SELECT name, amount BETWEEN id AND 100 AS inr FROM people WHERE id BETWEEN 1 AND 2")
    assert got.simple() == {("name", "name", "identity"), ("inr", "amount", "derived"), ("inr", "id", "derived"),
                            (None, "id", "filter")}
    if SPARK_MAJOR >= 4:
        assert got.edge("inr", "amount").expression == "amount BETWEEN id AND 100"
        assert got.edge(None, "id").expression == "id BETWEEN 1 AND 2"
    else:  # Spark 3.5's parser turns BETWEEN into two comparisons: the plan never holds it
        assert got.edge("inr", "amount").expression == "(amount >= CAST(id AS DOUBLE)) AND (amount <= 100)"
        assert got.edge(None, "id").expression == "(id >= 1) AND (id <= 2)"

    got = lineage.run("SELECT date_add(current_date(), id) + INTERVAL '14' DAY AS d, "
                      "date_add(current_date(), id) - INTERVAL '3' DAY AS m, current_date() - INTERVAL '3' DAY AS c, "
                      "name LIKE 'a%' AS l FROM people")
    assert got.simple() == {("d", "id", "derived"), ("m", "id", "derived"), ("l", "name", "derived")}
    assert got.edge("d", "id").expression == "date_add(current_date(), id) + INTERVAL '14' DAY"
    assert got.edge("m", "id").expression == "date_add(current_date(), id) - INTERVAL '3' DAY"
    assert got.edge("l", "name").expression == "name LIKE 'a%'"

    got = lineage.run("SELECT dept, name, grouping(dept) AS g, grouping_id(dept, name) AS gid, sum(amount) AS s "
                      "FROM people GROUP BY ROLLUP(dept, name)")
    assert got.simple() == {
        ("dept", "dept", "identity"), ("name", "name", "identity"), ("s", "amount", "aggregate"),
        ("g", "dept", "derived"), ("gid", "dept", "derived"), ("gid", "name", "derived"),
        (None, "dept", "group_by"), (None, "name", "group_by")}
    assert got.edge("g", "dept").expression == "grouping(dept)"
    assert got.edge("gid", "name").expression == "grouping_id(dept, name)"


def test_sort_direction_lambdas_and_grouping_set_keys_read_as_written(lineage, people):
    """ORDER BY keys keep DESC (and a non-default NULLS), lambdas show as ``x -> ...``, and a
    GROUPING SETS key is named by its column, not by the NULL of a set that leaves it out."""
    got = lineage.run("SELECT id, row_number() OVER (PARTITION BY dept ORDER BY amount DESC) AS r FROM people "
                      "ORDER BY name NULLS LAST")
    assert got.edge(None, "name", "sort").expression == "name NULLS LAST"
    assert got.edge("r", "amount", "window").expression == "OVER (PARTITION BY dept ORDER BY amount DESC)"
    got = lineage.run("SELECT transform(tags, x -> x + id) AS t, filter(tags, (x, i) -> x > i) AS f FROM people")
    assert got.simple() == {("t", "tags", "derived"), ("t", "id", "derived"), ("f", "tags", "derived")}
    assert got.edge("t", "id").expression == "transform(tags, x -> x + id)"
    assert got.edge("f", "tags").expression == "filter(tags, (x, i) -> x > i)"
    got = lineage.run("SELECT dept, name, sum(amount) AS s FROM people GROUP BY GROUPING SETS ((dept), (name))")
    assert {(e.source_column, e.expression) for e in got.edges if e.transform == "group_by"} == {
        ("dept", "dept"), ("name", "name")}
