"""``lineage-listener diff``, ``/api/diff*`` and the "what changed" pages, over real runs: one application
(``orders_daily``) run three times under zero-code capture (spark-submit with the bridge), the third
with changed code: a column dropped, an expression changed, a join and a column added.

Run 1 and run 2 are the same code (nothing changed); run 3 against run 2 is the change. A copy of the
store taken after run 2 is the other store of ``--against``.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest

from tests.server_helpers import ROOT, TOKEN, Server
from tests.test_bridge_jobs import capture_args, run_job

APP = "orders_daily"
JOB = '''
import json, sys
from pyspark.sql import SparkSession, functions as F

cfg = json.loads(sys.argv[1])
spark = SparkSession.builder.appName(cfg["app"]).getOrCreate()
orders = spark.read.option("header", True).schema("id INT, customer STRING, amount DOUBLE, currency STRING") \\
    .csv(cfg["orders"])
big = orders.where(F.col("amount") > 10)
if cfg["version"] == 1:
    out = big.select("id", F.upper("customer").alias("customer_uc"), (F.col("amount") * 2).alias("double_amount"))
else:  # customer_uc dropped, double_amount now triples, amount_eur added from a joined rates file
    fx = spark.read.option("header", True).schema("currency STRING, rate DOUBLE").csv(cfg["fx"])
    out = big.join(fx, "currency").select("id", (F.col("amount") * 3).alias("double_amount"),
                                          (F.col("amount") * F.col("rate")).alias("amount_eur"))
out.write.mode("overwrite").parquet(cfg["out"])
spark.stop()
'''


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The store, the store copied after run 2, the three run ids, and when each run started and ended."""
    tmp = tmp_path_factory.mktemp("diff")
    (tmp / "orders.csv").write_text("id,customer,amount,currency\n1,ann,5.0,EUR\n2,bob,20.0,USD\n3,cid,30.5,EUR\n")
    (tmp / "fx.csv").write_text("currency,rate\nEUR,1.0\nUSD,0.92\n")
    (tmp / "job.py").write_text(JOB)
    store, before = tmp / "lineage.duckdb", tmp / "before.duckdb"
    times = []
    for version in (1, 1, 2):
        cfg = {"app": APP, "version": version, "orders": str(tmp / "orders.csv"), "fx": str(tmp / "fx.csv"),
               "out": str(tmp / "out")}
        started = _now()
        rc, out, err = run_job([*capture_args(store), str(tmp / "job.py"), json.dumps(cfg)], tmp)
        assert rc == 0, err[-3000:]
        times.append((started, _now()))
        if len(times) == 2:
            shutil.copy(store, before)
        time.sleep(1.0)  # the windows of the test lie between runs
    with duckdb.connect(str(store), read_only=True) as con:
        ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE app_name = ? ORDER BY started_at",
                                         [APP]).fetchall()]
    assert len(ids) == 3
    return {"store": store, "before": before, "ids": ids, "times": times, "tmp": tmp}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lineage_listener", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def as_json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.stderr == "", proc.stderr
    return json.loads(proc.stdout)


def one_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stdout == ""
    return proc.stderr


def edge(item: dict) -> tuple:
    return (item["target"]["column"], item["source"]["dataset"].rsplit("/", 1)[-1], item["source"]["column"],
            item.get("transform"), item.get("kind"))


