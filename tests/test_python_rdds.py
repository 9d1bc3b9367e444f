"""DataFrames made from Python RDDs, captured in process on real Spark.

``df.rdd.map(...).toDF()`` and ``spark.createDataFrame(rdd, schema)`` link back to the DataFrame
the rows came from, column by column where the functions can be read (``r.id``, ``r["x"]``,
positions, ``Row(...)``, dicts); at least to the datasets read when that DataFrame is gone, never
to an anonymous source. A label still reaches what the RDD step wrote, and a policy check fails.
Zero-code: ``test_python_zero_code.py``.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pyspark.sql import Row


@pytest.fixture(scope="module", autouse=True)
def bridge_jar() -> None:
    """The RDD's lineage is read by the bridge jar: built (or found) before capture starts."""
    from lineage_listener.jar import bridge_jar as build

    build()


@pytest.fixture(scope="module")
def orders(spark, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("py_rdds") / "orders"
    spark.createDataFrame([(1, "ann@x.org", "ann", 10.0), (2, "bob@y.org", "bob", 200.0)],
                          "id int, email string, name string, amount double").write.parquet(str(path))
    return str(path)


def test_rdd_round_trips_link_to_the_source_column_by_column(lineage, orders, tmp_path):
    spark = lineage.spark
    src = spark.read.parquet(orders)
    src_name = f"file:{orders}"
    by_position = lineage.run(lambda: src.rdd.map(lambda r: (r.id, r.amount * 2)).toDF(["id", "amount2"])
                              .write.parquet(str(tmp_path / "a")))
    assert {(e.target_column, e.source_dataset, e.source_column, e.transform) for e in by_position.edges} == {
        ("id", src_name, "id", "identity"), ("amount2", src_name, "amount", "derived")}

    positive = src.where("amount > 0")  # held by Python while the RDD is made and written
    rows = lineage.run(lambda: positive.rdd
                       .filter(lambda r: r["name"] != "x")
                       .flatMap(lambda r: [Row(key=r[0], domain=r.email.split("@")[1])])
                       .toDF().write.parquet(str(tmp_path / "b")))
    assert rows.simple() == {("key", "id", "rename"), ("domain", "email", "derived"),
                             (None, "amount", "filter"), (None, "name", "filter")}

    def as_dict(r):
        return {"who": r.name.upper(), "amount": r.amount}

    schema = "who string, amount double"
    dicts = lineage.run(lambda: spark.createDataFrame(src.rdd.map(as_dict), schema).write.parquet(str(tmp_path / "c")))
    assert dicts.simple() == {("who", "name", "derived"), ("amount", "amount", "identity")}
    assert not any(e.guess for c in (by_position, rows, dicts) for e in c.edges)


def test_an_rdd_whose_dataframe_is_gone_still_links_to_the_datasets_read(lineage, orders, tmp_path):
    spark = lineage.spark
    df = spark.read.parquet(orders).select("id", "email")
    rdd = df.rdd.map(lambda r: (r.id, r.email.upper()))
    gateway = spark.sparkContext._gateway
    gateway._gateway_client.garbage_collect_object(df._jdf._target_id)  # Python no longer holds the DataFrame
    got = lineage.run(lambda: rdd.toDF(["id", "shout"]).write.parquet(str(tmp_path / "gone")))
    edges = {(e.target_column, e.source_dataset, e.source_column, e.guess) for e in got.edges}
    floor = {(t, f"file:{orders}", s, True) for t in ("id", "shout") for s in ("id", "email")}
    exact = {("id", f"file:{orders}", "id", False), ("shout", f"file:{orders}", "email", False)}
    # Python let the DataFrame go; the JVM may still hold its Dataset until its own collector runs
    # (then the columns are read exactly). Either way the datasets read are named, never in-memory data.
    assert edges in (floor, exact), edges

    text = tmp_path / "lines.txt"
    text.write_text("1,ann\n2,bob\n")
    lines = spark.sparkContext.textFile(str(text)).map(lambda line: line.split(","))
    from_text = lineage.run(lambda: spark.createDataFrame(lines, "n string, who string")
                            .write.parquet(str(tmp_path / "text")))
    assert {(e.target_column, e.source_dataset, e.source_column) for e in from_text.edges} == {
        ("n", f"file:{text}", "value"), ("who", f"file:{text}", "value")}


def test_a_label_crosses_an_rdd_step_and_the_policy_check_fails(lineage, orders, tmp_path):
    spark = lineage.spark
    src = spark.read.parquet(orders)
    export = tmp_path / "exports" / "contacts"
    lineage.run(lambda: src.rdd.map(lambda r: (r.id, r.email)).toDF(["id", "contact"]).write.parquet(str(export)))
    store = str(lineage.store)
    cli("classify", "set", "--store", store, f"file:{orders}", "email", "pii.email")
    policy = tmp_path / "policy.yml"
    policy.write_text("rules:\n  - name: no-pii-in-exports\n    kind: forbid\n    label: pii\n"
                      "    datasets: [\"file:/**/exports/**\"]\n")
    proc = cli("check", "--store", store, "--policy", str(policy), "--format", "json")
    assert proc.returncode == 1, proc.stdout
    found = {(v["dataset"], v["column"]) for v in json.loads(proc.stdout)["violations"]}
    assert found == {(f"file:{export}", "contact")}


def cli(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", *args], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return proc
