"""Classifications and policies on a real PII pipeline (tests/retail.py: four real applications).

Labels travel along copies and stop at masking; a review (``!pii``) wins over propagation; a
policy check fails the build (CLI exit 1, JSON, JUnit); bad files are one line and exit 2 with
nothing written; a user's own masking UDF counts; previewed edges are checked like captured ones.
The pipeline runs once per session (conftest's ``retail``); each test works on a copy of its store.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import duckdb
import pytest

from tests.server_helpers import ROOT
from tests.test_openlineage import registry, validate  # noqa: F401 - registry: the spec's schemas, offline

ENV = {k: v for k, v in {**os.environ, "PYTHONPATH": str(ROOT)}.items() if k != "LINEAGE_SERVER_TOKEN"}


@pytest.fixture
def store(retail, tmp_path) -> Path:
    """A copy of the session's retail store (conftest ``retail``): each test writes its own."""
    copy = tmp_path / "lineage.duckdb"
    shutil.copy(retail.store, copy)
    return copy


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lineage_listener", *args], capture_output=True, text=True,
                          env=ENV, timeout=300)


def ok(*args: str) -> str:
    proc = cli(*args)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return proc.stdout


def one_line(proc: subprocess.CompletedProcess, *expected: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def names(root: Path) -> dict[str, str]:
    return {"raw": f"file:{root}/raw/customers.csv", "clean": "spark_catalog.warehouse.customers_clean",
            "fact": "spark_catalog.warehouse.fact_order_lines", "ltv": "spark_catalog.warehouse.customer_ltv",
            "masked": "spark_catalog.warehouse.customers_masked",
            "hashed": f"file:{root}/exports/customer_emails_hashed",
            "partner": f"file:{root}/exports/partner_top_customers.csv"}


def label_rows(store: Path) -> tuple[int, int]:
    with duckdb.connect(str(store), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if "column_labels" not in tables:
            return 0, 0
        return (con.execute("SELECT count(*) FROM column_labels").fetchone()[0],
                con.execute("SELECT count(*) FROM label_changes").fetchone()[0])


def by_column(answer: dict) -> dict[tuple[str, str], dict]:
    return {(c["dataset"], c["column"]): c for c in answer["columns"]}


def carried(answer: dict, label: str) -> set[tuple[str, str]]:
    return {k for k, c in by_column(answer).items() if any(x["label"] == label and x["value"] for x in c["labels"])}


def test_email_label_travels_along_copies_and_stops_at_masking(retail, store):
    root = retail.root
    n = names(root)
    ok("classify", "set", "--store", str(store), n["raw"], "email", "pii.email", "--by", "ann")
    answer = json.loads(ok("classify", "list", "--store", str(store), "--propagated", "--format", "json"))
    cols = by_column(answer)
    # the clear copies of the docstring, and the declared column itself
    assert carried(answer, "pii.email") == {(n["raw"], "email"), (n["clean"], "email"), (n["fact"], "email"),
                                            (n["partner"], "email")}
    assert [x["source"] for x in cols[(n["raw"], "email")]["labels"]] == ["set"]
    assert cols[(n["raw"], "email")]["labels"][0]["set_by"] == "ann"
    # the hashed export is a masked copy, never a carrier
    hashed = cols[(n["hashed"], "email_sha256")]
    assert hashed["labels"] == [] and [m["label"] for m in hashed["masked"]] == ["pii.email"]
    assert hashed["masked"][0]["hops"][-1]["masking"] is True
    # join and group-by keys only influence
    for node in [(n["masked"], "ssn_sha256"), (n["masked"], "newsletter"), (n["ltv"], "age"), (n["ltv"], "ltv_eur")]:
        assert cols[node]["labels"] == [], node
        assert cols[node]["influenced_by"][0]["via"], node
    assert set(cols[(n["ltv"], "ltv_eur")]["influenced_by"][0]["via"]) == {"group_by"}
    # why: the path back to the labelled column, each hop with its application and capture time
    partner = next(x for x in cols[(n["partner"], "email")]["labels"] if x["label"] == "pii.email")
    assert partner["source"] == "propagated" and partner["from"] == [n["raw"], "email"]
    assert partner["path"] == [[n["raw"], "email", None], [n["clean"], "email", "derived"],
                               [n["partner"], "email", "identity"]]
    assert [h["application"] for h in partner["hops"]] == ["retail_ingest", "retail_exports"]
    assert partner["hops"][0]["captured_at"] <= partner["hops"][1]["captured_at"]
    assert all(h["query_id"] for h in partner["hops"])
    # the same answer from the Python API, and the text form says what a copy is
    from lineage_listener.govern.answers import column_labels
    from lineage_listener.query import open_store

    api = json.loads(json.dumps(column_labels(open_store(store)), default=lambda v: v.isoformat()))
    assert api == answer
    text = ok("classify", "why", "--store", str(store), n["partner"], "email")
    assert "carries pii.email from" in text and "retail_exports" in text and "retail_ingest" in text


def test_a_review_wins_over_propagation_and_is_recorded(retail, store):
    root = retail.root
    n = names(root)
    ok("classify", "set", "--store", str(store), n["raw"], "email", "pii.email")
    ok("classify", "set", "--store", str(store), n["clean"], "email", "!pii", "--by", "dpo")
    answer = json.loads(ok("classify", "list", "--store", str(store), "--propagated", "--format", "json"))
    # the review stops pii (and its kind pii.email) at the clean table: nothing downstream of it carries it
    assert carried(answer, "pii.email") == {(n["raw"], "email")}
    review = by_column(answer)[(n["clean"], "email")]["labels"]
    assert [(x["label"], x["value"], x["source"], x["set_by"]) for x in review] == [("pii", False, "set", "dpo")]
    with duckdb.connect(str(store), read_only=True) as con:
        changes = con.execute("SELECT action, column_name, label, value, changed_by FROM label_changes "
                              "ORDER BY changed_at").fetchall()
    assert changes[-1] == ("set", "email", "pii", False, "dpo")
    ok("classify", "unset", "--store", str(store), n["clean"], "email", "pii", "--by", "dpo")
    answer = json.loads(ok("classify", "list", "--store", str(store), "--propagated", "--format", "json"))
    assert (n["partner"], "email") in carried(answer, "pii.email")
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT action, changed_by FROM label_changes ORDER BY changed_at DESC LIMIT 1"
                           ).fetchone() == ("unset", "dpo")


POLICY = """
rules:
  - name: no-clear-pii-in-exports
    kind: forbid
    label: pii
    datasets: ["file:/**/exports/**"]
  - name: partner-emails-masked
    kind: require_masking
    label: pii.email
    datasets: ["file:/**/partner_*.csv"]
  - name: pii-only-for-ingest
    kind: readers
    label: pii
    applications: [retail_ingest, retail_fact]
"""


def test_check_fails_the_build_and_passes_after_review(retail, store, tmp_path):
    root = retail.root
    n = names(root)
    policy = tmp_path / "policy.yml"
    policy.write_text(POLICY)
    ok("classify", "set", "--store", str(store), n["raw"], "email", "pii.email")
    proc = cli("check", "--store", str(store), "--policy", str(policy), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["checked"]["rules"] == 3 and report["checked"]["columns"] >= 4
    found = {(v["rule"], v["dataset"], v["column"]) for v in report["violations"]}
    assert found == {("no-clear-pii-in-exports", n["partner"], "email"),
                     ("partner-emails-masked", n["partner"], "email"),
                     ("pii-only-for-ingest", n["clean"], "email"),
                     ("pii-only-for-ingest", n["fact"], "email")}
    for v in report["violations"]:
        assert set(v) >= {"rule", "kind", "label", "dataset", "column", "path", "applications", "last_seen"}
    forbid = next(v for v in report["violations"] if v["kind"] == "forbid")
    assert forbid["label"] == "pii.email" and forbid["applications"] == ["retail_ingest", "retail_exports"]
    assert forbid["path"][0] == [n["raw"], "email", None] and forbid["path"][-1] == [n["partner"], "email", "identity"]
    readers = {v["dataset"]: v["applications"] for v in report["violations"] if v["kind"] == "readers"}
    assert readers == {n["clean"]: ["retail_exports", "retail_marts"], n["fact"]: ["retail_marts"]}
    # JUnit: one testcase per rule, one failure per violation
    proc = cli("check", "--store", str(store), "--policy", str(policy), "--format", "junit")
    assert proc.returncode == 1
    suite = ET.fromstring(proc.stdout)
    cases = {c.get("name"): len(c.findall("failure")) for c in suite.iter("testcase")}
    assert cases == {"no-clear-pii-in-exports": 1, "partner-emails-masked": 1, "pii-only-for-ingest": 2}
    # text names the rule, the column and the path
    text = cli("check", "--store", str(store), "--policy", str(policy)).stdout
    assert "FAIL no-clear-pii-in-exports" in text and "partner_top_customers.csv [email]" in text
    # a review of the partner column (pii: false) clears forbid and require_masking
    policy.write_text(POLICY.split("  - name: pii-only")[0])
    ok("classify", "set", "--store", str(store), n["partner"], "email", "pii", "--value", "false", "--by", "dpo")
    proc = cli("check", "--store", str(store), "--policy", str(policy), "--format", "json")
    assert proc.returncode == 0, proc.stdout
    assert json.loads(proc.stdout)["violations"] == []


def test_check_since_keeps_paths_whose_last_hop_is_in_the_window(retail, store, tmp_path):
    root, times = retail.root, retail.times
    n = names(root)
    policy = tmp_path / "policy.yml"
    policy.write_text(POLICY)
    ok("classify", "set", "--store", str(store), n["raw"], "email", "pii.email")
    between = times["retail_exports"].started.isoformat()  # after ingest, fact and marts; before the exports
    report = json.loads(cli("check", "--store", str(store), "--policy", str(policy), "--since", between,
                            "--format", "json").stdout)
    found = {(v["rule"], v["dataset"], v["column"]) for v in report["violations"]}
    # the export copied email (written before the window) inside it; the marts' reads lie before it
    assert found == {("no-clear-pii-in-exports", n["partner"], "email"),
                     ("partner-emails-masked", n["partner"], "email"),
                     ("pii-only-for-ingest", n["clean"], "email")}
    after = times["retail_exports"].ended.isoformat()
    proc = cli("check", "--store", str(store), "--policy", str(policy), "--since", after, "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["violations"] == []


@pytest.mark.parametrize("text, expected", [
    ("rules: [{name: a, kind: forbid, label: pii, datasets: [x]", ["not valid YAML", "line"]),
    ("rules: [{name: a, kind: allow, label: pii}]", ["rule 'a'", "unknown kind 'allow'"]),
    ("rules: [{name: a, kind: forbid, label: pii}]", ["rule 'a'", "needs datasets"]),
    ("rules: [{name: a, kind: forbid, label: 'p ii', datasets: [x]}]", ["rule 'a'", "not a dotted name"]),
    ("rules: [{name: a, kind: protect, datasets: ['spark_catalog.*.*'], days: 0}]", ["rule 'a'", "days"]),
])
def test_a_bad_policy_is_one_line_and_exit_2(store, tmp_path, text, expected):
    policy = tmp_path / "policy.yml"
    policy.write_text(text)
    one_line(cli("check", "--store", str(store), "--policy", str(policy)), *expected)


def test_a_pattern_that_matches_nothing_is_a_warning_unless_strict(store, tmp_path):
    """A rule pattern naming data the store does not hold yet warns, and the rule's other pattern is
    checked; ``--strict`` makes it one line and exit 2."""
    policy = tmp_path / "policy.yml"
    policy.write_text("rules: [{name: a, kind: forbid, label: pii, datasets: ['file:/**/nowhere/**', 'file:/**/exports/**']}]")
    proc = cli("check", "--store", str(store), "--policy", str(policy))
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"lineage-listener: warning: {policy}: rule 'a': dataset pattern 'file:/**/nowhere/**' matches no dataset "
        "of the store", f"lineage-listener: warning: {policy}: rule 'a': label 'pii' is declared on no column"]
    assert "1 rules over" in proc.stdout
    one_line(cli("check", "--store", str(store), "--policy", str(policy), "--strict"), "rule 'a'",
             "'file:/**/nowhere/**' matches no dataset")


@pytest.mark.parametrize("text, expected, strict", [
    ("classifications: [{dataset: x, columns: {a: [pii]}", ["not valid YAML"], False),
    ("classifications: [{dataset: 'file:/**/raw/nothing.csv', columns: {email: [pii]}}]",
     ["entry 1", "matches no dataset"], True),
    ("classifications: [{dataset: 'file:/**/raw/customers.csv', columns: {emial: [pii]}}]",
     ["entry 1", "no dataset matching", "'emial'", "closest: email"], True),
    ("classifications: [{dataset: 'file:/**/raw/customers.csv', columns: {email: ['pii email']}}]",
     ["entry 1", "'email'", "not a dotted name"], False),
    ("classification: []", ["unknown key 'classification'"], False),
])
def test_a_bad_classifications_file_is_one_line_and_writes_nothing(store, tmp_path, text, expected, strict):
    """A malformed file is an error; an entry or column that matches nothing is one with ``--strict``."""
    path = tmp_path / "labels.yml"
    path.write_text(text)
    before = label_rows(store)
    one_line(cli("classify", "load", "--store", str(store), str(path), *(["--strict"] if strict else [])), *expected)
    assert label_rows(store) == before


def test_a_classifications_entry_that_matches_nothing_is_a_warning(retail, store, tmp_path):
    """Without ``--strict`` the entry that matches nothing is a warning line and the rest is loaded."""
    path = tmp_path / "labels.yml"
    path.write_text("classifications: [{dataset: 'file:/**/raw/nothing.csv', columns: {email: [pii]}},\n"
                    "                  {dataset: 'file:/**/raw/customers.csv', columns: {email: [pii.email]}}]")
    proc = cli("classify", "load", "--store", str(store), str(path))
    assert proc.returncode == 0, proc.stderr
    (warning,) = proc.stderr.strip().splitlines()
    assert warning.startswith("lineage-listener: warning: ") and "entry 1" in warning and "matches no dataset" in warning
    assert proc.stdout.startswith("loaded 1 label on 1 column")


def test_labels_on_unknown_names_are_one_line(retail, store):
    root = retail.root
    n = names(root)
    one_line(cli("classify", "set", "--store", str(store), n["raw"], "emial", "pii"), "has no column 'emial'",
             "email")
    one_line(cli("classify", "set", "--store", str(store), "spark_catalog.warehouse.customer_clean", "email", "pii"),
             "unknown dataset", "customers_clean")
    one_line(cli("classify", "set", "--store", str(store), n["raw"], "email", "pii..x"), "not a dotted name")
    assert label_rows(store) == (0, 0)


def test_a_classifications_file_is_the_whole_truth_about_what_it_declares(retail, store, tmp_path):
    root = retail.root
    n = names(root)
    path = tmp_path / "labels.yml"
    path.write_text("classifications:\n"
                    "  - dataset: 'file:/**/raw/customers.csv'\n"
                    "    columns: {email: [pii.email], ssn: [pii], phone: [pii.phone]}\n"
                    "  - dataset: 'spark_catalog.*.customers_clean'\n"
                    "    columns: {country: ['!pii']}\n")
    out = ok("classify", "load", "--store", str(store), str(path), "--by", "ci")
    assert "loaded 4 labels on 4 columns" in out
    answer = json.loads(ok("classify", "list", "--store", str(store), "--format", "json"))
    declared = {(c["dataset"], c["column"], x["label"], x["value"], x["source"], x["set_by"])
                for c in answer["columns"] for x in c["labels"]}
    assert declared == {(n["raw"], "email", "pii.email", True, "file", "ci"), (n["raw"], "ssn", "pii", True, "file", "ci"),
                        (n["raw"], "phone", "pii.phone", True, "file", "ci"),
                        (n["clean"], "country", "pii", False, "file", "ci")}
    assert {x["origin"] for c in answer["columns"] for x in c["labels"]} == {str(path)}
    # loaded again without phone: its label goes, the others are unchanged (no new history rows)
    path.write_text(path.read_text().replace(", phone: [pii.phone]", ""))
    ok("classify", "load", "--store", str(store), str(path), "--by", "ci")
    answer = json.loads(ok("classify", "list", "--store", str(store), "--format", "json"))
    assert {(c["column"]) for c in answer["columns"]} == {"email", "ssn", "country"}
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT action, column_name FROM label_changes WHERE action = 'unset'").fetchall() == [
            ("unset", "phone")]
        assert con.execute("SELECT count(*) FROM label_changes WHERE action = 'set'").fetchone()[0] == 4
    # a person's declaration outranks the file's on the same column
    ok("classify", "set", "--store", str(store), n["clean"], "country", "pii")
    answer = json.loads(ok("classify", "list", "--store", str(store), "--dataset", n["clean"], "--column", "country",
                           "--format", "json"))
    assert [(x["label"], x["value"], x["source"]) for x in answer["columns"][0]["labels"]] == [("pii", True, "set")]


def test_a_declared_masking_udf_breaks_the_label(lineage, tmp_path):
    """A user's own hashing UDF (a Python UDF) is masking once declared: the token column is a masked
    copy, the clear column a copy."""
    from pyspark.sql import functions as F

    src = tmp_path / "customers"
    lineage.spark.createDataFrame([(1, "a@x"), (2, "b@y")], "id INT, email STRING").write.parquet(str(src))
    tokenize = F.udf(lambda s: str(hash(s)), "string").asNondeterministic()
    lineage.spark.udf.register("tokenize", tokenize)
    out = tmp_path / "shared"
    lineage.run(lambda: lineage.spark.read.parquet(str(src))
                .select("id", F.expr("tokenize(email)").alias("email_token"), F.col("email").alias("email_clear"))
                .write.parquet(str(out)))
    store = lineage.store
    policy = tmp_path / "policy.yml"
    policy.write_text(f"rules: [{{name: no-clear, kind: require_masking, label: pii, datasets: ['file:{out}']}}]\n")
    files = tmp_path / "labels.yml"
    files.write_text(f"classifications: [{{dataset: 'file:{src}', columns: {{email: [pii]}}}}]\n")
    ok("classify", "load", "--store", str(store), str(files))
    answer = json.loads(ok("classify", "list", "--store", str(store), "--propagated", "--format", "json"))
    assert (f"file:{out}", "email_token") in carried(answer, "pii")  # not declared masking yet
    files.write_text(files.read_text() + "masking_functions: [tokenize]\n")
    assert "loaded 1 label on 1 column and 1 masking function from" in ok("classify", "load", "--store", str(store),
                                                                          str(files))
    answer = json.loads(ok("classify", "list", "--store", str(store), "--propagated", "--format", "json"))
    assert carried(answer, "pii") == {(f"file:{src}", "email"), (f"file:{out}", "email_clear")}
    token = by_column(answer)[(f"file:{out}", "email_token")]
    assert [m["label"] for m in token["masked"]] == ["pii"] and "tokenize" in token["masked"][0]["hops"][0]["expression"]
    report = json.loads(cli("check", "--store", str(store), "--policy", str(policy), "--format", "json").stdout)
    assert [(v["column"]) for v in report["violations"]] == ["email_clear"]


def test_previewed_edges_are_checked_as_if_captured(retail, store):
    """A policy over edges not captured yet (``lineage-listener preview --policy``): clear and hashed copies."""
    from lineage_listener.govern.checks import check_edges
    from lineage_listener.govern.declare import set_labels
    from lineage_listener.govern.policy import parse
    from lineage_listener.query import open_store

    root = retail.root
    n = names(root)
    set_labels(store, [(n["raw"], "email", "pii.email", None)])
    policy = parse({"rules": [{"name": "no-pii-out", "kind": "forbid", "label": "pii", "datasets": ["file:/**/exports/**"]},
                              {"name": "fact-keeps", "kind": "protect", "datasets": [n["fact"]]}]}, "p.yml")
    new_export = f"file:{root}/exports/newsletter.csv"
    edges = [{"target_dataset": new_export, "target_column": "email", "source_dataset": n["fact"],
              "source_column": "email", "transform": "identity", "kind": "direct", "expression": "email",
              "masking": False},
             {"target_dataset": new_export, "target_column": "email_hash", "source_dataset": n["fact"],
              "source_column": "email", "transform": "derived", "kind": "direct",
              "expression": "sha2(email, 256)", "masking": True}]
    report = check_edges(open_store(store), policy, edges)
    assert [(v["rule"], v["dataset"], v["column"]) for v in report["violations"]] == [
        ("no-pii-out", new_export, "email")]
    assert report["violations"][0]["path"][-2:] == [[n["fact"], "email", "identity"], [new_export, "email", "identity"]]
    # a previewed rewrite of the fact table that drops email is a protect violation
    fact_edges = [{"target_dataset": n["fact"], "target_column": "order_id", "source_dataset": "spark_catalog.warehouse.orders_clean",
                   "source_column": "order_id", "transform": "identity", "kind": "direct", "expression": "order_id",
                   "masking": False}]
    report = check_edges(open_store(store), policy, fact_edges)
    gone = {(v["column"], v["path"][0][0], v["path"][0][1]) for v in report["violations"] if v["rule"] == "fact-keeps"}
    assert ("email", n["clean"], "email") in gone and ("order_id", "spark_catalog.warehouse.orders_clean",
                                                       "order_id") not in gone


# ---------------------------------------------------------------------------------------------------------------
# The lineage server: labels over REST, the policy checked on every batch, a webhook told of each new violation.

import threading  # noqa: E402
import urllib.error  # noqa: E402
import urllib.parse  # noqa: E402
import urllib.request  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402

from tests.server_helpers import TOKEN, Server, free_port  # noqa: E402

SERVER_POLICY = POLICY.split("  - name: partner")[0]  # forbid only


class Receiver:
    """A webhook receiver on 127.0.0.1: records each POST (headers and JSON body), answers ``status``."""

    def __init__(self, port: int | None = None, status: int = 200) -> None:
        self.port, self.status, self.posts = port or free_port(), status, []
        self.got = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with receiver.got:
                    receiver.posts.append((dict(self.headers), body))
                    receiver.got.notify_all()
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass
        self.http = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}/hook"

    def wait(self, count: int, timeout: float = 120) -> list:
        with self.got:
            assert self.got.wait_for(lambda: len(self.posts) >= count, timeout), self.posts
            return list(self.posts)

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def rest(srv: Server, method: str, path: str, body: dict | None = None, token: str | None = TOKEN) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(srv.url + path, method=method, headers=headers,
                                 data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def settled(srv: Server, predicate=lambda v: True, timeout: float = 120) -> dict:
    """``/api/violations`` once the watch has checked everything written and ``predicate`` holds."""
    from conftest import wait_for

    seen = {}

    def check() -> bool:
        seen["v"] = rest(srv, "GET", "/api/violations")[1]
        return not seen["v"]["watch"]["waiting"] and predicate(seen["v"])
    assert wait_for(check, timeout), seen
    return seen["v"]


def take_out(store: Path, app: str) -> dict:
    """Remove application ``app``'s captures from ``store``; return them as a capture batch (the spool format)."""
    from lineage_listener.store.batch import COLUMNS

    with duckdb.connect(str(store)) as con:
        runs = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE app_name = ?", [app]).fetchall()]
        p = {"r": runs}
        rows = {
            "runs": con.execute(f"SELECT {', '.join(COLUMNS['runs'])} FROM runs WHERE run_id IN (SELECT unnest($r))",
                                p).fetchall(),
            "queries": con.execute(f"SELECT {', '.join(COLUMNS['queries'])} FROM queries "
                                   "WHERE run_id IN (SELECT unnest($r))", p).fetchall(),
            "column_lineage": con.execute(f"SELECT {', '.join(COLUMNS['column_lineage'])} FROM column_lineage "
                                          "WHERE run_id IN (SELECT unnest($r))", p).fetchall(),
        }
        targets = sorted({r[9] for r in rows["queries"] if r[9]})
        rows["datasets"] = con.execute(f"SELECT {', '.join(COLUMNS['datasets'])} FROM datasets "
                                       "WHERE dataset IN (SELECT unnest($t))", {"t": targets}).fetchall()
        rows["dataset_columns"] = con.execute(f"SELECT {', '.join(COLUMNS['dataset_columns'])} FROM dataset_columns "
                                              "WHERE dataset IN (SELECT unnest($t))", {"t": targets}).fetchall()
        con.execute("DELETE FROM edge_captures WHERE run_id IN (SELECT unnest($r))", p)
        con.execute("DELETE FROM queries WHERE run_id IN (SELECT unnest($r))", p)
        con.execute("DELETE FROM runs WHERE run_id IN (SELECT unnest($r))", p)
        con.execute("DELETE FROM dataset_columns WHERE dataset IN (SELECT unnest($t))", {"t": targets})
        con.execute("DELETE FROM datasets WHERE dataset IN (SELECT unnest($t))", {"t": targets})
    return {"rows": {t: [[v.isoformat() if hasattr(v, "isoformat") else v for v in r] for r in rs]
                     for t, rs in rows.items()}}


@pytest.fixture
def policy_file(tmp_path) -> Path:
    path = tmp_path / "policy.yml"
    path.write_text(SERVER_POLICY)
    return path


def test_the_server_checks_each_batch_it_writes_and_tells_the_webhook(retail, store, policy_file, tmp_path):
    root = retail.root
    n = names(root)
    batch = take_out(store, "retail_exports")  # the exports job's capture, sent to the server below
    receiver = Receiver()
    srv = Server(store, extra_args=["--policy", str(policy_file), "--webhook", receiver.url, "--token-name", "ci-bot"],
                 output=tmp_path / "serve.log")
    os.environ["LINEAGE_WEBHOOK_TOKEN"] = "hook-s3cret"  # the server reads it from its environment
    try:
        srv.start()
    finally:
        del os.environ["LINEAGE_WEBHOOK_TOKEN"]
    try:
        # a label set over REST needs the token, and is recorded as set by the token's name
        assert rest(srv, "POST", "/api/labels", {"dataset": n["raw"], "column": "email", "label": "pii.email"},
                    token=None)[0] == 401
        status, body = rest(srv, "POST", "/api/labels", {"dataset": n["raw"], "column": "emial", "label": "pii"})
        assert status == 404 and "closest known: email" in body["detail"]
        assert rest(srv, "POST", "/api/labels", {"dataset": n["raw"], "column": "email", "label": "pii.email"})[0] == 200
        before = settled(srv)
        assert before["violations"] == [] and before["watch"]["full_checks"] >= 1  # no export written yet
        history = rest(srv, "GET", "/api/labels/history")[1]
        assert [(h["action"], h["label"], h["changed_by"]) for h in history] == [("set", "pii.email", "ci-bot")]
        # the exports job's batch arrives: the partner CSV's clear email is found, on the batch's columns only
        status, answer = rest(srv, "POST", "/api/batches", batch)
        assert status == 200 and answer["written"] is True
        after = settled(srv, lambda v: v["violations"] and v["webhook"]["sent"] >= 1)
        assert after["watch"]["full_checks"] == before["watch"]["full_checks"]  # checked incrementally
        assert after["watch"]["checks"] > before["watch"]["checks"]
        [v] = after["violations"]
        assert (v["rule"], v["dataset"], v["column"], v["label"]) == ("no-clear-pii-in-exports", n["partner"], "email",
                                                                      "pii.email")
        assert v["path"][0] == [n["raw"], "email", None] and v["notified_at"] is not None
        [(headers, body)] = receiver.wait(1)
        assert headers["Authorization"] == "Bearer hook-s3cret"
        assert body["event"] == "lineage-listener.violation" and body["violation"]["rule"] == v["rule"]
        assert body["violation"]["path"] == v["path"] and body["violation"]["applications"] == [
            "retail_ingest", "retail_exports"]
        # REST answers as the CLI does
        rest_labels = rest(srv, "GET", "/api/labels")[1]
        srv.stop()
        cli_labels = json.loads(ok("classify", "list", "--store", str(store), "--propagated", "--format", "json"))
        assert rest_labels == cli_labels
        with duckdb.connect(str(store), read_only=True) as con:  # kept in the store, delivered
            assert con.execute("SELECT rule, column_name, notified_at IS NOT NULL, resolved_at FROM policy_violations"
                               ).fetchall() == [("no-clear-pii-in-exports", "email", True, None)]
        log = (tmp_path / "serve.log").read_text()
        assert "hook-s3cret" not in log
        assert "lineage-listener: 1 new policy violation (no-clear-pii-in-exports)" in log   # one, not "violations"
    finally:
        srv.stop()
        receiver.close()


def test_a_webhook_that_is_down_is_retried_shown_and_never_loses_a_violation(retail, store, policy_file, tmp_path):
    root = retail.root
    n = names(root)
    port = free_port()  # nothing listens there yet
    args = ["--policy", str(policy_file), "--webhook", f"http://127.0.0.1:{port}/hook", "--webhook-backoff", "0.2",
            "--webhook-attempts", "1000"]
    srv = Server(store, extra_args=args, output=tmp_path / "serve.log").start()
    receiver = None
    try:
        assert rest(srv, "POST", "/api/labels", {"dataset": n["raw"], "column": "email", "label": "pii"})[0] == 200
        down = settled(srv, lambda v: v["violations"] and v["webhook"]["retries"] >= 2)
        assert down["webhook"]["pending"] == 1 and down["webhook"]["sent"] == 0
        assert "Connection refused" in down["webhook"]["last_error"]
        assert down["violations"][0]["notified_at"] is None
        # stopped while the webhook is down: the violation waits in the store, and is sent after a restart
        srv.stop()
        with duckdb.connect(str(store), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM policy_violations WHERE notified_at IS NULL").fetchone()[0] == 1
        receiver = Receiver(port)
        srv = Server(store, extra_args=args, output=tmp_path / "serve2.log").start()
        [(_, body)] = receiver.wait(1)
        assert body["violation"]["dataset"] == n["partner"]
        up = settled(srv, lambda v: v["webhook"]["sent"] == 1)
        assert up["webhook"]["pending"] == 0 and up["violations"][0]["notified_at"] is not None
    finally:
        srv.stop()
        if receiver:
            receiver.close()


def test_a_webhook_that_refuses_is_given_up_after_its_attempts_and_shown(retail, store, policy_file, tmp_path):
    root = retail.root
    n = names(root)
    receiver = Receiver(status=500)
    srv = Server(store, extra_args=["--policy", str(policy_file), "--webhook", receiver.url, "--webhook-backoff", "0.1",
                                    "--webhook-attempts", "3"], output=tmp_path / "serve.log").start()
    try:
        assert rest(srv, "POST", "/api/labels", {"dataset": n["raw"], "column": "email", "label": "pii"})[0] == 200
        v = settled(srv, lambda v: v["webhook"]["given_up"] == 1)
        assert len(receiver.wait(3)) == 3 and v["webhook"]["retries"] == 2 and v["webhook"]["pending"] == 0
        assert v["webhook"]["last_error"].startswith("HTTP 500")
        assert v["violations"][0]["gave_up_at"] is not None and v["violations"][0]["attempts"] == 3
    finally:
        srv.stop()
        receiver.close()


def test_serve_reads_its_files_first_bad_ones_are_one_line(store, tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("rules: [{name: a, kind: nope}]")
    one_line(cli("serve", "--store", str(store), "--policy", str(bad)), "rule 'a'", "unknown kind 'nope'")
    bad.write_text("classifications: {")
    one_line(cli("serve", "--store", str(store), "--classifications", str(bad)), "not valid YAML")
    one_line(cli("serve", "--store", str(store), "--webhook", "http://127.0.0.1:9/x"), "--webhook needs --policy")


def test_serve_declares_its_classifications_file(retail, store, tmp_path):
    root = retail.root
    n = names(root)
    labels = tmp_path / "labels.yml"
    labels.write_text("classifications:\n  - dataset: 'file:/**/raw/customers.csv'\n    columns: {email: [pii.email]}\n"
                      "  - dataset: 'file:/**/not-yet/**'\n    columns: {x: [pii]}\n")
    srv = Server(store, extra_args=["--classifications", str(labels)], output=tmp_path / "serve.log").start()
    try:
        from conftest import wait_for

        def partner_labels() -> list:
            cols = rest(srv, "GET", "/api/labels", None)[1]["columns"]
            return [x["label"] for c in cols if (c["dataset"], c["column"]) == (n["partner"], "email") for x in c["labels"]]
        assert wait_for(lambda: partner_labels() == ["pii.email"], 120)
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------------------------------
# The UI: the Violations page, labels on a column's page with the why-path, badges, graph nodes, a review.

@pytest.fixture
def page(tmp_path):
    """A page of Debian's chromium driven by Playwright (this test only skips without them: the rest of the
    module runs on every PySpark line, where the browser is not installed)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("no chromium (make install adds Debian's chromium)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        # bypass_csp: the pages' Content-Security-Policy refuses eval, which wait_for_function uses
        # (tests/test_access_oidc.py checks that the pages break no rule of it)
        yield browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=True).new_page()
        browser.close()


def ready(pg) -> None:
    """The view for the current hash has drawn its data (app.js sets body[data-view])."""
    pg.wait_for_function("document.body.dataset.view === (location.hash || '#/')")


def labelled(pg) -> None:
    """governance.js has decorated the current page (and, on a graph, filled the side panel's labels)."""
    pg.wait_for_function("document.body.dataset.labels === location.hash && (!window.lineageGraph || "
                         "!document.getElementById('labels-panel') || !!document.querySelector('#labels-panel[data-ready]'))")


def test_the_ui_shows_labels_why_and_violations_and_takes_a_review(retail, store, policy_file, tmp_path, page):
    root = retail.root
    n = names(root)
    ok("classify", "set", "--store", str(store), n["raw"], "email", "pii.email")
    srv = Server(store, extra_args=["--policy", str(policy_file)], output=tmp_path / "serve.log").start()
    q = lambda s: urllib.parse.quote(s, safe="")  # noqa: E731
    try:
        settled(srv, lambda v: len(v["violations"]) == 1)
        page.goto(f"{srv.url}/#/violations")
        ready(page)
        row = page.locator("#violations tbody tr[data-rule='no-clear-pii-in-exports']")
        assert row.count() == 1 and "partner_top_customers.csv [email]" in row.inner_text()
        assert "1 open" in page.locator("#rules").inner_text()
        # a column page: the label, why (each hop with its application), and the graph's nodes labelled
        page.goto(f"{srv.url}/#/column/{q(n['partner'])}/email")
        ready(page)
        labelled(page)
        panel = page.locator("#labels-panel")
        assert "why is this pii.email?" in panel.inner_text()
        panel.locator("summary").first.click()
        hops = panel.locator(".gov-path li").all_inner_texts()
        assert len(hops) == 2 and "retail_ingest" in hops[0] and "retail_exports" in hops[1]
        graph_labels = dict(page.evaluate(
            "window.lineageGraph.nodes('[column]').map(n => [n.data('dataset') + '|' + n.data('column'), n.data('labels') || ''])"))
        assert graph_labels[f"{n['partner']}|email"] == "pii.email" and graph_labels[f"{n['clean']}|email"] == "pii.email"
        # ... and the graph as a table: badges beside the labelled columns it links
        table_badges = page.locator(f"#edges-table .gov-badges[data-dataset='{n['clean']}'][data-column='email']")
        assert table_badges.count() >= 1 and "pii.email" in table_badges.first.text_content()   # in a closed <details>
        # the impact of the labelled column: its copies and the masked one badged in the impact table
        page.goto(f"{srv.url}/#/impact/{q(n['raw'])}/email")
        ready(page)
        labelled(page)
        badge = lambda ds, col: page.locator(f"#impact-body table .gov-badges[data-dataset='{ds}'][data-column='{col}']")  # noqa: E731
        assert "pii.email" in badge(n["partner"], "email").first.inner_text()
        assert "1 violation" in badge(n["partner"], "email").first.inner_text()
        assert "pii.email masked" in badge(n["hashed"], "email_sha256").first.inner_text()
        # search results: the labelled columns among the columns found
        page.goto(f"{srv.url}/#/search?q=email")
        ready(page)
        labelled(page)
        assert "pii.email" in page.locator(
            f"#column-results .gov-badges[data-dataset='{n['partner']}'][data-column='email']").inner_text()
        # the hashed export's page: a masked copy, the label stops there
        page.goto(f"{srv.url}/#/column/{q(n['hashed'])}/email_sha256")
        ready(page)
        labelled(page)
        assert "pii.email masked" in page.locator("#labels-panel").inner_text()
        # the dataset page: badges beside the columns, the violation flagged
        page.goto(f"{srv.url}/#/dataset/{q(n['partner'])}")
        ready(page)
        labelled(page)
        badges = page.locator(".gov-badges[data-column='email']").inner_text()
        assert "pii.email" in badges and "1 violation" in badges
        assert page.locator(".gov-badges[data-column='name']").count() == 0
        # a review from the column page (with the token): not pii, recorded, and the violation resolves
        page.goto(f"{srv.url}/#/column/{q(n['partner'])}/email")
        ready(page)
        labelled(page)
        page.fill("#label-name", "pii")
        page.check("#label-not")
        page.fill("#label-token", TOKEN)
        page.click("#label-set")
        page.wait_for_function("document.body.dataset.labels === location.hash && "
                               "(document.querySelector('#labels-list') || {innerText: ''}).innerText.includes('not pii')")
        assert "by api-token" in page.locator("#labels-list").inner_text()
        settled(srv, lambda v: v["violations"] == [])
        page.goto(f"{srv.url}/#/violations?resolved=true")
        ready(page)
        assert "resolved" in page.locator("#violations tbody").inner_text()
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------------------------------
# Exports: OpenLineage's tags dataset facet, DataHub tags on schema fields.

def test_exports_carry_labels_openlineage_tags_and_datahub_field_tags(retail, store, tmp_path, registry):
    root = retail.root
    n = names(root)
    ok("classify", "set", "--store", str(store), n["raw"], "email", "pii.email")
    ok("classify", "set", "--store", str(store), n["clean"], "country", "!pii", "--by", "dpo")
    ol = tmp_path / "events.ndjson"
    ok("export", "openlineage", "--store", str(store), "--out", str(ol))
    events = [json.loads(line) for line in ol.read_text().splitlines()]
    tags: dict[str, set] = {}
    for event in events:
        validate(event, registry)  # the tags facet too, against the spec's schema
        for ds in event.get("inputs", []) + event.get("outputs", []):
            for t in ds.get("facets", {}).get("tags", {}).get("tags", []):
                tags.setdefault(ds["name"], set()).add((t["field"], t["key"], t["value"], t["source"]))
    partner = next(k for k in tags if k.endswith("partner_top_customers.csv"))
    assert tags[partner] == {("email", "pii.email", "true", "lineage-listener:propagated")}
    clean = next(k for k in tags if k.endswith("customers_clean"))
    assert tags[clean] == {("email", "pii.email", "true", "lineage-listener:propagated"),
                           ("country", "pii", "false", "lineage-listener:set")}
    assert not any(k.endswith("customer_emails_hashed") for k in tags)  # a masked copy carries nothing
    dh = tmp_path / "datahub.json"
    if subprocess.run([sys.executable, "-c", "import datahub"], env=ENV).returncode != 0:
        pytest.skip("no DataHub extra")
    ok("export", "datahub", "--store", str(store), "--out", str(dh))
    field_tags = {}
    for mcp in json.loads(dh.read_text()):
        aspect = mcp.get("aspect", {}).get("json", {})
        for f in aspect.get("fields", []):
            if f.get("globalTags"):
                field_tags[(mcp["entityUrn"], f["fieldPath"])] = [t["tag"] for t in f["globalTags"]["tags"]]
    partner_urns = {k: v for k, v in field_tags.items() if "partner_top_customers" in k[0]}
    assert list(partner_urns.values()) == [["urn:li:tag:pii.email"]] and list(partner_urns)[0][1] == "email"
    assert not any("customer_emails_hashed" in k[0] for k in field_tags)


def test_labels_that_newly_reach_columns_for_a_lineage_diff(retail, store):
    """The seam of ``lineage-listener diff``: a side that copies email into the partner CSV, against one
    that does not, newly brings pii.email there (what the source column carries comes from the store)."""
    from lineage_listener.govern.declare import set_labels
    from lineage_listener.govern.diff_labels import labels_reaching

    root = retail.root
    n = names(root)
    set_labels(store, [(n["raw"], "email", "pii.email", None)])
    cols = "target_dataset, target_column, source_dataset, source_column, transform, kind, expression, masking"
    with duckdb.connect(str(store), read_only=True) as con:
        con.execute(f"CREATE TEMP TABLE new_side AS SELECT DISTINCT {cols} FROM column_lineage "
                    "JOIN runs USING (run_id) WHERE app_name = 'retail_exports'")
        con.execute("CREATE TEMP TABLE old_side AS SELECT * FROM new_side "
                    "WHERE NOT (target_dataset LIKE '%partner_top_customers.csv' AND target_column = 'email')")
        assert labels_reaching(con, "old_side", "new_side") == [
            {"label": "pii.email", "dataset": n["partner"], "column": "email",
             "from": {"dataset": n["clean"], "column": "email"}}]
        assert labels_reaching(con, "new_side", "new_side") == []
        assert labels_reaching(con, "new_side", "old_side") == []  # a label that stops reaching is not new
