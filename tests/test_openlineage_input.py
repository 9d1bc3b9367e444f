"""Hostile or unusual OpenLineage input: a clear 400 / one CLI line naming the
bad JSON path, masking read exactly, unknown subtypes kept, gzip bodies bounded after
decompression, and the naming spec's namespaces coming back as they were sent."""
from __future__ import annotations

import copy
import gzip
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import duckdb
import pytest

pytest.importorskip("openlineage.client")
pytest.importorskip("fastapi")
jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")

from tests.server_helpers import ROOT, TOKEN, Server  # noqa: E402
from tests.test_openlineage_runs import run_events  # noqa: E402

SPEC = ROOT / "tests" / "data" / "openlineage-spec"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
COLUMN_LINEAGE = "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.writer import StoreWriter

    store = tmp_path_factory.mktemp("input") / "lineage.duckdb"
    assert StoreWriter(store).write(Batch())  # the tables exist before the first request
    srv = Server(store).start()
    yield srv
    srv.stop()


def post(url: str, body: bytes, headers: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def complete(run_id: str) -> dict:
    return copy.deepcopy(run_events(run_id)["COMPLETE"])


def spec_errors(facet: dict) -> list[str]:
    """What the OpenLineage ColumnLineageDatasetFacet schema says about ``facet``."""
    resources = []
    for path in (SPEC / "OpenLineage.json", SPEC / "facets" / "ColumnLineageDatasetFacet.json"):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], referencing.Resource.from_contents(schema)))
    registry = referencing.Registry().with_resources(resources)
    validator = jsonschema.Draft202012Validator({"$ref": f"{COLUMN_LINEAGE}#/$defs/ColumnLineageDatasetFacet"},
                                                registry=registry)
    return [e.message for e in validator.iter_errors(facet)]


def _lineage(ev: dict) -> dict:
    return ev["outputs"][0]["facets"]["columnLineage"]


def _first_transformation(ev: dict) -> dict:
    return _lineage(ev)["fields"]["id"]["inputFields"][0]["transformations"][0]


BAD = {  # name: (how to break a COMPLETE event, the JSON path the answer must name)
    "columnLineage as a string": (lambda ev: ev["outputs"][0]["facets"].update(columnLineage="id <- id"),
                                  "outputs[0].facets.columnLineage: expected an object, got a string"),
    "columnLineage as a list": (lambda ev: ev["outputs"][0]["facets"].update(columnLineage=[]),
                                "outputs[0].facets.columnLineage: expected an object, got a list"),
    "fields as a string": (lambda ev: _lineage(ev).update(fields="id"),
                           "outputs[0].facets.columnLineage.fields: expected an object, got a string"),
    "fields as a list": (lambda ev: _lineage(ev).update(fields=[{"id": {}}]),
                         "outputs[0].facets.columnLineage.fields: expected an object, got a list"),
    "transformations as a string": (
        lambda ev: _lineage(ev)["fields"]["id"]["inputFields"][0].update(transformations="IDENTITY"),
        "outputs[0].facets.columnLineage.fields.id.inputFields[0].transformations: expected a list, got a string"),
    "masking as a string": (
        lambda ev: _first_transformation(ev).update(masking="false"),
        "outputs[0].facets.columnLineage.fields.id.inputFields[0].transformations[0].masking: "
        "expected true or false, got a string"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_shapes_get_400_naming_the_path_and_one_cli_line(server, tmp_path, case):
    break_it, message = BAD[case]
    run_id = f"0176a8c2-fe01-7439-87e6-{sorted(BAD).index(case):012d}"
    ev = complete(run_id)
    assert spec_errors(_lineage(ev)) == []
    break_it(ev)
    assert spec_errors(_lineage(ev)), "the spec's schema rejects it too"
    status, answer = post(f"{server.url}/api/v1/lineage", json.dumps(ev).encode())
    assert status == 400 and message in answer["detail"], answer
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(ev))
    store = tmp_path / "cli.duckdb"
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", "ingest", "openlineage", "--store", str(store),
                           str(path)], capture_output=True, text=True, env=ENV, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, \
        proc.stderr
    with duckdb.connect(str(server.store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM queries WHERE query_id = ?",
                           [f"openlineage:{run_id}"]).fetchone()[0] == 0
    assert not store.exists()


def test_masking_is_read_exactly_and_unknown_subtypes_are_kept(server, tmp_path):
    run_id = "0176a8c2-fe01-7439-87e6-00000000bb01"
    ev = complete(run_id)
    _first_transformation(ev)["masking"] = True
    _lineage(ev)["dataset"][0]["transformations"][0]["subtype"] = "MAGIC"
    _lineage(ev)["fields"]["total"]["inputFields"][0]["transformations"][0]["subtype"] = "SAMPLING"
    assert spec_errors(_lineage(ev)) == []
    assert post(f"{server.url}/api/v1/lineage", json.dumps(ev).encode())[0] == 200
    with duckdb.connect(str(server.store), read_only=True) as con:
        got = {r[0]: r[1:] for r in con.execute(
            "SELECT coalesce(target_column, '*'), transform, kind, masking FROM column_lineage WHERE query_id = ?",
            [f"openlineage:{run_id}"]).fetchall()}
    assert got["id"] == ("identity", "direct", True)
    assert got["n"] == ("aggregate", "direct", False)
    assert got["*"] == ("magic", "indirect", False)
    assert got["total"] == ("sampling", "direct", False)
    out = tmp_path / "back.ndjson"
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", "export", "openlineage", "--store",
                           str(server.store), "--out", str(out)], capture_output=True, text=True, env=ENV, timeout=120)
    assert proc.returncode == 0, proc.stderr
    back = [json.loads(line) for line in out.read_text().splitlines()]
    [facet] = [o["facets"]["columnLineage"] for e in back if e["eventType"] == "COMPLETE"
               and e["run"]["facets"]["lineage_listener"]["queryId"] == f"openlineage:{run_id}" for o in e["outputs"]]
    assert facet["dataset"][0]["transformations"][0]["subtype"] == "MAGIC"
    assert facet["fields"]["total"]["inputFields"][0]["transformations"][0]["subtype"] == "SAMPLING"


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_gzip_bodies_are_accepted_and_bounded_once_decompressed(server):
    run_id = "0176a8c2-fe01-7439-87e6-00000000bb02"
    status, answer = post(f"{server.url}/api/v1/lineage", gzip.compress(json.dumps(complete(run_id)).encode()),
                          {"Content-Encoding": "gzip"})
    assert status == 200 and answer["new_edges"] == 5, answer
    # 1 GiB of JSON whitespace in about 1 MiB of gzip: refused at the 50 MiB limit, never held whole.
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * (1 << 20)
    bomb = b"".join([deflate.compress(b"{" + block), *(deflate.compress(block) for _ in range(1023)),
                     deflate.compress(b"}"), deflate.flush()])
    assert len(bomb) < 2 << 20
    before = _peak_rss_kb(server.proc.pid)
    status, answer = post(f"{server.url}/api/v1/lineage", bomb, {"Content-Encoding": "gzip"})
    assert status == 413 and "decompressed" in answer["detail"], answer
    grew_mb = (_peak_rss_kb(server.proc.pid) - before) / 1024
    assert grew_mb < 150, f"the server's peak memory grew by {grew_mb:.0f} MB"
    assert post(f"{server.url}/api/v1/lineage", b"\x1f\x8b not gzip", {"Content-Encoding": "gzip"})[0] == 400
    status, answer = post(f"{server.url}/api/v1/lineage", gzip.compress(json.dumps(complete(run_id)).encode()),
                          {"Content-Encoding": "gzip"})
    assert status == 200 and answer["written"] is True and answer["new_edges"] == 0, answer


