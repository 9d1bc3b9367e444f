"""Python code under zero-code capture: one unmodified PySpark job under ``spark-submit`` with
``$(lineage-listener spark-conf --store ...)`` runs every idiom (UDFs, pandas and Arrow functions,
a UDTF, RDD round trips, a function that cannot be read), and the store holds each one's column
lineage as in process (``test_python_udfs.py``, ``test_python_frames.py``, ``test_python_rdds.py``).
The suite runs it on PySpark 4.x and, in ``make test-spark35``, on 3.5."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_bridge_jobs import capture_args, finish, query, submit

JOB = '''
import sys
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Row, SparkSession
from pyspark.sql.functions import pandas_udf, udf, udtf

spark = SparkSession.builder.appName("python_code_zero_code").getOrCreate()
base = sys.argv[1]
spark.createDataFrame([(1, "ann@x.org", "ann", 10.0, "a"), (2, "bob@y.org", "bob", 200.0, "b")],
                      "id int, email string, name string, amount double, dept string").write.parquet(base + "/src")
src = spark.read.parquet(base + "/src").coalesce(1)  # one Python worker per step


@udf("struct<domain string, shout string>")
def parts(email, name):
    return (email.split("@")[1], name.upper())


@pandas_udf("string")
def initials(name: pd.Series, dept: pd.Series) -> pd.Series:
    return name.str[0]


@udf("string")
def opaque(email):
    return eval("email")


src.select("id", parts("email", "name").alias("p"), initials("name", "dept").alias("ini"), opaque("name").alias("o")) \\
    .select("id", "p.domain", "p.shout", "ini", "o").write.parquet(base + "/udf")


def domains(it):
    for pdf in it:
        pdf["domain"] = pdf["email"].str.split("@").str[1]
        yield pdf[["id", "domain"]]


src.mapInPandas(domains, "id int, domain string").write.parquet(base + "/map_pandas")


def shout(it):
    for batch in it:
        yield pa.RecordBatch.from_arrays([batch.column("id"), pc.utf8_upper(batch.column("name"))],
                                         names=["id", "name_uc"])


src.mapInArrow(shout, "id int, name_uc string").write.parquet(base + "/map_arrow")


def total(key, pdf):
    return pd.DataFrame({"dept": [key[0]], "total": [pdf["amount"].sum()]})


src.groupBy("dept").applyInPandas(total, "dept string, total double").write.parquet(base + "/grouped")


def pair(left, right):
    out = left[["id"]].copy()
    out["score"] = left["amount"].values * right["amount"].max()
    return out


src.groupBy("id").cogroup(src.select("id", "amount").groupBy("id")).applyInPandas(pair, "id int, score double") \\
    .write.parquet(base + "/cogrouped")


@udtf(returnType="user string, domain string")
class SplitEmail:
    def eval(self, email: str):
        user, domain = email.split("@")
        yield user, domain


spark.udtf.register("split_email", SplitEmail)
src.createOrReplaceTempView("src")
spark.sql("SELECT s.id, u.* FROM src s, LATERAL split_email(s.email) u").write.parquet(base + "/udtf")

src.rdd.map(lambda r: (r.id, r.amount * 2)).toDF(["id", "amount2"]).write.parquet(base + "/rdd")
spark.createDataFrame(src.rdd.filter(lambda r: r.amount > 0).map(lambda r: Row(key=r[0], who=r["name"].upper())),
                      "key int, who string").write.parquet(base + "/rdd_rows")
lines = spark.sparkContext.textFile(base + "/lines.txt").map(lambda line: line.split(","))
spark.createDataFrame(lines, "n string, who string").write.parquet(base + "/rdd_text")
spark.stop()
'''


def edges(store: Path, target: Path) -> set[tuple]:
    return set(query(store, "SELECT target_column, source_column, transform, guess FROM column_lineage "
                            "WHERE target_dataset = ?", [f"file:{target}"]))


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("python_zero_code")
    (base / "job.py").write_text(JOB)
    (base / "lines.txt").write_text("1,ann\n2,bob\n")
    store = base / "lineage.duckdb"
    # eleven Python steps, each starting pandas in a worker: a few minutes on a loaded 2-core machine
    rc, out, err = finish(submit([*capture_args(store), str(base / "job.py"), str(base)], base), timeout=900)
    assert rc == 0, out[-3000:] + err[-3000:]
    return store, base


def test_every_idiom_is_read_under_zero_code_capture(captured):
    store, base = captured
    assert edges(store, base / "udf") == {
        ("id", "id", "identity", False), ("domain", "email", "derived", False), ("shout", "name", "derived", False),
        ("ini", "name", "derived", False), ("o", "name", "derived", True)}
    assert edges(store, base / "map_pandas") == {("id", "id", "identity", False), ("domain", "email", "derived", False)}
    assert edges(store, base / "map_arrow") == {("id", "id", "identity", False), ("name_uc", "name", "derived", False)}
    assert edges(store, base / "grouped") == {("dept", "dept", "identity", False),
                                              ("total", "amount", "aggregate", False), (None, "dept", "group_by", False)}
    assert {e for e in edges(store, base / "cogrouped") if e[0]} == {
        ("id", "id", "identity", False), ("score", "amount", "derived", False), ("score", "amount", "aggregate", False)}
    assert edges(store, base / "udtf") == {("id", "id", "identity", False), ("user", "email", "derived", False),
                                           ("domain", "email", "derived", False)}
    assert edges(store, base / "rdd") == {("id", "id", "identity", False), ("amount2", "amount", "derived", False)}
    assert edges(store, base / "rdd_rows") == {("key", "id", "rename", False), ("who", "name", "derived", False),
                                               (None, "amount", "filter", False)}
    text = f"file:{base / 'lines.txt'}"
    assert set(query(store, "SELECT target_column, source_dataset, source_column, guess FROM column_lineage "
                            "WHERE target_dataset = ?", [f"file:{base / 'rdd_text'}"])) == {
        ("n", text, "value", True), ("who", text, "value", True)}
    assert set(query(store, "SELECT DISTINCT source_dataset FROM column_lineage WHERE target_dataset LIKE ? "
                            "AND target_dataset <> ?", [f"file:{base}/%", f"file:{base / 'src'}"])) \
        == {(f"file:{base / 'src'}",), (text,)}  # never an anonymous source
    reasons = [r[0] for r in query(store, "SELECT error FROM capture_errors WHERE stage = 'python'")]
    assert any("opaque" in r and "eval()" in r for r in reasons), reasons
