"""Other producers' OpenLineage events, in the shapes the spec defines: static lineage (JobEvent,
DatasetEvent), symlinks between a table and its location, nested struct fields, the 1-0 facet and
the dataset-level list without transformations, Airflow's DAG -> task parent, dbt's Spark and
DuckDB names. Each fixture under ``tests/fixtures/openlineage/`` is checked against the spec's
JSON Schemas first, then ingested into a real store whose rows are asserted."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import duckdb
import pytest

jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")

from lineage_listener.openlineage import ingest, naming  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "tests" / "data" / "openlineage-spec"
FIXTURES = ROOT / "tests" / "fixtures" / "openlineage"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
EVENT_SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/"


def events_of(path: Path) -> list[dict]:
    text = path.read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()] if path.suffix == ".ndjson" \
        else [json.loads(text)]


SCHEMAS = {s["$id"]: s for s in (json.loads(p.read_text()) for p in
                                  [SPEC / "OpenLineage.json", *sorted((SPEC / "facets").glob("*.json"))])}


@pytest.fixture(scope="module")
def registry() -> "referencing.Registry":
    return referencing.Registry().with_resources(
        (uri, referencing.Resource.from_contents(schema)) for uri, schema in SCHEMAS.items())


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()))
def test_fixtures_are_valid_events_of_the_spec(name, registry):
    """Every facet whose schema version the offline copy holds is checked (the 1-0-1 column lineage is not)."""
    for ev in events_of(FIXTURES / name):
        kind = "RunEvent" if "run" in ev else "JobEvent" if "job" in ev else "DatasetEvent"
        assert ev["schemaURL"].endswith(kind) or "1-0-5" in ev["schemaURL"]
        jsonschema.Draft202012Validator({"$ref": EVENT_SCHEMA + kind}, registry=registry).validate(ev)
        holders = [ev.get("run") or {}, ev.get("job") or {}, *ev.get("inputs", []), *ev.get("outputs", []),
                   ev.get("dataset") or {}]
        for holder in holders:
            for facet in (holder.get("facets") or {}).values():
                if facet["_schemaURL"].partition("#")[0] in SCHEMAS:
                    jsonschema.Draft202012Validator({"$ref": facet["_schemaURL"]}, registry=registry).validate(facet)


def ingested(tmp_path: Path, *names: str) -> Path:
    store = tmp_path / "lineage.duckdb"
    for name in names:
        with open(FIXTURES / name) as stream:
            assert ingest.ingest(str(store), stream)["written"]
    return store


def rows(store: Path, sql: str, *params) -> list[tuple]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


TRINO = "trino://trino.example.com:8080"


def test_a_job_event_is_the_static_lineage_of_its_job(tmp_path):
    store = ingested(tmp_path, "job_event_static.json")
    query = "openlineage:job:design/daily_revenue"
    assert rows(store, "SELECT query_id, run_id, action, status, target_dataset, captured_at, sql_text "
                       "FROM queries") == [
        (query, "openlineage:design/daily_revenue", "openlineage_job", "succeeded",
         f"{TRINO}/hive.mart.daily_revenue", rows(store, "SELECT TIMESTAMP '2025-06-02 06:00:00'")[0][0],
         "SELECT day, sum(amount) AS revenue FROM shop.orders WHERE status = 'paid' GROUP BY day")]
    orders, daily = f"{TRINO}/hive.shop.orders", f"{TRINO}/hive.mart.daily_revenue"
    assert set(rows(store, "SELECT query_id, target_dataset, target_column, source_dataset, source_column, "
                           "transform, kind, expression FROM column_lineage")) == {
        (query, daily, "day", orders, "day", "identity", "direct", None),
        (query, daily, "revenue", orders, "amount", "aggregate", "direct", "sum(amount)"),
        (query, daily, None, orders, "status", "filter", "indirect", "status = 'paid'"),
        (query, daily, None, orders, "day", "group_by", "indirect", None)}
    # the same JobEvent again adds nothing
    with open(FIXTURES / "job_event_static.json") as stream:
        assert ingest.ingest(str(store), stream)["new_edges"] == 0
    assert rows(store, "SELECT count(*) FROM queries") == [(1,)]


def test_a_source_named_only_in_the_facet_is_a_dataset(tmp_path):
    ev = events_of(FIXTURES / "job_event_static.json")[0]
    del ev["inputs"]
    store = tmp_path / "lineage.duckdb"
    assert ingest.ingest(str(store), io.StringIO(json.dumps(ev)))["edges"] == 4
    assert rows(store, "SELECT dataset, kind FROM datasets ORDER BY dataset") == [
        (f"{TRINO}/hive.mart.daily_revenue", "table"), (f"{TRINO}/hive.shop.orders", "table")]


def test_a_direct_transformation_in_the_dataset_list_is_an_influence(tmp_path):
    ev = events_of(FIXTURES / "job_event_static.json")[0]
    entry = ev["outputs"][0]["facets"]["columnLineage"]["dataset"][1]
    entry["transformations"] = [{"type": "DIRECT", "subtype": "AGGREGATION", "masking": False}]
    store = tmp_path / "lineage.duckdb"
    assert ingest.ingest(str(store), io.StringIO(json.dumps(ev)))["written"]
    assert rows(store, "SELECT source_column, transform, kind FROM column_lineage WHERE target_column IS NULL "
                       "ORDER BY 1") == [("day", "aggregation", "indirect"), ("status", "filter", "indirect")]


def test_dataset_events_record_schemas_and_their_column_lineage(tmp_path):
    store = ingested(tmp_path, "dataset_events.ndjson")
    pg = "jdbc:postgresql://db.example.com:5432/crm"
    customers, view = f"{pg}/public.customers", f"{pg}/public.customer_view"
    assert set(rows(store, "SELECT dataset, column_name, data_type, ordinal FROM dataset_columns")) == {
        (customers, "id", "bigint", 1), (customers, "email", "text", 2),
        (view, "id", "bigint", 1), (view, "email_hash", "text", 2)}
    assert rows(store, "SELECT dataset, kind FROM datasets ORDER BY dataset") == [(view, "jdbc"), (customers, "jdbc")]
    # only the dataset with column lineage is a query: a schema alone is no lineage
    query = "openlineage:dataset:postgres://db.example.com:5432/crm.public.customer_view"
    assert rows(store, "SELECT query_id, action, status, target_dataset FROM queries") == [
        (query, "openlineage_dataset", "succeeded", view)]
    assert set(rows(store, "SELECT target_column, source_dataset, source_column, transform, masking "
                           "FROM column_lineage")) == {
        ("id", customers, "id", "identity", False), ("email_hash", customers, "email", "derived", True)}


def test_symlinks_link_a_table_and_its_location_as_one_dataset(tmp_path):
    store = ingested(tmp_path, "symlinks.ndjson")
    table, path = "hive://metastore.example.com:9083/mart.events", "s3://lake/warehouse/mart.db/events"
    sessions = "hive://metastore.example.com:9083/mart.sessions"
    sessions_path = "hdfs://namenode:8020/warehouse/mart.db/sessions"
    assert set(rows(store, "SELECT dataset, kind, location FROM datasets")) == {
        ("s3://lake/raw/events", "path", None), (path, "path", None), (table, "table", path),
        (sessions, "table", sessions_path), ("hive://metastore.example.com:9083/mart.events_daily", "table", None)}
    # the Spark agent names the path it wrote, the table reads it: one dataset for lineage questions
    assert rows(store, "SELECT lineage_canonical(?), lineage_canonical(?)", path, sessions_path) == [(table, sessions)]
    assert rows(store, "SELECT target_dataset, source_dataset FROM column_lineage ORDER BY 1") == [
        ("hive://metastore.example.com:9083/mart.events_daily", sessions), (path, "s3://lake/raw/events")]


def test_nested_fields_are_paths_and_dotted_top_level_names_are_quoted(tmp_path):
    store = ingested(tmp_path, "nested_and_legacy.ndjson")
    users = "kafka://broker.example.com:9092/users"
    assert rows(store, "SELECT column_name, data_type, ordinal FROM dataset_columns WHERE dataset = ? "
                       "ORDER BY ordinal", users) == [
        ("id", "long", 1), ("address", "struct", 2), ("address.city", "string", 3), ("address.geo", "struct", 4),
        ("address.geo.lat", "double", 5), ("`meta.source`", "string", 6)]
    assert set(rows(store, "SELECT target_column, source_column, transform, kind FROM column_lineage "
                           "WHERE source_dataset = ?", users)) == {
        ("city", "address.city", "rename", "direct"),
        ("lat", "address.geo.lat", "rename", "direct"), ("origin", "`meta.source`", "rename", "direct"),
        (None, "id", "indirect", "indirect")}  # the dataset list without a transformation: nothing guessed


def test_the_1_0_facet_maps_per_field_types_and_reads_masked_in_any_case(tmp_path):
    store = ingested(tmp_path, "nested_and_legacy.ndjson")
    assert set(rows(store, "SELECT target_column, source_column, transform, kind, expression, masking "
                           "FROM column_lineage WHERE source_dataset = 'file:/data/users.csv'")) == {
        ("email", "email", "derived", "direct", "sha256(email)", True),
        ("name", "name", "derived", "direct", None, False)}
    # an event time without an offset is UTC; one with an offset (and nanoseconds) is converted to UTC
    assert set(rows(store, "SELECT query_id, CAST(captured_at AS VARCHAR) FROM queries")) == {
        ("openlineage:0197a0c0-0000-7000-8000-0000000000b1", "2025-06-04 06:30:00.123456"),
        ("openlineage:0197a0c0-0000-7000-8000-0000000000b2", "2025-06-04 13:00:00")}


def test_an_airflow_task_run_belongs_to_its_dag_run(tmp_path):
    """The DAG run's own events (jobType DAG) are the application run: its start and end, no query."""
    store = ingested(tmp_path, "airflow_dag_task.ndjson")
    dag_run = "openlineage:0197a0c0-0000-7000-8000-0000000000d1"
    assert rows(store, "SELECT run_id, app_name, CAST(started_at AS VARCHAR), CAST(ended_at AS VARCHAR) "
                       "FROM runs") == [(dag_run, "sales_dag", "2025-06-05 05:59:58", "2025-06-05 06:01:00")]
    assert rows(store, "SELECT query_id, run_id, command, status, duration_ms FROM queries") == [
        ("openlineage:0197a0c0-0000-7000-8000-0000000000d2", dag_run, "sales_dag.load_totals", "succeeded", 42500)]
    orders, totals = (f"jdbc:snowflake://org-acct/ANALYTICS/PUBLIC.{t}" for t in ("ORDERS", "TOTALS"))
    assert set(rows(store, "SELECT target_dataset, target_column, source_dataset, source_column, transform "
                           "FROM column_lineage")) == {
        (totals, "TOTAL", orders, "AMOUNT", "aggregate"), (totals, None, orders, "CUSTOMER_ID", "group_by")}
    # one request per event, last first (as an HTTP transport may deliver them): the same rows
    one_by_one = tmp_path / "one_by_one.duckdb"
    for line in reversed((FIXTURES / "airflow_dag_task.ndjson").read_text().splitlines()):
        assert ingest.ingest(str(one_by_one), io.StringIO(line))["written"]
    for sql in ("SELECT * FROM runs", "SELECT * FROM queries",
                "SELECT * FROM column_lineage ORDER BY ALL"):
        assert rows(one_by_one, sql) == rows(store, sql)


