"""A run Airflow launched, captured in process: the conf keys exactly as Airflow's OpenLineage provider
sets them give the run its parent (the task) and root (the DAG run); the OpenLineage export says so
in the spec's ``parent`` facet (validated against the spec) with each write's statistics, and an
ingest of that export gives back the same run, parent, root and counts. The zero-code bridge, and
Airflow's own events ingested beside the run: ``tests/test_zero_code_run.py``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from lineage_listener.openlineage import ingest
from lineage_listener.openlineage.export import export
from tests.test_openlineage import read_ndjson, registry, validate  # noqa: F401 - the spec's registry

#: ``_get_parent_job_information_as_spark_properties`` of apache-airflow-providers-openlineage: the
#: namespace, ``<dag_id>.<task_id>``, the task run's UUID (v7), ``<dag_id>`` and the DAG run's UUID.
PARENT = {
    "spark.openlineage.parentJobNamespace": "default",
    "spark.openlineage.parentJobName": "orders_daily.load_orders",
    "spark.openlineage.parentRunId": "01936e5b-8f3a-7c2d-9a4b-5e6f7a8b9c0d",
    "spark.openlineage.rootParentRunId": "01936e5b-7a10-7b4e-8c3d-2f1e0d9c8b7a",
    "spark.openlineage.rootParentJobName": "orders_daily",
    "spark.openlineage.rootParentJobNamespace": "default",
}
COLUMNS = ("parent_job_namespace", "parent_job_name", "parent_run_id", "root_parent_job_namespace",
           "root_parent_job_name", "root_parent_run_id")


@pytest.fixture
def launched(spark: Any) -> Any:
    """The application's conf holds the keys, as ``spark-submit --conf`` gives them (removed after)."""
    conf = spark.sparkContext._jsc.sc().conf()  # the live SparkConf the context reads
    for key, value in PARENT.items():
        conf.set(key, value)
    yield spark
    for key in PARENT:
        conf.remove(key)


def _run(store: Path, where: str = "") -> tuple:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(f"SELECT {', '.join(COLUMNS)} FROM runs {where}").fetchone()


def test_parent_and_root_recorded_exported_and_read_back(launched, lineage, tmp_path, registry):
    spark = launched
    out = tmp_path / "airflow_out"
    lineage.run(lambda: spark.range(5).selectExpr("id", "id * 2 AS twice").write.parquet(str(out)))
    assert _run(lineage.store) == tuple(PARENT[k] for k in (
        "spark.openlineage.parentJobNamespace", "spark.openlineage.parentJobName", "spark.openlineage.parentRunId",
        "spark.openlineage.rootParentJobNamespace", "spark.openlineage.rootParentJobName",
        "spark.openlineage.rootParentRunId"))

    events_file = tmp_path / "events.ndjson"
    export(lineage.store, out=str(events_file))
    events = read_ndjson(events_file)
    for event in events:
        validate(event, registry)
    application = [e for e in events if e["job"]["facets"]["jobType"]["jobType"] == "APPLICATION"]
    assert application and all(e["run"]["facets"]["parent"]["run"]["runId"] == PARENT["spark.openlineage.parentRunId"]
                               and e["run"]["facets"]["parent"]["job"]["name"] == "orders_daily.load_orders"
                               and e["run"]["facets"]["parent"]["root"]["run"]["runId"]
                               == PARENT["spark.openlineage.rootParentRunId"] for e in application)
    write = next(e for e in events if e["eventType"] == "COMPLETE" and e.get("outputs"))
    parent = write["run"]["facets"]["parent"]  # the query's parent: its application, under the DAG run
    assert parent["run"]["runId"] == application[0]["run"]["runId"]
    assert parent["root"]["run"]["runId"] == PARENT["spark.openlineage.rootParentRunId"]
    assert (parent["root"]["job"]["namespace"], parent["root"]["job"]["name"]) == ("default", "orders_daily")
    assert write["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 5

    back = tmp_path / "back.duckdb"
    with open(events_file) as f:
        ingest.ingest(str(back), f)
    app_run = _app_run(lineage.store)
    assert _run(back, f"WHERE run_id = '{app_run}'") == _run(lineage.store)
    with duckdb.connect(str(back), read_only=True) as con:
        assert con.execute("SELECT rows FROM write_statistics").fetchall() == [(5,)]


def _app_run(store: Path) -> str:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute("SELECT run_id FROM runs").fetchone()[0]


def test_a_run_without_a_scheduler_has_no_parent(lineage, spark, tmp_path):
    lineage.run(lambda: spark.range(2).write.parquet(str(tmp_path / "plain")))
    assert _run(lineage.store) == (None,) * 6
    events_file = tmp_path / "events.ndjson"
    export(lineage.store, out=str(events_file))
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    assert all(e["job"]["facets"]["jobType"]["jobType"] != "APPLICATION" for e in events)
    assert all("root" not in e["run"]["facets"]["parent"] for e in events)
