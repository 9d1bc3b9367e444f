"""Python UDFs captured in process on real Spark: each output from the arguments its code uses.

Scalar UDFs (a struct result field by field), pandas UDFs, a grouped-aggregate pandas UDF and
Python UDTFs; a function that cannot be read keeps every argument, marked as a guess with the
reason recorded. The same idioms under zero-code capture: ``tests/test_python_zero_code.py``.
"""
from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from pyspark.sql.functions import pandas_udf, udf

from lineage_listener.query import open_store


@pytest.fixture(scope="module")
def people(spark, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("py_udfs") / "people"
    spark.createDataFrame([(1, "ann@x.org", "ann", 10.0, "a"), (2, "bob@y.org", "bob", 200.0, "b")],
                          "id int, email string, name string, amount double, dept string") \
        .write.parquet(str(path))
    return str(path)


def test_a_struct_udf_is_read_field_by_field_and_a_pandas_udf_narrows(lineage, people, tmp_path):
    @udf("struct<domain string, shout string>")
    def parts(email, name):
        return (email.split("@")[1], name.upper())

    @pandas_udf("string")
    def initials(name: pd.Series, dept: pd.Series) -> pd.Series:
        return name.str[0].str.upper()  # dept is not used

    src = lineage.spark.read.parquet(people)
    out = tmp_path / "out"
    got = lineage.run(lambda: src.select("id", parts("email", "name").alias("p"), initials("name", "dept").alias("ini"))
                      .select("id", "p.domain", "p.shout", "ini").write.parquet(str(out)))
    assert got.simple("direct") == {("id", "id", "identity"), ("domain", "email", "derived"),
                                    ("shout", "name", "derived"), ("ini", "name", "derived")}
    assert not any(e.guess for e in got.edges)
    assert got.edge("domain", "email").expression == "parts(email, name).domain"


def test_a_grouped_aggregate_pandas_udf_is_an_aggregate(lineage, people, tmp_path):
    @pandas_udf("double")
    def mean_amount(amount: pd.Series) -> float:
        return amount.mean()

    src = lineage.spark.read.parquet(people)
    got = lineage.run(lambda: src.groupBy("dept").agg(mean_amount("amount").alias("avg"))
                      .write.parquet(str(tmp_path / "agg")))
    assert ("avg", "amount", "aggregate") in got.simple("direct")
    assert (None, "dept", "group_by") in got.simple("indirect")


def test_python_udtfs_are_read_through_their_eval(lineage, people, tmp_path):
    from pyspark.sql.functions import lit, udtf

    @udtf(returnType="user string, domain string, twice int")
    class SplitEmail:
        def eval(self, email: str, n: int):
            user, domain = email.split("@")
            yield user, domain, n * 2

    spark = lineage.spark
    spark.udtf.register("split_email", SplitEmail)
    spark.read.parquet(people).createOrReplaceTempView("py_udtf_people")
    got = lineage.run(lambda: spark.sql("SELECT p.name, u.* FROM py_udtf_people p, "
                                        "LATERAL split_email(p.email, p.id) u").write.parquet(str(tmp_path / "u")))
    assert got.simple("direct") == {("name", "name", "identity"), ("user", "email", "derived"),
                                    ("domain", "email", "derived"), ("twice", "id", "derived")}
    alone = lineage.run(lambda: SplitEmail(lit("a@b"), lit(1)).write.parquet(str(tmp_path / "alone")))
    assert alone.edges == []  # literals only: nothing read


def test_a_function_that_cannot_be_read_is_a_marked_guess_with_its_reason(lineage, people, tmp_path):
    @udf("string")
    def opaque(email, name):
        return eval("email")  # code chosen at run time: not read

    src = lineage.spark.read.parquet(people)
    out = tmp_path / "guess"
    got = lineage.run(lambda: src.select("id", opaque("email", "name").alias("x")).write.parquet(str(out)))
    assert {(e.target_column, e.source_column, e.guess) for e in got.edges} == {
        ("id", "id", False), ("x", "email", True), ("x", "name", True)}
    errors = [r[0] for r in lineage_errors(lineage.store, got.query_ids)]
    assert len(errors) == 1 and "opaque" in errors[0] and "eval()" in errors[0], errors
    g = open_store(lineage.store).upstream(f"file:{out}", "x")
    assert g.number_of_edges() == 2 and all(d["guess"] for _, _, d in g.edges(data=True))
    text = subprocess.run([sys.executable, "-m", "lineage_listener", "upstream", "--store", str(lineage.store),
                           f"file:{out}", "x"], capture_output=True, text=True, timeout=300).stdout
    assert text.count("[guess]") == 2, text
    impact = subprocess.run([sys.executable, "-m", "lineage_listener", "impact", "--store", str(lineage.store),
                             f"file:{people}", "email"], capture_output=True, text=True, timeout=300).stdout
    assert f"file:{people} [email] (guess)" in impact, impact


def lineage_errors(store, query_ids):
    import duckdb

    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute("SELECT error FROM capture_errors WHERE stage = 'python' AND query_id IN "
                           "(SELECT unnest(?))", [query_ids]).fetchall()


def test_a_python_udf_used_in_a_filter_reads_what_its_code_reads(lineage, people, tmp_path):
    @udf("boolean")
    def big(amount, name):
        return amount > 100

    src = lineage.spark.read.parquet(people)
    got = lineage.run(lambda: src.where(big("amount", "name")).select("id").write.parquet(str(tmp_path / "f")))
    assert got.simple("indirect") == {(None, "amount", "filter")}
