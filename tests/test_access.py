"""Who may read the lineage (docs/security.md): a real ``serve --access`` over a small warehouse
(tests/access_pipeline.py) in which a marts reader may read the marts only.

The leak matrix: every GET route of the REST reference (docs/reference/rest.md) asked by three
identities (the marts reader, an admin, nobody); each answer's body is searched for the names, columns
and SQL literals of what that identity may not read. A route the matrix has no case for fails the test,
and so does a route of the server that the visibility rule does not declare.
"""
from __future__ import annotations

import json
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import duckdb
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("jwt")

from tests.access_pipeline import HIDDEN_COLUMNS, HIDDEN_LITERALS, READER, VISIBLE_LITERALS  # noqa: E402
from tests.server_helpers import ROOT, TOKEN, Server, free_port  # noqa: E402

SECRETS = {"LL_T_READER": "reader-secret-0123456789abcdef", "LL_T_ADMIN": "admin-secret-0123456789abcdef",
           "LL_T_CI": "writer-secret-0123456789abcdef"}
READER_TOKEN, ADMIN_TOKEN, CI_TOKEN = SECRETS.values()
#: The three identities of the matrix: a marts reader, an admin, nobody.
IDENTITIES = {"reader": READER_TOKEN, "admin": ADMIN_TOKEN, "nobody": None}
ACCESS = f"""
tokens:
  - {{name: ann, env: LL_T_READER, groups: [analysts]}}
  - {{name: pia, env: LL_T_ADMIN, groups: [privacy]}}
  - {{name: ci, env: LL_T_CI, groups: [writers]}}
proxy:
  trusted: [127.0.0.1/32]
cors:
  origins: [https://portal.example.com]
grants:
  - {{groups: [writers], write: true}}
  - {{groups: [analysts], read: {json.dumps(list(READER))}}}
  - {{groups: [privacy], read: ["**"], admin: true}}
"""
POLICY = """
rules:
  - {name: no-clear-email-in-marts, kind: forbid, label: pii.email, datasets: ["spark_catalog.acc_marts.*"]}
  - {name: no-clear-email-in-exports, kind: forbid, label: pii.email, datasets: ["file:/**/exports/**"]}
"""
CLASSIFICATIONS = """
classifications:
  - dataset: spark_catalog.acc_raw.customers
    columns: {email: [pii.email], ssn: [pii]}
"""
#: GET routes of the REST reference open to anyone: how to sign in.
PUBLIC = {"/auth/config"}
RAW, STAGING = "spark_catalog.acc_raw.customers", "spark_catalog.acc_staging.customers_clean"
SUMMARY, TOTALS = "spark_catalog.acc_marts.customer_summary", "spark_catalog.acc_marts.region_totals"


