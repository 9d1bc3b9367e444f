"""The web UI in a real headless browser (Debian's chromium driven by Playwright), over the demo's store."""
from __future__ import annotations

import json
import shutil
import urllib.parse
import urllib.request

import pytest

pytest.importorskip("fastapi")
playwright = pytest.importorskip("playwright.sync_api")

from tests.server_helpers import ROOT, Server  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = ROOT / "test-artifacts"
pytestmark = pytest.mark.skipif(not CHROMIUM, reason="no chromium (make install adds Debian's chromium)")


@pytest.fixture(scope="module")
def served(demo_store, tmp_path_factory):
    store = tmp_path_factory.mktemp("ui") / "lineage.duckdb"
    store.write_bytes(demo_store.read_bytes())
    srv = Server(store).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def page():
    ARTIFACTS.mkdir(exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        pg = browser.new_page(viewport={"width": 1400, "height": 900})
        yield pg
        browser.close()


def graph(pg) -> tuple[set, set]:
    pg.wait_for_function("window.lineageGraph && window.lineageGraph.nodes().length > 0")
    nodes = set(map(tuple, pg.evaluate(
        "window.lineageGraph.nodes().map(n => [n.data('dataset'), n.data('column')])")))
    edges = set(map(tuple, pg.evaluate(
        "window.lineageGraph.edges().map(e => [e.source().data('dataset'), e.source().data('column'), "
        "e.target().data('column'), e.data('label'), e.data('kind'), e.data('masking')])")))
    return nodes, edges


def test_search_dataset_column_graph_and_recentre(served, page):
    page.goto(served.url + "/")
    page.fill("#search", "customer_summary")
    page.press("#search", "Enter")
    page.click("text=spark_catalog.sales.customer_summary")
    page.wait_for_selector("#columns a.column")
    assert set(page.locator("#columns a.column").all_inner_texts()) == {"customer_id", "name", "email_hash",
                                                                         "total_spend"}
    page.screenshot(path=str(ARTIFACTS / "dataset.png"), full_page=True)
    page.click("#columns >> text=email_hash")
    nodes, edges = graph(page)
    url = (f"{served.url}/v3/namespaces/default/datasets/spark_catalog.sales.customer_summary/columns/email_hash/"
           f"lineage")
    with urllib.request.urlopen(url) as r:
        api = json.loads(r.read())
    assert nodes == {(n["dataset"], n["column"]) for n in api["nodes"]}
    assert edges == {(e["source"]["dataset"], e["source"]["column"], e["target"]["column"], e["transform"], e["kind"],
                      int(e["masking"])) for e in api["edges"]}
    assert any(e[1:] == ("email", "email_hash", "derived", "direct", 1) for e in edges)  # masked, drawn red
    assert any(kind == "indirect" and label == "join" for *_, label, kind, _ in edges)  # drawn dashed
    style = page.evaluate("window.lineageGraph.edges('[kind = \"indirect\"]')[0].style('line-style')")
    assert style == "dashed"
    page.screenshot(path=str(ARTIFACTS / "column.png"), full_page=True)
    # click a source column: the graph re-centres on it
    page.evaluate("window.lineageGraph.nodes().filter(n => n.data('column') === 'email')[0].emit('tap')")
    page.wait_for_function("location.hash.includes('/email?') || location.hash.endsWith('/email')")
    page.wait_for_function("window.lineageGraph.nodes().some(n => n.data('start') === 1 && n.data('column') === 'email')")


def test_controls_direction_and_runs_page(served, page):
    ds = urllib.parse.quote("spark_catalog.sales.customer_summary", safe="")
    page.goto(f"{served.url}/#/column/{ds}/email_hash")
    graph(page)
    page.select_option("#direction", "forward")
    page.fill("#depth", "1")
    page.click("#apply")
    page.wait_for_function("location.hash.includes('direction=forward')")
    page.wait_for_function("window.lineageGraph && window.lineageGraph.nodes().length >= 1")
    page.goto(served.url + "/#/runs")
    page.click("table a")
    page.wait_for_selector("#queries")
    text = page.inner_text("#queries")
    assert "succeeded" in text and "spark_catalog.sales.customer_summary" in text
    page.screenshot(path=str(ARTIFACTS / "run.png"), full_page=True)


def test_unknown_column_shows_the_closest_names(served, page):
    ds = urllib.parse.quote("spark_catalog.sales.customer_summary", safe="")
    page.goto(f"{served.url}/#/column/{ds}/emial_hash")
    page.wait_for_selector(".note")
    assert "email_hash" in page.inner_text("#view")




def test_html_file_draws_the_same_graph_offline(demo_store, page, tmp_path):
    import os
    import subprocess
    import sys

    out = tmp_path / "lineage.html"
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", "html", "--store", str(demo_store),
                           "spark_catalog.sales.customer_summary", "email_hash", "-o", str(out)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert "http://" not in out.read_text().split("window.LINEAGE_STATIC")[0].split("<script>")[0]
    page.goto(out.as_uri())
    nodes, edges = graph(page)
    assert ("spark_catalog.sales.customer_summary", "email_hash") in nodes and len(edges) >= 5
    assert any(e[1:] == ("email", "email_hash", "derived", "direct", 1) for e in edges)
    page.screenshot(path=str(ARTIFACTS / "html-export.png"), full_page=True)
