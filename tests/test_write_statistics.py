"""What each write produced (rows, bytes, files) and the rows each read counted, as Spark measured
them, captured in process with the bridge jar's plan reader and without it (then the write's
counts only); the zero-code bridge is checked in ``tests/test_zero_code_run.py``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from lineage_listener.capture.reading import planreader
from tests.test_plan_reader import reader  # noqa: F401 - the bridge jar's reader, loaded in the driver


@pytest.fixture
def source(spark: Any, tmp_path: Path) -> str:
    path = tmp_path / "ws_src"
    spark.range(100).selectExpr("id", "id % 7 AS k").write.parquet(str(path))
    for table in ("ws_t", "ws_empty", "ws_saved"):
        spark.sql(f"DROP TABLE IF EXISTS {table}")
    yield str(path)
    for table in ("ws_t", "ws_empty", "ws_saved"):
        spark.sql(f"DROP TABLE IF EXISTS {table}")


def _statistics(store: Path, query_ids: list[str]) -> tuple[dict, dict]:
    with duckdb.connect(str(store), read_only=True) as con:
        writes = {t: (r, b, f) for t, r, b, f in con.execute(
            """SELECT q.target_dataset, w.rows, w.bytes, w.files FROM write_statistics w JOIN queries q USING (query_id)
               WHERE query_id IN (SELECT unnest(?))""", [query_ids]).fetchall()}
        reads = {d: (r, b, f) for d, r, b, f in con.execute(
            "SELECT dataset, rows, bytes, files FROM read_statistics WHERE query_id IN (SELECT unnest(?))",
            [query_ids]).fetchall()}
    return writes, reads


@pytest.mark.parametrize("plan_reader", ["compact", "json"])
def test_rows_bytes_and_files_of_each_write(lineage, spark, source, plan_reader, monkeypatch, request):
    if plan_reader == "compact":
        request.getfixturevalue("reader")  # loaded in the driver, or skipped
    monkeypatch.setenv(planreader.ENV, plan_reader)
    table = "spark_catalog.default.ws_t"
    got = lineage.run(lambda: spark.sql(f"CREATE TABLE ws_t USING parquet AS SELECT * FROM parquet.`{source}` "
                                        "WHERE k > 2"))
    writes, reads = _statistics(lineage.store, got.query_ids)
    rows, size, files = writes[table]  # the CTAS folded into one write, its counts kept
    assert rows == spark.table("ws_t").count() == 56
    assert size > 0 and files >= 1
    if plan_reader == "compact":  # the scan's counts: the source's 100 rows, its files and bytes
        assert reads == {"file:" + source: (100, reads["file:" + source][1], reads["file:" + source][2])}
        assert reads["file:" + source][1] > 0 and reads["file:" + source][2] >= 1
    else:  # without the plan reader, reads are not counted
        assert reads == {}

    got = lineage.run(lambda: spark.sql("INSERT INTO ws_t SELECT * FROM ws_t WHERE k = 3"))
    assert _statistics(lineage.store, got.query_ids)[0][table][0] == 14

    got = lineage.run(lambda: spark.sql("CREATE TABLE ws_empty USING parquet AS SELECT * FROM ws_t WHERE k > 100"))
    assert _statistics(lineage.store, got.query_ids)[0]["spark_catalog.default.ws_empty"][0] == 0  # a write of nothing

    got = lineage.run(lambda: spark.range(10).write.mode("overwrite").saveAsTable("ws_saved"))
    assert _statistics(lineage.store, got.query_ids)[0]["spark_catalog.default.ws_saved"][0] == 10

    got = lineage.run("SELECT k, count(*) FROM ws_t GROUP BY k")  # a read to the driver: no write row
    writes, reads = _statistics(lineage.store, got.query_ids)
    assert writes == {}
    assert reads == ({table: (70, reads[table][1], reads[table][2])} if plan_reader == "compact" else {})


def _write_event(app_run: str, query_run: str, rows: int, when: str) -> dict:
    """A COMPLETE event of one write of application run ``app_run`` into ``file:/data/daily``,
    with its lineage and its ``outputStatistics`` (as OpenLineage's Spark agent sends them)."""
    producer = "https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark"
    facet = {"_producer": producer, "_schemaURL": "https://openlineage.io/spec/facets/1-0-2/"
             "OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet"}
    lineage = {"_producer": producer, "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/"
               "ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet",
               "fields": {"id": {"inputFields": [{"namespace": "file", "name": "/data/raw", "field": "id"}]}}}
    return {"eventType": "COMPLETE", "eventTime": when, "producer": producer,
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
            "run": {"runId": query_run, "facets": {"parent": {
                "_producer": producer, "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/ParentRunFacet.json",
                "run": {"runId": app_run}, "job": {"namespace": "spark", "name": "daily_load"}}}},
            "job": {"namespace": "spark", "name": "daily_load.insert"},
            "inputs": [{"namespace": "file", "name": "/data/raw"}],
            "outputs": [{"namespace": "file", "name": "/data/daily", "facets": {"columnLineage": lineage},
                         "outputFacets": {"outputStatistics": {**facet, "rowCount": rows, "size": 10 * rows}}}]}


def test_diff_says_when_a_writes_rows_moved_by_more_than_a_factor(tmp_path):
    """Two runs of one job with the same lineage, the second writing 0 rows: only the counts say so."""
    import io
    import subprocess
    import sys

    from lineage_listener.openlineage import ingest

    store = tmp_path / "lineage.duckdb"
    first, second = ("0193a000-0000-7000-8000-00000000000" + c for c in "12")
    events = [_write_event(first, "0193a000-0000-7000-8000-0000000000a1", 1000, "2026-01-01T06:00:00Z"),
              _write_event(second, "0193a000-0000-7000-8000-0000000000a2", 0, "2026-01-02T06:00:00Z")]
    ingest.ingest(str(store), io.StringIO("\n".join(json.dumps(e) for e in events)))
    with duckdb.connect(str(store), read_only=True) as con:
        assert sorted(con.execute("SELECT rows, bytes FROM write_statistics").fetchall()) == [(0, 0), (1000, 10000)]

    def diff(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "lineage_listener", "diff", "--store", str(store),
                               "--app", "daily_load", "--exit-code", *extra], capture_output=True, text=True)

    plain = diff()
    assert plain.returncode == 0 and "No changes" in plain.stdout  # the lineage is the same
    moved = diff("--rows-factor", "10")
    assert moved.returncode == 1, moved.stderr
    assert "Rows written changed" in moved.stdout and "file:/data/daily" in moved.stdout
    data = json.loads(diff("--rows-factor", "10", "--format", "json").stdout)
    assert data["rows"] == [{"dataset": "file:/data/daily", "old_rows": 1000, "new_rows": 0, "ratio": 0.0}]
    assert diff("--rows-factor", "1").returncode == 2  # a factor must be more than 1
