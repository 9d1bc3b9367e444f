"""OpenLineage runs that arrive event by event: START without lineage, RUNNING
with part of it, COMPLETE (or FAIL) with all of it, each in its own request or file, in any
order, re-sent: the store keeps the union of their edges once, and the terminal event's state."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

pytest.importorskip("openlineage.client")
pytest.importorskip("fastapi")

from tests.server_helpers import ROOT, TOKEN, Server  # noqa: E402

PG = "postgres://db.example.com:5432"
SRC = "jdbc:postgresql://db.example.com:5432/shop/public.orders"
DST = "s3://warehouse/analytics/totals"
SPEC = "https://openlineage.io/spec"


def _field(field: str, type_: str, subtype: str, description: str | None = None) -> dict:
    t = {"type": type_, "subtype": subtype, "masking": False}
    if description is not None:
        t["description"] = description
    return {"namespace": PG, "name": "shop.public.orders", "field": field, "transformations": [t]}


def _lineage(fields: dict[str, list[dict]], dataset: list[dict] | None = None) -> dict:
    facet = {"_producer": "https://example.com",
             "_schemaURL": f"{SPEC}/facets/1-2-0/ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet",
             "fields": {k: {"inputFields": v} for k, v in fields.items()}}
    if dataset is not None:
        facet["dataset"] = dataset
    return facet


#: RUNNING carries id and total; the terminal event carries all four columns and the GROUP BY.
PART = {"id": [_field("id", "DIRECT", "IDENTITY")], "total": [_field("amount", "DIRECT", "AGGREGATION", "sum(amount)")]}
ALL = {**PART, "n": [_field("id", "DIRECT", "AGGREGATION", "count(id)")],
       "customer": [_field("customer_name", "DIRECT", "IDENTITY")]}
GROUP_BY = [_field("id", "INDIRECT", "GROUP_BY")]

EXPECTED = {
    (DST, "id", SRC, "id", "identity", "direct"),
    (DST, "total", SRC, "amount", "aggregate", "direct"),
    (DST, "n", SRC, "id", "aggregate", "direct"),
    (DST, "customer", SRC, "customer_name", "rename", "direct"),
    (DST, None, SRC, "id", "group_by", "indirect"),
}


def run_events(run_id: str, end: str = "COMPLETE") -> dict[str, dict]:
    """START (09:00:00, no lineage), RUNNING (09:00:30, part), end (09:01:35, all) of one run."""
    base = {"producer": "https://github.com/OpenLineage/OpenLineage/tree/1.30.0/integration/airflow",
            "schemaURL": f"{SPEC}/2-0-2/OpenLineage.json#/$defs/RunEvent",
            "run": {"runId": run_id, "facets": {"parent": {
                "_producer": "https://example.com",
                "_schemaURL": f"{SPEC}/facets/1-2-0/ParentRunFacet.json#/$defs/ParentRunFacet",
                "run": {"runId": "0176a8c2-fe01-7439-87e6-000000000001"},
                "job": {"namespace": "airflow", "name": "daily_sales"}}}},
            "job": {"namespace": "airflow", "name": "daily_sales.build_totals"},
            "inputs": [{"namespace": PG, "name": "shop.public.orders"}]}

    def event(kind: str, time: str, lineage: dict | None) -> dict:
        ev = copy.deepcopy(base)
        ev.update(eventType=kind, eventTime=time)
        ev["outputs"] = [{"namespace": "s3://warehouse", "name": "analytics/totals",
                          "facets": {"columnLineage": lineage} if lineage else {}}]
        return ev

    terminal = event(end, "2025-06-01T09:01:35.000Z", _lineage(ALL, GROUP_BY))
    if end == "FAIL":
        terminal["run"]["facets"]["errorMessage"] = {
            "_producer": "https://example.com", "message": "quota exceeded", "programmingLanguage": "python",
            "_schemaURL": f"{SPEC}/facets/1-1-0/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet"}
    return {"START": event("START", "2025-06-01T09:00:00.000Z", None),
            "RUNNING": event("RUNNING", "2025-06-01T09:00:30.000Z", _lineage(PART)),
            end: terminal}


def stored(store: Path, run_id: str) -> tuple[set, int, tuple]:
    """(distinct edges, edge rows, (status, error, duration_ms, captured_at, started_at)) of one run."""
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("SELECT target_dataset, target_column, source_dataset, source_column, transform, kind "
                           "FROM column_lineage WHERE query_id = ?", [f"openlineage:{run_id}"]).fetchall()
        query = con.execute("SELECT status, error, duration_ms, captured_at, started_at FROM queries "
                            "LEFT JOIN query_starts USING (query_id) WHERE query_id = ?",
                            [f"openlineage:{run_id}"]).fetchone()
    return set(rows), len(rows), query


def post(url: str, event: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=json.dumps(event).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("runs") / "lineage.duckdb").start()
    yield srv
    srv.stop()


COMPLETED = ("succeeded", None, 95_000, datetime(2025, 6, 1, 9, 1, 35), datetime(2025, 6, 1, 9, 0))
FAILED = ("failed", "quota exceeded", 95_000, datetime(2025, 6, 1, 9, 1, 35), datetime(2025, 6, 1, 9, 0))


@pytest.mark.parametrize("run_id, order, end, final", [
    ("0176a8c2-fe01-7439-87e6-00000000aa01", ("START", "RUNNING", "COMPLETE"), "COMPLETE", COMPLETED),
    ("0176a8c2-fe01-7439-87e6-00000000aa02", ("FAIL", "RUNNING", "START"), "FAIL", FAILED),
])
def test_events_posted_one_by_one_store_the_union_once(server, run_id, order, end, final):
    url = f"{server.url}/api/v1/lineage"
    events = run_events(run_id, end)
    new = 0
    for kind in order:
        status, answer = post(url, events[kind])
        assert status == 200 and answer["written"] is True, answer
        new += answer["new_edges"]
    edges, rows, query = stored(server.store, run_id)
    assert edges == EXPECTED and rows == len(EXPECTED) and new == len(EXPECTED)
    assert query == final  # state, error and end time from the terminal event, duration from START
    for kind in (*order, end):  # re-sending any event adds nothing and changes no state
        status, answer = post(url, events[kind])
        assert status == 200 and answer["new_edges"] == 0, answer
    assert stored(server.store, run_id) == (EXPECTED, len(EXPECTED), final)


def test_a_run_without_its_end_yet_is_running_and_not_exported(server):
    run_id = "0176a8c2-fe01-7439-87e6-00000000aa03"
    events = run_events(run_id)
    for kind in ("RUNNING", "START"):
        assert post(f"{server.url}/api/v1/lineage", events[kind])[0] == 200
    edges, rows, query = stored(server.store, run_id)
    assert rows == 2 and {e[1] for e in edges} == {"id", "total"}
    assert query == ("running", None, None, datetime(2025, 6, 1, 9, 0), datetime(2025, 6, 1, 9, 0))
    post(f"{server.url}/api/v1/lineage", events["COMPLETE"])
    assert stored(server.store, run_id) == (EXPECTED, len(EXPECTED), COMPLETED)


def test_ingest_called_once_per_file_stores_the_union(tmp_path):
    run_id = "0176a8c2-fe01-7439-87e6-00000000aa04"
    store = tmp_path / "ingested.duckdb"
    events = run_events(run_id)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def ingest(kind: str) -> str:
        path = tmp_path / f"{kind.lower()}.json"
        path.write_text(json.dumps(events[kind]))
        proc = subprocess.run([sys.executable, "-m", "lineage_listener", "ingest", "openlineage", "--store",
                               str(store), str(path)], capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    for kind in ("RUNNING", "COMPLETE", "START"):
        ingest(kind)
    assert stored(store, run_id) == (EXPECTED, len(EXPECTED), COMPLETED)
    assert "(0 new to the store)" in ingest("COMPLETE")
    assert stored(store, run_id) == (EXPECTED, len(EXPECTED), COMPLETED)
