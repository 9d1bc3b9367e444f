"""The lineage server: REST answers, security, collecting from many drivers across a restart."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import duckdb
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import lineage_listener  # noqa: E402
from lineage_listener.query.store import open_store  # noqa: E402
from lineage_listener.store.remote import RemoteWriter  # noqa: E402
from tests.certs import Certs  # noqa: E402
from tests.server_helpers import ROOT, TOKEN, Server, free_port  # noqa: E402


def get(url: str) -> tuple[int, object]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def post(url: str, body: bytes, token: str | None = None) -> int:
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.fixture(scope="module")
def server(demo_store, tmp_path_factory):
    store = tmp_path_factory.mktemp("served") / "lineage.duckdb"
    store.write_bytes(demo_store.read_bytes())
    srv = Server(store).start()
    yield srv
    srv.stop()


def lineage_url(srv: Server, dataset: str, column: str, **params) -> str:
    q = urllib.parse.urlencode(params)
    return (f"{srv.url}/v3/namespaces/default/datasets/{urllib.parse.quote(dataset, safe='')}/columns/"
            f"{urllib.parse.quote(column, safe='')}/lineage?{q}")


def test_datasets_search_and_detail(server):
    status, found = get(f"{server.url}/api/datasets?q=SUMMARY")
    assert status == 200 and [d["dataset"] for d in found] == ["spark_catalog.sales.customer_summary"]
    status, detail = get(f"{server.url}/api/datasets/{urllib.parse.quote('spark_catalog.sales.customer_summary')}")
    assert status == 200
    assert {c["name"] for c in detail["columns"]} == {"customer_id", "name", "email_hash", "total_spend"}
    assert any(u.endswith("/raw/customers.csv") for u in detail["upstream"])
    assert {q["role"] for q in detail["queries"]} == {"wrote", "read"}


def test_column_lineage_matches_the_python_api(server):
    ds, col = "spark_catalog.sales.customer_summary", "email_hash"
    status, body = get(lineage_url(server, ds, col, maxLevels=2))
    assert status == 200
    g = open_store(server.store).upstream(ds, col, depth=2)
    assert {(n["dataset"], n["column"]) for n in body["nodes"]} == set(g.nodes)
    got = {((e["source"]["dataset"], e["source"]["column"]), (e["target"]["dataset"], e["target"]["column"]),
            e["transform"], e["masking"]) for e in body["edges"]}
    assert got == {(u, v, d["transform"], d["masking"]) for u, v, d in g.edges(data=True)}
    email = next(e for e in body["edges"] if e["source"]["column"] == "email")
    assert (email["transform"], email["kind"], email["masking"]) == ("derived", "direct", True)
    assert email["expression"].startswith("sha2(") and email["query_id"] and email["captured_at"]
    status, both = get(lineage_url(server, ds, col, direction="both"))
    assert status == 200 and len(both["nodes"]) >= len(body["nodes"])


def test_unknown_names_404_with_closest_and_bad_parameters_400(server):
    status, body = get(lineage_url(server, "spark_catalog.sales.customer_summary", "emial_hash"))
    assert status == 404 and "email_hash" in body["detail"]
    status, body = get(f"{server.url}/api/datasets/spark_catalog.sales.customer_sumary")
    assert status == 404 and body["detail"]["closest"][0] == "spark_catalog.sales.customer_summary"
    status, body = get(lineage_url(server, "spark_catalog.sales.customer_summary", "email_hash", maxLevels=-1))
    assert status == 400 and "maxLevels" in body["detail"]
    status, body = get(lineage_url(server, "spark_catalog.sales.customer_summary", "email_hash", start="yesterday-ish"))
    assert status == 400 and "yesterday-ish" in body["detail"]
    status, body = get(f"{server.url}/api/datasets?q=%27%3B%20DROP%20TABLE%20datasets%3B--")
    assert status == 200 and body == []
    assert get(f"{server.url}/api/datasets")[0] == 200  # still there


def test_runs_and_reports(server):
    status, runs = get(f"{server.url}/api/runs")
    # the sample job's three writes and one collect; Spark's CSV schema inference reads are not user queries
    assert status == 200 and runs[0]["app_name"] and runs[0]["queries"] == 4
    status, run = get(f"{server.url}/api/runs/{urllib.parse.quote(runs[0]['run_id'])}")
    assert status == 200 and any(q["target_dataset"] == "spark_catalog.sales.customer_summary" for q in run["queries"])
    status, report = get(f"{server.url}/api/impact?dataset=spark_catalog.sales.customer_summary&column=email_hash")
    assert status == 200 and report["reads"] and report["column"] == "email_hash"
    status, report = get(f"{server.url}/api/provenance?dataset=spark_catalog.sales.customer_summary&column=email_hash")
    assert status == 200 and "customers.csv" in json.dumps(report)
    assert get(f"{server.url}/openapi.json")[0] == 200


def test_writes_need_the_token_and_bounded_bodies(server, tmp_path):
    batches = f"{server.url}/api/batches"
    assert post(batches, b'{"rows": {}}') == 401
    assert post(batches, b'{"rows": {}}', token="wrong") == 401
    assert post(batches, b"not json", token=TOKEN) == 400
    assert post(batches, b'{"rows": {}}', token=TOKEN) == 200
    big = b'{"rows": {"queries": [' + b'["x"],' * (9 * 1024 * 1024) + b'["y"]]}}'
    try:  # refused from its Content-Length: 413, or the connection closed before the body was read
        assert post(batches, big, token=TOKEN) == 413
    except urllib.error.URLError as exc:
        assert "reset" in str(exc) or "Broken pipe" in str(exc)
    assert get(f"{server.url}/api/runs")[0] == 200  # still serving
    no_token = Server(tmp_path / "other.duckdb", token=None).start()
    try:
        assert post(f"{no_token.url}/api/batches", b'{"rows": {}}', token="anything") == 403
    finally:
        no_token.stop()
    env = {k: v for k, v in {**os.environ, "PYTHONPATH": str(ROOT)}.items() if k != "LINEAGE_SERVER_TOKEN"}
    for extra, needs in (([], "--access FILE"), (["--public-read"], "token")):  # beyond this machine
        proc = subprocess.run([sys.executable, "-m", "lineage_listener", "serve", "--store", str(tmp_path / "x.duckdb"),
                               "--host", "0.0.0.0", "--port", str(free_port()), *extra], capture_output=True, text=True,
                              env=env, timeout=60)
        assert proc.returncode == 2 and needs in proc.stderr


def test_openlineage_events_posted_to_the_server_are_stored(server):
    pytest.importorskip("openlineage.client")
    from tests.test_openlineage import FOREIGN

    assert post(f"{server.url}/api/v1/lineage", json.dumps(FOREIGN).encode(), token=TOKEN) == 200
    with duckdb.connect(str(server.store), read_only=True) as con:
        n = con.execute("SELECT count(*) FROM column_lineage WHERE query_id = ?",
                        ["openlineage:" + FOREIGN["run"]["runId"]]).fetchone()[0]
    assert n == 4


def edge_counts(store: Path) -> tuple[int, int]:
    with duckdb.connect(str(store), read_only=True) as con:
        total = con.execute("SELECT count(*) FROM column_lineage").fetchone()[0]
        distinct = con.execute("SELECT count(*) FROM (SELECT DISTINCT query_id, target_dataset, target_column, "
                               "source_dataset, source_column, transform FROM column_lineage)").fetchone()[0]
    return total, distinct


def test_many_drivers_one_server_across_a_restart(spark, people, demo_store, tmp_path):
    """A zero-code spark-submit job and an in-process job post to one server over HTTPS (a private CA),
    stopped and restarted mid-run: every edge arrives exactly once. The zero-code job keeps SQL text
    masked (``spark.lineage.sqlText``): its literal values never reach the server."""
    store = tmp_path / "central.duckdb"
    certs = Certs(tmp_path)
    srv = Server(store, tls=certs.server).start()
    out = tmp_path / "job"
    conf = subprocess.run([sys.executable, "-m", "lineage_listener", "spark-conf", "--store", str(tmp_path / "unused")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    submit = Path(sys.executable).with_name("spark-submit")
    job = subprocess.Popen([str(submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
                            *conf.stdout.split(), "--conf", f"spark.lineage.url={srv.url}",
                            "--conf", f"spark.lineage.token={TOKEN}", "--conf", f"spark.lineage.tls.ca={certs.ca}",
                            "--conf", "spark.lineage.sqlText=masked", str(ROOT / "examples" / "sample_job.py"),
                            str(out)],
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    handle = lineage_listener.enable(spark, store=str(tmp_path / "unused-local.duckdb"), url=srv.url, token=TOKEN,
                                     tls_ca=str(certs.ca))
    assert isinstance(handle.capture.writer, RemoteWriter)
    try:
        spark.sql("SELECT upper(name) AS u FROM people").write.mode("overwrite").parquet(str(tmp_path / "a"))
        assert handle.flush(60) is True
        srv.stop()  # the server goes away mid-run...
        spark.sql("SELECT amount * 2 AS d FROM people").write.mode("overwrite").parquet(str(tmp_path / "b"))
        assert handle.flush(60) is False  # ...lineage is spooled on the driver
        srv.start()  # ...and comes back on the same port
        spark.sql("SELECT id, email FROM people").write.mode("overwrite").parquet(str(tmp_path / "c"))
        assert handle.flush(60) is True  # the spooled batch first, then this one
    finally:
        lineage_listener.disable(spark)
    log, _ = job.communicate(timeout=300)
    assert job.returncode == 0, log[-3000:]
    RemoteWriter(srv.url, TOKEN, tls_ca=str(certs.ca)).push_spool()  # what the job spooled while the server was down
    srv.stop()
    with duckdb.connect(str(demo_store), read_only=True) as con:
        sample_edges = con.execute("SELECT count(*) FROM column_lineage").fetchone()[0]
    total, distinct = edge_counts(store)
    in_process = 1 + 1 + 2  # u <- name; d <- amount; id <- id, email <- email
    assert total == distinct == sample_edges + in_process
    assert b"test-token" not in store.read_bytes()
    with duckdb.connect(str(store), read_only=True) as con:
        expressions = dict(con.execute("SELECT r.app_name = 'sample_job', list(DISTINCT e.expression) FROM "
                                       "column_lineage e JOIN runs r USING (run_id) GROUP BY 1").fetchall())
    masked, full = " | ".join(filter(None, expressions[True])), " | ".join(filter(None, expressions[False]))
    assert "(status = ?) AND (amount > ?)" in masked and "sha2(CAST(email AS BINARY), ?)" in masked, masked
    assert not any(value in masked for value in ("paid", "USD", "0.9")), masked
    assert "amount * 2" in full  # the in-process job keeps SQL text in full (the default)


def test_remote_writer_spools_when_the_server_is_down(tmp_path):
    writer = RemoteWriter(f"http://127.0.0.1:{free_port()}", TOKEN, lock_timeout=1)
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.rows import row_of

    b = Batch()
    b.add(row_of("queries", ("q1", "r1", "save", "X", None, "succeeded", None, 1, "2026-01-01 00:00:00", "t")))
    assert writer.write(b) is False and len(writer.spooled()) == 1
    assert TOKEN not in writer.spooled()[0].read_text()
    for f in writer.spooled():
        f.unlink()




def test_run_end_after_disable_reaches_the_server_not_a_local_file(tmp_path):
    """``disable()`` while the application goes on marks the run ended through the same server,
    never in a DuckDB file named after the URL (``http:/127.0.0.1:PORT``) in the cwd."""
    store = tmp_path / "central.duckdb"
    srv = Server(store).start()
    script = tmp_path / "job.py"
    script.write_text(
        "from pyspark.sql import SparkSession\n"
        "import lineage_listener\n"
        "spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n"
        f"lineage_listener.enable(spark, url={srv.url!r}, token={TOKEN!r})\n"
        f"spark.range(3).selectExpr('id * 2 AS d').write.mode('overwrite').parquet({str(tmp_path / 'out')!r})\n"
        "lineage_listener.disable(spark)\n")
    try:
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    finally:
        srv.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("http")]
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs WHERE ended_at IS NOT NULL").fetchone() == (1,)
        assert con.execute("SELECT count(*) FROM column_lineage").fetchone() == (1,)
