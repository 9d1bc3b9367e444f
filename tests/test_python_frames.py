"""pandas and Arrow functions over whole frames, captured in process on real Spark.

``mapInPandas``, ``mapInArrow``, ``applyInPandas`` (grouped and cogrouped): each output column
from the input columns the function's code uses; grouping keys stay ``group_by``. Labels follow
only what the code really computes from a labelled column. Zero-code: ``test_python_zero_code.py``.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def customers(spark, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("py_frames") / "customers"
    spark.createDataFrame([(1, "ann@x.org", "ann", 10.0, "a"), (2, "bob@y.org", "bob", 200.0, "b"),
                           (3, "cid@x.org", "cid", 30.0, "a")],
                          "id int, email string, name string, amount double, dept string").write.parquet(str(path))
    return str(path)


def test_map_in_pandas_links_each_output_to_what_the_function_reads(lineage, customers, tmp_path):
    def domains(it):
        for pdf in it:
            pdf["domain"] = pdf["email"].str.split("@").str[1]
            yield pdf[pdf.amount > 5][["id", "domain"]]

    src = lineage.spark.read.parquet(customers)
    got = lineage.run(lambda: src.mapInPandas(domains, "id int, domain string").write.parquet(str(tmp_path / "m")))
    assert got.simple() == {("id", "id", "identity"), ("domain", "email", "derived"), (None, "amount", "filter")}
    assert got.edge("domain", "email").expression == "domains(email)"


def test_map_in_arrow_reads_record_batches(lineage, customers, tmp_path):
    import pyarrow as pa
    import pyarrow.compute as pc

    def shout(it):
        for batch in it:
            yield pa.RecordBatch.from_arrays([batch.column("id"), pc.utf8_upper(batch.column("name"))],
                                             names=["id", "name_uc"])

    src = lineage.spark.read.parquet(customers)
    got = lineage.run(lambda: src.mapInArrow(shout, "id int, name_uc string").write.parquet(str(tmp_path / "a")))
    assert got.simple() == {("id", "id", "identity"), ("name_uc", "name", "derived")}


def test_apply_in_pandas_grouped_and_cogrouped(lineage, customers, tmp_path):
    def total(key, pdf):
        return pd.DataFrame({"dept": [key[0]], "total": [pdf["amount"].sum()], "people": [len(pdf)]})

    def pair(left, right):
        out = left[["id"]].copy()
        out["score"] = left["amount"].values * right["amount"].max()
        return out

    spark = lineage.spark
    src = spark.read.parquet(customers)
    grouped = lineage.run(lambda: src.groupBy("dept").applyInPandas(total, "dept string, total double, people long")
                          .write.parquet(str(tmp_path / "g")))
    assert grouped.simple() == {("dept", "dept", "identity"), ("total", "amount", "aggregate"),
                                (None, "dept", "group_by")}
    other = spark.read.parquet(customers).select("id", "amount")
    cogrouped = lineage.run(lambda: src.groupBy("id").cogroup(other.groupBy("id"))
                            .applyInPandas(pair, "id int, score double").write.parquet(str(tmp_path / "c")))
    assert cogrouped.simple("direct") == {("id", "id", "identity"), ("score", "amount", "derived"),
                                          ("score", "amount", "aggregate")}
    assert {e.source_column for e in cogrouped.edges if e.transform == "group_by"} == {"id"}


def test_only_the_column_computed_from_an_email_carries_its_label(lineage, customers, tmp_path):
    def domains(it):
        for pdf in it:
            yield pd.DataFrame({"id": pdf["id"], "domain": pdf["email"].str.split("@").str[1],
                                "spend": pdf["amount"] * 2})

    out = tmp_path / "exports" / "domains"
    src = lineage.spark.read.parquet(customers)
    lineage.run(lambda: src.mapInPandas(domains, "id int, domain string, spend double").write.parquet(str(out)))
    store = str(lineage.store)
    cli("classify", "set", "--store", store, f"file:{customers}", "email", "pii.email")
    listed = json.loads(cli("classify", "list", "--store", store, "--dataset", f"file:{out}", "--propagated",
                            "--format", "json").stdout)
    carried = {c["column"]: [x["label"] for x in c["labels"]] for c in listed["columns"]}
    assert carried == {"id": [], "domain": ["pii.email"], "spend": []}


def cli(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", *args], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return proc
