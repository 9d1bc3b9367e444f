"""The fact readers: one registered reader per Spark class, and a failed JVM call is "no fact".

A JVM call fails with py4j's ``Py4JError`` or, where PySpark runs the ``SparkContext``, with
PySpark's conversion of the JVM error (``AnalysisException``...): a reader that meets either
leaves its leaf unnamed, with one debug line, and the query is still captured.
"""
from __future__ import annotations

import logging
from typing import Any

import pytest
from py4j.protocol import Py4JError

from lineage_listener.capture.reading import facts, planreader
from lineage_listener.capture.jvm import jvm_call_failed
from lineage_listener.capture.reading.readers import registry
from lineage_listener.plan.classes import SOURCE_LEAVES, STREAM_SINK_WRITES, STREAM_SOURCES, WRITE_COMMANDS

MISSING = "lineage_listener_no_such_table"


def test_every_source_leaf_has_one_reader_and_every_reader_a_known_class():
    assert set(registry.LEAVES) == SOURCE_LEAVES
    assert set(registry.TARGETS) <= WRITE_COMMANDS
    assert set(registry.STREAM_SOURCES) == STREAM_SOURCES
    assert set(registry.STREAM_SINKS) == STREAM_SINK_WRITES


def test_a_second_reader_for_one_class_is_refused():
    with pytest.raises(ValueError, match="two readers for LogicalRelation"):
        registry.reads(registry.LEAVES, "LogicalRelation")(lambda leaf, current: {})


def test_a_converted_jvm_error_is_a_failed_jvm_call(spark):
    with pytest.raises(Exception) as raised:
        spark._jsparkSession.table(MISSING)
    assert not isinstance(raised.value, Py4JError)  # PySpark converted it: py4j's type alone misses it
    assert isinstance(raised.value, jvm_call_failed())


#: A conf key no Spark defines: reading it is a JVM call that fails without analysing a query.
MISSING_KEY = "spark.lineage_listener.no_such_key"


def _failing_reader(spark: Any) -> Any:
    """A reader whose JVM call fails with an error PySpark converts (``SparkNoSuchElementException``
    on Spark 4). Not a missing table: Spark 4 reports a statement its analyzer rejects to the
    listeners, and capture would record that failed lookup as a query of its own."""
    def read(leaf: Any, current: Any) -> dict[str, Any]:
        spark._jsparkSession.conf().get(MISSING_KEY)
        return {"table": {"catalog": None, "database": None, "table": "never"}}
    return read


@pytest.fixture
def v2_files(spark):
    """Files read through DataSource V2 (a leaf the bridge jar leaves to the Python readers)."""
    spark.conf.set("spark.sql.sources.useV1SourceList", "")
    yield
    spark.conf.unset("spark.sql.sources.useV1SourceList")


def test_a_leaf_whose_reader_fails_has_no_fact(spark, people, v2_files, monkeypatch, caplog):
    plan = spark.read.parquet(people[len("file:"):])._jdf.queryExecution().analyzed()
    _, items, _ = planreader.read(plan)
    assert facts.leaves(plan, items)  # the reader names the leaf
    monkeypatch.setitem(registry.LEAVES, "DataSourceV2Relation", _failing_reader(spark))
    with caplog.at_level(logging.DEBUG, logger="lineage_listener.capture.reading.facts"):
        assert facts.leaves(plan, items) == {}
    lines = [r.getMessage() for r in caplog.records if r.name == "lineage_listener.capture.reading.facts"]
    assert len(lines) == 1 and lines[0].startswith("could not read leaf facts:"), lines
    assert MISSING_KEY in lines[0]


def test_a_query_whose_leaf_reader_fails_is_captured_without_that_name(lineage, spark, people, v2_files,
                                                                       monkeypatch):
    df = spark.read.parquet(people[len("file:"):])
    named = lineage.run(lambda: df.selectExpr("upper(name) AS n").collect())
    assert {e.source_dataset for e in named.edges} == {people}
    monkeypatch.setitem(registry.LEAVES, "DataSourceV2Relation", _failing_reader(spark))
    got = lineage.run(lambda: spark.read.parquet(people[len("file:"):]).selectExpr("upper(name) AS n").collect())
    assert len(got.queries) == 1
    assert {(e.target_column, e.source_column, e.transform) for e in got.edges} == {("n", "name", "derived")}
    assert people not in {e.source_dataset for e in got.edges}