def assert_the_change(body: dict, tmp: Path) -> None:
    """Run 3 against run 2, whichever way it was asked for."""
    out, orders, fx = f"file:{tmp / 'out'}", f"file:{tmp / 'orders.csv'}", f"file:{tmp / 'fx.csv'}"
    assert set(body) == {"added", "removed", "changed", "labels", "old", "new"}
    assert body["labels"] == []  # no classifications yet: the key is there, empty
    added = {(i["item"], i.get("dataset"), i.get("column")) for i in body["added"] if i["item"] != "edge"}
    assert added == {("dataset", fx, None), ("column", out, "amount_eur"), ("column", orders, "currency")}
    removed = {(i["item"], i.get("dataset"), i.get("column")) for i in body["removed"] if i["item"] != "edge"}
    assert removed == {("column", out, "customer_uc"), ("column", orders, "customer")}
    assert {edge(i) for i in body["removed"] if i["item"] == "edge"} == {
        ("customer_uc", "orders.csv", "customer", "derived", "direct")}
    added_edges = {edge(i) for i in body["added"] if i["item"] == "edge"}
    assert {("amount_eur", "orders.csv", "amount", "derived", "direct"),
            ("amount_eur", "fx.csv", "rate", "derived", "direct")} <= added_edges
    assert all(i["target"]["dataset"] == out and i["run_id"] for i in body["added"] if i["item"] == "edge")
    assert {(i["transform"], i["kind"]) for i in body["added"] if i["item"] == "edge" and i["dataset_level"]} == {
        ("join", "indirect")}
    [changed] = body["changed"]
    assert (changed["target"], changed["source"]) == ({"dataset": out, "column": "double_amount"},
                                                      {"dataset": orders, "column": "amount"})
    assert changed["fields"] == ["expression"]
    assert [r["expression"] for r in changed["before"]] == ["amount * 2"]
    assert [r["expression"] for r in changed["after"]] == ["amount * 3"]


def test_last_run_against_the_run_before(runs):
    body = as_json(cli("diff", "--store", str(runs["store"]), "--app", APP, "--format", "json"))
    assert_the_change(body, runs["tmp"])
    assert (body["old"]["runs"], body["new"]["runs"]) == ([runs["ids"][1]], [runs["ids"][2]])
    text = cli("diff", "--store", str(runs["store"]), "--app", APP)
    assert text.returncode == 0 and text.stderr == ""
    assert "derived direct amount * 2  ->  derived direct amount * 3" in text.stdout
    assert [line.split()[:2] for line in text.stdout.splitlines() if "[customer_uc]" in line] == [
        ["removed", "column"], ["removed", "edge"]]


def test_exit_code_says_whether_anything_changed(runs):
    first, second, third = runs["ids"]
    same = cli("diff", "--store", str(runs["store"]), "--runs", first, second, "--exit-code", "--format", "json")
    assert same.returncode == 0
    body = as_json(same)
    assert (body["added"], body["removed"], body["changed"]) == ([], [], [])
    assert body["old"]["edges"] == body["new"]["edges"] > 0
    text = cli("diff", "--store", str(runs["store"]), "--runs", first, second, "--exit-code")
    assert text.returncode == 0 and "No changes: the same" in text.stdout
    changed = cli("diff", "--store", str(runs["store"]), "--runs", second, third, "--exit-code", "--format", "json")
    assert changed.returncode == 1
    assert_the_change(json.loads(changed.stdout), runs["tmp"])
    assert cli("diff", "--store", str(runs["store"]), "--runs", second, third).returncode == 0


def test_two_time_windows(runs):
    (s1, _), (_, e2), (s3, e3) = runs["times"]
    old, new = f"{s1.isoformat()}..{e2.isoformat()}", f"{s3.isoformat()}..{e3.isoformat()}"
    body = as_json(cli("diff", "--store", str(runs["store"]), "--windows", old, new, "--format", "json"))
    assert_the_change(body, runs["tmp"])
    assert body["old"]["runs"] == runs["ids"][:2] and body["new"]["runs"] == [runs["ids"][2]]
    scoped = as_json(cli("diff", "--store", str(runs["store"]), "--app", APP, "--windows", old, new, "--format", "json"))
    assert scoped == body | {"old": scoped["old"], "new": scoped["new"]}


def test_against_another_store(runs):
    body = as_json(cli("diff", "--store", str(runs["store"]), "--against", str(runs["before"]), "--app", APP,
                       "--format", "json"))
    assert_the_change(body, runs["tmp"])
    assert str(runs["before"]) in body["old"]["label"] and str(runs["store"]) in body["new"]["label"]
    whole = as_json(cli("diff", "--store", str(runs["store"]), "--against", str(runs["before"]), "--format", "json"))
    assert whole["removed"] == []  # the old store's runs are all in the new one: nothing went away
    assert {i["target"]["column"] for i in whole["added"] if i["item"] == "edge"} >= {"amount_eur", "double_amount"}


