"""Each filter of the capture's skip table drops the Spark event its docstring names, on real Spark
events, and a query dropped on its head never has its plan read."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import lineage_listener
from lineage_listener.capture.reading import queryreader, skips
from lineage_listener.plan.classes import STREAM_SINK_WRITES
from tests.test_plan_reader import reader  # noqa: F401 - the bridge jar's reader (it knows a recursion's steps)


@pytest.fixture
def dropped(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    """(filter, action, root) of every event a filter dropped, and the plans read (``plans_read``)."""
    seen: list[tuple[str, str, str]] = []
    real = skips.skipped

    def recording(stage: str, query: skips.Query) -> str | None:
        name = real(stage, query)
        if name is not None:
            seen.append((name, query.func_name, query.root))
        return name
    monkeypatch.setattr(skips, "skipped", recording)
    return seen


@pytest.fixture
def plans_read(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(action, root) of every query whose plan the reader read."""
    seen: list[tuple[str, str]] = []
    real = queryreader.QueryReader._read_plan

    def recording(self: Any, qe: Any, head: Any) -> Any:
        seen.append((head.query.func_name, head.query.root))
        return real(self, qe, head)
    monkeypatch.setattr(queryreader.QueryReader, "_read_plan", recording)
    return seen


@pytest.fixture
def targets_read(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(action, root) of every event whose write target alone the reader read (``target_only``)."""
    seen: list[tuple[str, str]] = []
    real = queryreader.QueryReader._read_target

    def recording(self: Any, qe: Any, action: Any) -> Any:
        seen.append((action.func_name, action.root))
        return real(self, qe, action)
    monkeypatch.setattr(queryreader.QueryReader, "_read_target", recording)
    return seen


def test_each_filter_drops_its_spark_event(spark: Any, tmp_path: Path, dropped: list, plans_read: list,
                                          targets_read: list, reader: Any) -> None:
    csv = tmp_path / "c.csv"
    csv.write_text("a,b\n1,x\n")
    log_dir = tmp_path / "t" / "_delta_log"  # a table format's log, as Delta keeps it
    spark.range(2).write.parquet(str(log_dir))
    stream_in = tmp_path / "stream_in"
    spark.range(3).write.parquet(str(stream_in))
    store = tmp_path / "skips.duckdb"
    handle = lineage_listener.enable(spark, store=str(store))
    try:
        spark.sql("CREATE TABLE sk_t (a INT) USING parquet")
        spark.sql("SHOW TABLES").collect()
        spark.sql("SHOW TABLES").limit(5).collect()
        spark.read.option("header", True).option("inferSchema", True).csv(str(csv))
        spark.sql("CREATE OR REPLACE TEMP VIEW sk_v AS SELECT 1 AS x")
        spark.read.parquet(str(log_dir)).collect()
        stream = (spark.readStream.schema("id BIGINT").parquet(str(stream_in))
                  .writeStream.format("memory").queryName("sk_mem").start())
        try:
            stream.processAllAvailable()
        finally:
            stream.stop()
        spark.range(3).collect()  # kept: the user's own read
        recursive = tuple(int(p) for p in spark.version.split(".")[:2]) >= (4, 1)
        if recursive:  # its anchor (a read of a table) runs as a query of its own
            spark.sql("WITH RECURSIVE r(n) AS (SELECT a FROM sk_t UNION ALL SELECT n + 1 FROM r WHERE n < 2) "
                      "SELECT n FROM r").collect()
        spark.sql("CREATE TABLE sk_ctas USING parquet AS SELECT 1 AS x")  # kept: one write, read once
        assert handle.flush(60)
    finally:
        lineage_listener.disable(spark)
        spark.sql("DROP TABLE IF EXISTS sk_t")
        spark.sql("DROP TABLE IF EXISTS sk_ctas")
        spark.catalog.dropTempView("sk_v")
    by_filter: dict[str, set[tuple[str, str]]] = {}
    for name, action, root in dropped:
        by_filter.setdefault(name, set()).add((action, root))
    assert ("command", "CreateDataSourceTableCommand") in by_filter["utility_command"]
    assert ("collectToPython", "ShowTables") in by_filter["command_result"]  # rows of SHOW TABLES, run already
    assert ("collectToPython", "GlobalLimit") in by_filter["command_results_only"]
    assert {a for a, _ in by_filter["schema_inference"]} <= {"head", "rdd"} and by_filter["schema_inference"]
    assert ("command", "CreateViewCommand") in by_filter["temp_view"]
    assert {a for a, _ in by_filter["format_internal_plan"]} == {"collectToPython"}
    assert {r for _, r in by_filter["stream_sink"]} <= STREAM_SINK_WRITES and by_filter["stream_sink"]
    assert targets_read == [("command", "CreateDataSourceTableAsSelectCommand")]  # the CTAS wrapper: its target only
    assert ("command", "CreateDataSourceTableAsSelectCommand") not in plans_read
    assert set(by_filter) == ({s.name for s in skips.SKIPS} - {"format_internal"}  # Delta's: the next test
                              - (set() if recursive else {"recursion_step"}))
    if recursive:
        assert {a for a, _ in by_filter["recursion_step"]} == {"collect"}  # Spark collects the anchor
    head_dropped = {(a, r) for name, a, r in dropped
                    if next(s.stage for s in skips.SKIPS if s.name == name) == skips.HEAD}
    assert head_dropped and not head_dropped & set(plans_read), "a query dropped on its head is never read"
    with duckdb.connect(str(store), read_only=True) as con:
        kept = con.execute("SELECT action, command, target_dataset FROM queries WHERE action <> 'stream' "
                           "ORDER BY action").fetchall()
    assert sorted(kept) == [("collectToPython", "Range", None)] + (
        [("collectToPython", "WithCTE", None)] if recursive else []) + [
        ("command", "CreateDataSourceTableAsSelectCommand", "spark_catalog.default.sk_ctas")]


def test_a_table_formats_own_action_is_dropped_before_its_plan_is_read(spark: Any, people: str, dropped: list,
                                                                        plans_read: list) -> None:
    """Delta's data write reaches the listener as action ``deltaTransactionalWrite`` (Delta is not on
    this session: the action name is given to the reader with a real query)."""
    qe = spark.table("people")._jdf.queryExecution()
    reader = queryreader.QueryReader()
    assert reader.read("deltaTransactionalWrite", qe, 1_000_000) is None
    assert reader.read("collect", qe, 1_000_000) is not None
    assert [(name, action) for name, action, _ in dropped] == [("format_internal", "deltaTransactionalWrite")]
    assert [a for a, _ in plans_read] == ["collect"]