#: (namespace, name) pairs of the OpenLineage naming spec, as producers send them.
NAMES = [("hive://metastore:9083", "shop.orders"), ("postgres://db:5432", "shop.public.customers"),
         ("mysql://db:3306", "shop.payments"), ("bigquery", "proj.sales.refunds"),
         ("snowflake://org-acct", "DB.PUBLIC.RATES"), ("trino://trino:8080", "hive.shop.items"),
         ("s3://bucket", "raw/returns.csv"), ("gs://bucket", "raw/stock"), ("kafka://broker:9092", "clicks"),
         ("hdfs://nn:8020", "/warehouse/regions"),
         ("file", "/data/fx.csv"), ("file://filer", "/share/calendar.csv"),
         ("abfss://raw@acct.dfs.core.windows.net", "sales/tax")]
TARGET = ("hive://metastore:9083", "mart.daily")


def named_event(run_id: str) -> dict:
    ev = complete(run_id)
    ev["inputs"] = [{"namespace": ns, "name": n} for ns, n in NAMES]
    ev["outputs"][0].update(namespace=TARGET[0], name=TARGET[1])
    _lineage(ev)["fields"] = {f"c{i}": {"inputFields": [{"namespace": ns, "name": n, "field": "x", "transformations": [
        {"type": "DIRECT", "subtype": "IDENTITY"}]}]} for i, (ns, n) in enumerate(NAMES)}
    del _lineage(ev)["dataset"]
    return ev


def exported_names(store: Path, tmp_path: Path) -> set[tuple[str, str]]:
    out = tmp_path / f"{store.stem}.ndjson"
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", "export", "openlineage", "--store", str(store),
                           "--out", str(out)], capture_output=True, text=True, env=ENV, timeout=120)
    assert proc.returncode == 0, proc.stderr
    names = set()
    for line in out.read_text().splitlines():
        ev = json.loads(line)
        if ev["eventType"] == "COMPLETE" and ev["job"]["name"].endswith(".mart.daily"):
            names |= {(d["namespace"], d["name"]) for d in ev["inputs"] + ev["outputs"]}
            names |= {(f["namespace"], f["name"]) for o in ev["outputs"]
                      for spec in o["facets"]["columnLineage"]["fields"].values() for f in spec["inputFields"]}
    return names


def test_naming_spec_namespaces_come_back_as_sent_from_server_and_cli(server, tmp_path):
    ev = named_event("0176a8c2-fe01-7439-87e6-00000000bb03")
    assert post(f"{server.url}/api/v1/lineage", json.dumps(ev).encode())[0] == 200
    assert exported_names(server.store, tmp_path) == {*NAMES, TARGET}
    with duckdb.connect(str(server.store), read_only=True) as con:
        kinds = dict(con.execute("SELECT dataset, kind FROM datasets WHERE dataset LIKE 'hive://%'").fetchall())
    assert kinds == {"hive://metastore:9083/shop.orders": "table", "hive://metastore:9083/mart.daily": "table"}
    path = tmp_path / "named.json"
    path.write_text(json.dumps(named_event("0176a8c2-fe01-7439-87e6-00000000bb04")))
    store = tmp_path / "named.duckdb"
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", "ingest", "openlineage", "--store", str(store),
                           str(path)], capture_output=True, text=True, env=ENV, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert exported_names(store, tmp_path) == {*NAMES, TARGET}