def test_bad_input_is_one_line_naming_the_closest(runs):
    store = str(runs["store"])
    assert "unknown application 'orders_dayly'; closest known: orders_daily" in one_line(
        cli("diff", "--store", store, "--app", "orders_dayly"))
    typo = runs["ids"][2][:-1] + "x"
    assert f"unknown run '{typo}'; closest known: {runs['ids'][2]}" in one_line(
        cli("diff", "--store", store, "--runs", runs["ids"][1], typo))
    assert "no store at" in one_line(cli("diff", "--store", store, "--against", str(runs["tmp"] / "nope.duckdb")))
    assert "bad window 'yesterday'" in one_line(cli("diff", "--store", store, "--windows", "yesterday", "7d.."))
    assert "say what to compare" in one_line(cli("diff", "--store", store))
    assert "choose one of runs, windows" in one_line(
        cli("diff", "--store", store, "--runs", *runs["ids"][:2], "--windows", "7d..", "1d.."))


# -- REST and the UI -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def served(runs):
    pytest.importorskip("fastapi")  # the server extra
    srv = Server(runs["store"]).start()
    yield srv
    srv.stop()


def api(served, path: str, **params) -> dict | list:
    query = urllib.parse.urlencode(params, doseq=True)
    with urllib.request.urlopen(f"{served.url}{path}?{query}") as r:
        return json.loads(r.read())


def test_rest_diff_is_the_cli_answer(runs, served):
    body = api(served, "/api/diff", app=APP)
    assert body == as_json(cli("diff", "--store", str(runs["store"]), "--app", APP, "--format", "json"))
    assert api(served, "/api/diff", runs=runs["ids"][:2])["changed"] == []
    with pytest.raises(urllib.error.HTTPError) as err:
        api(served, "/api/diff", app="orders_dayly")
    assert err.value.code == 404 and "closest known: orders_daily" in err.value.read().decode()


def test_rest_history_of_an_application_and_a_dataset(runs, served):
    h = api(served, "/api/diff/history", app=APP)
    assert (h["runs"], h["more"]) == (3, False)
    [change] = h["changes"]  # run 2 kept run 1's lineage: it is counted, not listed
    assert (change["run_id"], change["previous_run_id"], change["runs_kept"]) == (runs["ids"][2], runs["ids"][1], 1)
    assert change["counts"] == {"added": len(change["added"]), "removed": len(change["removed"]), "changed": 1,
                                "labels": 0}
    assert_the_change({k: change[k] for k in ("added", "removed", "changed", "labels", "old", "new")}, runs["tmp"])
    d = api(served, "/api/diff/history", dataset=f"file:{runs['tmp'] / 'out'}")
    assert d["runs"] == 3 and [w["app_name"] for w in d["writers"]] == [APP]
    [write] = d["changes"]
    assert write["run_id"] == runs["ids"][2] and write["changed"] == change["changed"]
    assert [a["app_name"] for a in api(served, "/api/diff/apps")] == [APP]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(not CHROMIUM, reason="no chromium (make install adds Debian's chromium)")