def request(url: str, token: str | None = None, method: str = "GET", body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    req = urllib.request.Request(url, data=body, method=method, headers={
        **({"Authorization": f"Bearer {token}"} if token else {}), **({"Content-Type": "application/json"} if body else {}),
        **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def get_routes() -> list[str]:
    """The GET routes of the REST reference, as its table writes them."""
    text = (ROOT / "docs" / "reference" / "rest.md").read_text()
    return re.findall(r"^\| `GET (/[^`]*)` \|", text, re.MULTILINE)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("access-files")
    (out / "access.yml").write_text(ACCESS)
    (out / "policy.yml").write_text(POLICY)
    (out / "classes.yml").write_text(CLASSIFICATIONS)
    return out


def _hidden_store(store: Path, out: Path) -> Path:
    """A copy of ``store`` in which the raw customers never existed (its edges and its own rows gone)."""
    copy = out / "without-raw.duckdb"
    shutil.copy(store, copy)
    with duckdb.connect(str(copy)) as con:
        names = [RAW] + [r[0] for r in con.execute("SELECT location FROM datasets WHERE dataset = ?", [RAW]).fetchall()]
        for sql in ("DELETE FROM datasets WHERE dataset IN (SELECT unnest($n))",
                    "DELETE FROM dataset_columns WHERE dataset IN (SELECT unnest($n))",
                    "DELETE FROM edges WHERE source_dataset IN (SELECT unnest($n)) OR target_dataset IN (SELECT unnest($n))",
                    "DELETE FROM queries WHERE target_dataset IN (SELECT unnest($n))"):
            con.execute(sql, {"n": names})
    return copy


@pytest.fixture(scope="module")
def served(access_store, files, tmp_path_factory):
    out = tmp_path_factory.mktemp("access-served")
    store = out / "lineage.duckdb"
    shutil.copy(access_store, store)
    without = _hidden_store(store, out)
    args = ["--access", str(files / "access.yml"), "--policy", str(files / "policy.yml"),
            "--classifications", str(files / "classes.yml")]
    srv = Server(store, extra_args=args, env=SECRETS, output=out / "serve.log").start()
    # the twin listens beyond loopback too: the proxy's headers, sent from another address, are ignored
    twin = Server(without, extra_args=["--access", str(files / "access.yml"), "--host", "0.0.0.0"], env=SECRETS).start()
    srv.twin, srv.out = twin, out
    _wait_for_violations(srv)
    yield srv
    twin.stop()
    srv.stop()


def _wait_for_violations(srv: Server, timeout: float = 120) -> None:
    """The policy watch has checked the store once (its violations are what the matrix reads)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body, _ = request(f"{srv.url}/api/violations", ADMIN_TOKEN)
        data = json.loads(body)
        if status == 200 and data["watch"] and data["watch"].get("checks", 0) >= 1 and data["violations"]:
            return
        time.sleep(0.2)
    raise AssertionError(f"the policy watch found nothing: {body}")


def hidden_datasets(store: Path) -> list[str]:
    """The datasets (their canonical names) the marts reader may not read."""
    from lineage_listener.govern.patterns import glob_matches

    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("SELECT dataset, location FROM datasets").fetchall()
    return sorted(d for d, loc in rows if not any(glob_matches(g, n) for g in READER for n in (d, loc) if n))


@pytest.fixture(scope="module")
def hidden(access_store) -> list[str]:
    """Every string that would tell the marts reader about what it may not read."""
    from lineage_listener.govern.patterns import glob_matches

    with duckdb.connect(str(access_store), read_only=True) as con:
        rows = con.execute("SELECT dataset, location FROM datasets").fetchall()
    found = set(HIDDEN_LITERALS) | set(f'"{c}"' for c in HIDDEN_COLUMNS)
    for name, location in rows:
        names = [n for n in (name, location) if n]
        if any(glob_matches(g, n) for g in READER for n in names):
            continue
        for n in names:
            found.add(n)
            if n.startswith("spark_catalog."):
                found.add(n.split(".", 1)[1])                          # acc_raw.customers, as SQL names it
            elif "/" in n:
                found.add("/".join(n.rstrip("/").split("/")[-2:]))     # exports/partner_feed
    return sorted(found)


@pytest.fixture(scope="module")
def cases(access_store) -> dict[str, list[dict[str, Any]]]:
    """For each GET route of the REST reference, the requests the matrix makes (about what the reader
    may read: answers whose graphs and lists pass through what it may not)."""
    with duckdb.connect(str(access_store), read_only=True) as con:
        run_id, app = con.execute("SELECT run_id, app_name FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        first, mid, last = con.execute(
            "SELECT min(captured_at), min(captured_at) FILTER (WHERE target_dataset = ?), max(captured_at) FROM queries",
            [SUMMARY]).fetchone()
    w = lambda a, b: f"{a.isoformat()}..{b.isoformat()}"  # noqa: E731
    return {
        "/api/datasets": [{}, {"q": "customers"}],
        "/api/datasets/{dataset}": [{"dataset": SUMMARY}],
        "/v3/namespaces/default/datasets/{dataset}/columns/{column}/lineage": [
            {"dataset": TOTALS, "column": "top_email", "direction": "both"},
            {"dataset": SUMMARY, "column": "region", "direction": "forward"}],
        "/api/impact": [{"dataset": SUMMARY, "column": "top_email"}],
        "/api/provenance": [{"dataset": TOTALS, "column": "top_email", "directOnly": "false"}],
        "/api/runs": [{}],
        "/api/streams": [{}],
        "/api/runs/{run_id}": [{"run_id": run_id}],
        "/api/search": [{"q": ""}, {"q": "cust"}, {"q": "ssn"}, {"q": "secret_score"}],
        "/api/schema": [{"dataset": SUMMARY}],
        "/api/browse/runs": [{}],
        "/api/overview": [{"dataset": SUMMARY}],
        "/api/impact.csv": [{"dataset": SUMMARY, "column": "top_email"}],
        "/api/health": [{}],
        "/api/labels": [{}, {"dataset": TOTALS}, {"datasets": [TOTALS, SUMMARY, RAW]}],
        "/api/labels/history": [{}],
        "/api/violations": [{"resolved": "true"}],
        "/api/diff": [{"windows": [w(first, mid), w(first, last)]}, {"app": app}],
        "/api/diff/history": [{"app": app}, {"dataset": TOTALS}],
        "/api/diff/apps": [{}],
        "/api/audit": [{}],
        "/auth/config": [{}],
        "/auth/me": [{}],
    }


def url_of(base: str, route: str, params: dict[str, Any]) -> str:
    params = dict(params)
    path = route
    for name in re.findall(r"{(\w+)}", route):
        path = path.replace("{" + name + "}", urllib.parse.quote(str(params.pop(name)), safe=""))
    return base + path + ("?" + urllib.parse.urlencode(params, doseq=True) if params else "")


def test_every_route_is_declared_and_in_the_matrix(cases):
    """A new route fails here until the visibility rule declares it and the matrix asks it."""
    from fastapi import FastAPI

    from lineage_listener.server.access.gate import declared
    from lineage_listener.server.app import ROUTERS

    assert set(get_routes()) == set(cases), "every GET route of docs/reference/rest.md needs a case here"
    extra = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    for router in ROUTERS:
        extra.include_router(router)

    @extra.get("/api/secret-new-route")
    def new_route() -> dict:
        return {}
    assert declared(extra.router.routes) == ["GET /api/secret-new-route"]


def test_leak_matrix(served, cases, hidden, access_store):
    """Every GET route x the three identities: the reader's answers name nothing it may not read, nobody
    reads anything, and the admin's answers hold what the reader's leave out (so the search can fail)."""
    asked = leaks = 0
    admin_text, reader_text = [], []
    for route, variants in cases.items():
        for params in variants:
            for who, token in IDENTITIES.items():
                status, body, headers = request(url_of(served.url, route, params), token)
                asked += 1
                assert status < 500, (route, who, status, body)
                if who == "nobody":
                    assert "acc_" not in body and "marts" not in body, (route, body)
                    if route not in PUBLIC:
                        assert status == 401 and headers.get("www-authenticate", "").startswith("Bearer"), (route, body)
                    continue
                if who == "admin":
                    assert status == 200, (route, params, body)
                    admin_text.append(body)
                    continue
                if route == "/api/audit":
                    assert status == 403, body
                    continue
                assert status == 200, (route, params, body)
                reader_text.append(body)
                for key, value in params.items():  # what the reader asked, echoed back, is no leak
                    body = body.replace(f'"{key}":{json.dumps(value, separators=(",", ":"))}', "")
                found = [h for h in hidden if h in body]
                leaks += bool(found)
                assert not found, f"{route} {params}: the reader's answer names {found}: {body[:2000]}"
    everything = "\n".join(admin_text)
    assert [d for d in hidden_datasets(access_store) if d not in everything] == [], \
        "the admin's answers hold every hidden dataset the reader's leave out"
    for literal in HIDDEN_LITERALS:
        assert literal in everything
    seen = "\n".join(reader_text)
    assert all(v in seen for v in VISIBLE_LITERALS), "SQL of queries over readable datasets only is shown"
    assert '"withheld":true' in seen and '"placeholder":"w1"' in seen
    routes = len(get_routes())
    assert asked >= routes * len(IDENTITIES) and leaks == 0
    security = (ROOT / "docs" / "security.md").read_text()
    assert f"{routes} GET routes" in security and f"{asked} requests" in security, \
        f"docs/security.md gives the matrix's counts: {routes} GET routes, {asked} requests"


def test_placeholders_keep_the_graph_shape(served):
    """A path through hidden datasets keeps its length: one placeholder per hidden dataset, counted."""
    status, body, _ = request(url_of(served.url, "/v3/namespaces/default/datasets/{dataset}/columns/{column}/lineage",
                                     {"dataset": TOTALS, "column": "top_email"}), READER_TOKEN)
    assert status == 200
    data = json.loads(body)
    held = [n for n in data["nodes"] if n.get("withheld")]
    # staging, raw, and the rows raw was made of: three hidden datasets, one placeholder each, in their place
    assert [(n["placeholder"], n["depth"]) for n in held] == [("w1", 2), ("w2", 3), ("w3", 4)]
    assert all(n["dataset"] is None and n["column"] is None for n in held) and data["withheld"] == 3
    assert {n["dataset"]: n["depth"] for n in data["nodes"] if not n.get("withheld")} == {TOTALS: 0, SUMMARY: 1}
    ends = {(e.get("source_placeholder") or e["source"]["dataset"], e.get("target_placeholder") or e["target"]["dataset"])
            for e in data["edges"]}
    assert {("w3", "w2"), ("w2", "w1"), ("w1", SUMMARY), (SUMMARY, TOTALS)} <= ends
    assert all(e.get("expression") is None for e in data["edges"] if e.get("withheld"))
    admin = json.loads(request(url_of(served.url, "/v3/namespaces/default/datasets/{dataset}/columns/{column}/lineage",
                                      {"dataset": TOTALS, "column": "top_email"}), ADMIN_TOKEN)[1])
    assert {n["dataset"] for n in admin["nodes"]} >= {RAW, STAGING} and "withheld" not in admin


def test_sql_is_shown_only_when_every_dataset_of_the_query_is_readable(served, access_store):
    with duckdb.connect(str(access_store), read_only=True) as con:
        run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
    _, body, _ = request(url_of(served.url, "/api/runs/{run_id}", {"run_id": run_id}), READER_TOKEN)
    queries = {q["target_dataset"]: q for q in json.loads(body)["queries"] if q["target_dataset"]}
    assert "VISIBLELITERAL" in queries[TOTALS]["sql_text"] and "withheld" not in queries[TOTALS]
    assert queries[SUMMARY]["sql_text"] is None and queries[SUMMARY]["withheld"] is True  # it read staging
    assert RAW not in queries and STAGING not in queries
    # what a write produced and what it read: counts of readable datasets only
    assert queries[TOTALS]["rows"] > 0 and queries[SUMMARY]["rows"] > 0
    assert {r["dataset"] for q in queries.values() for r in q["reads"]} <= {SUMMARY, TOTALS}
    assert json.loads(body)["children"] == []


def test_hidden_is_answered_as_never_existing(served):
    """A dataset the reader may not read: 404 with the very body of a server where it never existed."""
    asks = [("/api/datasets/{dataset}", {"dataset": RAW}), ("/api/schema", {"dataset": RAW}),
            ("/api/overview", {"dataset": RAW}), ("/api/impact", {"dataset": RAW, "column": "ssn"}),
            ("/api/impact.csv", {"dataset": RAW, "column": "email"}), ("/api/provenance", {"dataset": RAW, "column": "email"}),
            ("/v3/namespaces/default/datasets/{dataset}/columns/{column}/lineage", {"dataset": RAW, "column": "email"}),
            ("/api/labels", {"dataset": RAW}), ("/api/diff/history", {"dataset": RAW})]
    for route, params in asks:
        here = request(url_of(served.url, route, params), READER_TOKEN)
        there = request(url_of(served.twin.url, route, params), READER_TOKEN)
        assert here[0] == there[0] == 404, (route, here, there)
        assert here[1] == there[1], (route, here[1], there[1])
        assert request(url_of(served.url, route, params), ADMIN_TOKEN)[0] == 200, route
    # a list naming it leaves it out, as it would a name it never heard of
    _, body, _ = request(url_of(served.url, "/api/labels", {"datasets": [RAW, TOTALS]}), READER_TOKEN)
    assert RAW not in body and TOTALS in body


def test_grants(served):
    """A writer-only token reads nothing; writes need a write grant; the old writer token still writes."""
    batch = json.dumps({"rows": {}}).encode()
    assert request(f"{served.url}/api/datasets", CI_TOKEN)[0] == 403
    assert request(f"{served.url}/api/batches", CI_TOKEN, "POST", batch)[0] == 200
    assert request(f"{served.url}/api/batches", READER_TOKEN, "POST", batch)[0] == 403
    assert request(f"{served.url}/api/batches", TOKEN, "POST", batch)[0] == 200  # --token-env's
    assert request(f"{served.url}/api/datasets", TOKEN)[0] == 403
    label = json.dumps({"dataset": TOTALS, "column": "doubled", "label": "reviewed"}).encode()
    assert request(f"{served.url}/api/labels", READER_TOKEN, "POST", label)[0] == 403
    assert request(f"{served.url}/api/labels", ADMIN_TOKEN, "POST", label)[0] == 200
    assert request(f"{served.url}/healthz")[0] == 200
    assert request(f"{served.url}/")[0] == 200  # the UI's shell: it asks for a login itself
    status, body, headers = request(f"{served.url}/api/datasets", "not-a-known-token-at-all")
    assert status == 401 and "not-a-known" not in body


def test_proxy_headers_are_believed_from_trusted_peers_only(served):
    headers = {"X-Forwarded-User": "ann", "X-Forwarded-Groups": "analysts"}
    status, body, _ = request(f"{served.url}/auth/me", headers=headers)
    assert status == 200 and json.loads(body)["name"] == "ann" and json.loads(body)["via"] == "proxy"
    assert request(f"{served.url}/api/datasets/{urllib.parse.quote(RAW)}", headers=headers)[0] == 404
    address = _outside_address()
    if address is None:
        pytest.skip("no address other than loopback to reach the server from")
    outside = f"http://{address}:{served.twin.port}"
    assert request(f"{outside}/auth/me", headers=headers)[0] == 401  # the same headers, from elsewhere
    assert request(f"{outside}/auth/me", READER_TOKEN)[0] == 200


def _outside_address() -> str | None:
    """An address of this machine other than loopback (the one it would reach the world from)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: only the route is chosen
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_no_credentials_in_query_strings(served):
    for query in (f"access_token={READER_TOKEN}", f"q={READER_TOKEN}", "token=x",
                  "q=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln"):
        status, body, _ = request(f"{served.url}/api/datasets?{query}", READER_TOKEN)
        assert status == 400 and READER_TOKEN not in body and "eyJ" not in body, (query, body)


def test_failed_logins_are_slowed(served):
    """After 20 failures a minute one client waits (429, Retry-After), even with a good token; others do not."""
    client = {"X-Forwarded-For": "198.51.100.23"}  # the trusted proxy (loopback) names the client
    for _ in range(20):
        assert request(f"{served.url}/api/datasets", "wrong-token-guess-0000", headers=client)[0] == 401
    status, body, headers = request(f"{served.url}/api/datasets", READER_TOKEN, headers=client)
    assert status == 429 and 1 <= int(headers["retry-after"]) <= 60, (status, body)
    assert request(f"{served.url}/api/datasets", READER_TOKEN, headers={"X-Forwarded-For": "198.51.100.24"})[0] == 200


def test_security_headers(served):
    for path in ("/", "/docs", "/api/datasets"):
        status, _, headers = request(served.url + path, READER_TOKEN)
        assert status == 200
        csp = headers["content-security-policy"]
        assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
        assert headers["x-content-type-options"] == "nosniff"
        assert "access-control-allow-origin" not in {k.lower() for k in headers}
    assert request(f"{served.url}/api/datasets", READER_TOKEN)[2]["cache-control"] == "no-store"
    # CORS only for the origins the access file names
    for origin, allowed in (("https://portal.example.com", True), ("https://evil.example", False)):
        headers = request(f"{served.url}/api/datasets", READER_TOKEN, headers={"Origin": origin})[2]
        assert (headers.get("access-control-allow-origin") == origin) is allowed, origin


def test_access_file_is_checked_at_start(tmp_path, monkeypatch, capsys):
    """A file that cannot be used stops the server before it starts: exit 2, one line naming the problem."""
    bad = {
        "unknown key": ("tokens: []\ngrants: [{groups: [a], read: ['**']}]\nusers: []\n", "unknown key 'users'"),
        "group no grant names": ("tokens: [{name: t, env: LL_T_READER, groups: [anlysts]}]\n"
                                 "grants: [{groups: [analysts], read: ['**']}]\n", "group 'anlysts' is named by no grant"),
        "missing secret": ("tokens: [{name: t, env: LL_T_NOT_SET, groups: [a]}]\ngrants: [{groups: [a], read: ['**']}]\n",
                           "LL_T_NOT_SET is not set"),
        "plain http issuer": ("oidc: {issuer: 'http://idp.example.com', audience: x}\n"
                              "grants: [{groups: [a], read: ['**']}]\n", "plain HTTP"),
        "a grant of nothing": ("tokens: [{name: t, env: LL_T_READER, groups: [a]}]\ngrants: [{groups: [a]}]\n",
                               "grants nothing"),
        "a short secret": ("tokens: [{name: t, env: LL_T_SHORT, groups: [a]}]\ngrants: [{groups: [a], read: ['**']}]\n",
                           "shorter than 16 characters"),
    }
    from lineage_listener.cli import main

    for key, value in {**SECRETS, "LL_T_SHORT": "short"}.items():
        monkeypatch.setenv(key, value)
    for what, (text, says) in bad.items():
        (tmp_path / "a.yml").write_text(text)
        code = main(["serve", "--store", str(tmp_path / "s.duckdb"), "--port", str(free_port()),
                     "--access", str(tmp_path / "a.yml")])
        err = capsys.readouterr().err
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, (what, err)
    (tmp_path / "a.yml").write_text(ACCESS)
    for args, says in ((["--access", str(tmp_path / "a.yml"), "--public-read"], "contradict"),
                       (["--keep-audit", "30d"], "--keep-audit needs --access"),
                       (["--access", str(tmp_path / "a.yml"), "--keep-audit", "soon"], "cannot read retention")):
        code = main(["serve", "--store", str(tmp_path / "s.duckdb"), "--port", str(free_port()), *args])
        err = capsys.readouterr().err
        assert code == 2 and says in err, (args, err)


def test_audit(served, capsys):
    """Requests with an identity and refusals are in the audit, with the datasets they named and what was
    withheld; label changes are in the same answer; only admins read it, over REST and the command line."""
    from tests.test_docs_commands import the_security_pages_audit, the_security_pages_lineage_request

    page = the_security_pages_lineage_request(served, READER_TOKEN, served.out)  # the page's request, as ann
    assert not page, "\n".join(page)
    request(url_of(served.url, "/api/impact", {"dataset": SUMMARY, "column": "top_email"}), READER_TOKEN)
    request(url_of(served.url, "/api/datasets/{dataset}", {"dataset": RAW}), READER_TOKEN)
    request(f"{served.url}/api/datasets", "an-unknown-token-for-the-audit")
    deadline = time.monotonic() + 60
    while True:
        status, body, _ = request(f"{served.url}/api/audit?user=ann", ADMIN_TOKEN)
        records = json.loads(body)["records"]
        everyone = json.loads(request(f"{served.url}/api/audit?limit=100000", ADMIN_TOKEN)[1])["records"]
        # both requests' rows written (the writer takes a batch a second: they may fall in two)
        if any(r["route"] == "/api/datasets/{dataset:path}" and r["status"] == 404 for r in records) and any(
                r["identity"] is None and r["status"] == 401 for r in everyone) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 200 and all(r["identity"] == "ann" for r in records)
    impact = next(r for r in records if r["route"] == "/api/impact" and r["datasets"] == [SUMMARY])
    assert impact["status"] == 200 and impact["withheld"] >= 1 and impact["path"] == "/api/impact"
    assert impact["groups"] == ["analysts"] and impact["via"] == "token"
    assert any(r["route"] == "/api/datasets/{dataset:path}" and r["datasets"] == [RAW] and r["status"] == 404
               for r in records)
    refused = [r for r in everyone if r["kind"] == "request" and r["identity"] is None and r["status"] == 401]
    assert refused and all("unknown-token" not in json.dumps(r) for r in refused)
    labels = [r for r in everyone if r["kind"] == "label"]
    assert {(r["dataset"], r["label"]) for r in labels} >= {(RAW, "pii.email")}
    assert request(f"{served.url}/api/audit", READER_TOKEN)[0] == 403
    served.stop()  # the server's audit rows are in the store once it stops; the command line reads them
    from lineage_listener.cli import main

    capsys.readouterr()
    assert main(["audit", "--store", str(served.store), "--user", "ann", "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert any(r["route"] == "/api/impact" and r["datasets"] == [SUMMARY] for r in cli)
    assert main(["audit", "--store", str(served.store), "--since", "1d"]) == 0
    table = capsys.readouterr().out
    assert "GET /api/impact" in table and "label set pii.email" in table
    page = the_security_pages_audit(served.store)  # the page's command on this store: ann's records
    assert not page, "\n".join(page)