def test_dbt_spark_and_duckdb_names_are_kept_as_sent(tmp_path):
    store = ingested(tmp_path, "dbt_spark_duckdb_names.ndjson")
    spark, duck = "spark://adb-123.azuredatabricks.net:443", "duckdb:///srv/data/shop.duckdb"
    stored = dict(rows(store, "SELECT dataset, kind FROM datasets"))
    assert stored == {f"{spark}/main.raw.orders": "table", f"{spark}/main.stg.orders": "table",
                      f"{duck}/shop.main.raw_customers": "table", f"{duck}/shop.main.customers": "table"}
    sent = {(d["namespace"], d["name"]) for ev in events_of(FIXTURES / "dbt_spark_duckdb_names.ndjson")
            for d in ev["inputs"] + ev["outputs"]}
    assert {naming.to_openlineage(name) for name in stored} == sent


def test_a_job_event_without_a_job_name_is_refused_in_one_line(tmp_path):
    ev = events_of(FIXTURES / "job_event_static.json")[0]
    del ev["job"]["name"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(ev))
    store = tmp_path / "cli.duckdb"
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", "ingest", "openlineage", "--store", str(store),
                           str(path)], capture_output=True, text=True, env=ENV, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [proc.stderr.strip()], proc.stderr
    assert "job.name: required" in proc.stderr
    assert not store.exists()


def test_static_events_posted_to_the_server_are_stored_as_from_a_file(tmp_path):
    pytest.importorskip("fastapi")
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.writer import StoreWriter
    from tests.server_helpers import TOKEN, Server

    store = tmp_path / "served.duckdb"
    assert StoreWriter(store).write(Batch())
    events = events_of(FIXTURES / "job_event_static.json") + events_of(FIXTURES / "dataset_events.ndjson")
    srv = Server(store).start()
    try:
        req = urllib.request.Request(f"{srv.url}/api/v1/lineage", data=json.dumps(events).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(req, timeout=120) as answer:
            assert answer.status == 200
    finally:
        srv.stop()
    from_file = ingested(tmp_path, "job_event_static.json", "dataset_events.ndjson")
    for sql in ("SELECT query_id, run_id, action, status, target_dataset FROM queries ORDER BY ALL",
                "SELECT query_id, target_dataset, target_column, source_dataset, source_column, transform "
                "FROM column_lineage ORDER BY ALL",
                "SELECT dataset, column_name, ordinal FROM dataset_columns ORDER BY ALL"):
        assert rows(store, sql) == rows(from_file, sql) != []