def test_what_changed_pages(runs, served, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            # bypass_csp: the pages' Content-Security-Policy refuses eval, which wait_for_function uses
            pg = browser.new_page(viewport={"width": 1400, "height": 900}, bypass_csp=True)
            ready = lambda: pg.wait_for_function("document.body.dataset.view === (location.hash || '#/')")  # noqa: E731
            pg.goto(f"{served.url}/#/")
            ready()
            pg.click("header a[href='#/changes']")
            ready()
            pg.click(f"#changes-apps a:text-is('{APP}')")
            ready()
            sections = pg.locator("section.change")
            assert sections.count() == 1 and sections.first.get_attribute("data-run") == runs["ids"][2]
            changed = sections.first.locator("tr.changed")
            assert changed.count() == 1
            assert "amount * 2" in changed.inner_text() and "amount * 3" in changed.inner_text()
            assert sections.first.locator("tr.removed").filter(has_text="customer_uc").count() == 2  # column, edge
            assert "3 runs with lineage" in pg.inner_text("#changes-summary")
            # a dataset's page links to how its writes changed
            out = f"file:{runs['tmp'] / 'out'}"
            pg.goto(f"{served.url}/#/dataset/{urllib.parse.quote(out, safe='')}")
            ready()
            pg.click("#changes-link")
            ready()
            assert pg.locator("section.change").count() == 1
            assert APP in pg.inner_text("#changes-summary")
            assert pg.locator("section.change tr.added").filter(has_text="amount_eur").count() >= 1
            # a new source is listed as a source, not under the target
            fx = pg.locator("section.change tr.added").filter(has=pg.locator(f"a[title='file:{runs['tmp'] / 'fx.csv'}']"))
            assert fx.count() == 1 and fx.locator("td").nth(1).inner_text() == "source dataset"
            assert fx.locator("td").nth(2).inner_text() == "" and "fx.csv" in fx.locator("td").nth(3).inner_text()
            # a mistyped application: "did you mean" leads to its changes
            pg.goto(f"{served.url}/#/changes/app/orders_dayly")
            ready()
            pg.click(f".error a:text-is('{APP}')")
            ready()
            assert pg.evaluate("location.hash") == f"#/changes/app/{APP}" and pg.locator("section.change").count() == 1
            # a label the change newly brings to a column is an alarm, with its column and the rule it breaks
            store = tmp_path / "labelled.duckdb"
            shutil.copy(runs["store"], store)
            (tmp_path / "policy.yml").write_text('rules:\n  - {name: no-pii-in-out, kind: forbid, label: pii, datasets: ["file:/**/out"]}\n')
            srv = Server(store, extra_args=["--policy", str(tmp_path / "policy.yml")], output=tmp_path / "serve.log").start()
            try:
                orders = f"file:{runs['tmp'] / 'orders.csv'}"
                req = urllib.request.Request(f"{srv.url}/api/labels", json.dumps({"dataset": orders, "column": "amount", "label": "pii"}).encode(),
                                             method="POST", headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"})
                urllib.request.urlopen(req).close()
                from conftest import wait_for
                assert wait_for(lambda: any(v["column"] == "amount_eur" for v in api(srv, "/api/violations")["violations"]), 120)
                pg.goto(f"{srv.url}/#/changes/app/{APP}")
                ready()
                leak = pg.locator(".new-leaks li.new-leak[data-column='amount_eur']")
                assert leak.count() == 1 and pg.locator(".new-leaks").get_attribute("role") == "alert"
                assert "pii" in leak.inner_text() and "⚠ breaks no-pii-in-out" in leak.inner_text()
                assert leak.locator("a").first.get_attribute("href") == f"#/column/{urllib.parse.quote(out, safe='')}/amount_eur"
                (ROOT / "test-artifacts").mkdir(exist_ok=True)
                pg.screenshot(path=str(ROOT / "test-artifacts" / "changes-leak.png"))
            finally:
                srv.stop()
        finally:
            browser.close()


def test_labels_the_change_newly_carries(runs, tmp_path):
    """A label on a source column reaches the column the change adds (``amount_eur`` copies ``amount``
    derived); the column that copied it before and still does (``double_amount``) is not news."""
    store = tmp_path / "lineage.duckdb"
    shutil.copy(runs["store"], store)  # the label is written into the store: not into the module's one
    tmp = runs["tmp"]
    orders, out = f"file:{tmp / 'orders.csv'}", f"file:{tmp / 'out'}"
    label = cli("classify", "set", "--store", str(store), orders, "amount", "confidential")
    assert label.returncode == 0, label.stderr
    body = as_json(cli("diff", "--store", str(store), "--app", APP, "--format", "json"))
    assert [(i["label"], i["dataset"], i["column"], i["from"]["column"]) for i in body["labels"]] == [
        ("confidential", out, "amount_eur", "amount")]
