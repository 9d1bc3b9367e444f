"""Expression kinds -> transform types, expression text and the masking flag."""
from __future__ import annotations


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
