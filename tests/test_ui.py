"""The web UI in a real headless browser (Debian's chromium driven by Playwright), over a store filled by a
real four-job pipeline (tests/ui_pipeline.py): one server, one browser per module.

Waiting: every view sets ``body[data-view]`` to the hash it drew once its data is on screen; tests wait for
that (``ready``) instead of for elements that an earlier page may also have drawn.
"""
from __future__ import annotations

import csv
import functools
import io
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request

import pytest

pytest.importorskip("fastapi")
playwright = pytest.importorskip("playwright.sync_api")

from tests.server_helpers import ROOT, TOKEN, Server  # noqa: E402
from bench.ui_bench import GRAPH_STATS  # noqa: E402
from tests.retail import JOBS  # noqa: E402
from tests.ui_pipeline import WIDE, pipeline  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = ROOT / "test-artifacts"
pytestmark = pytest.mark.skipif(not CHROMIUM, reason="no chromium (make install adds Debian's chromium)")


@pytest.fixture(scope="module")
def ui_store(spark, tmp_path_factory):
    import lineage_listener

    out = tmp_path_factory.mktemp("ui")
    store = out / "lineage.duckdb"
    handle = lineage_listener.enable(spark, store=str(store))
    try:
        pipeline(spark, out)
        assert handle.flush(120)
    finally:
        lineage_listener.disable(spark)
    return out


@pytest.fixture(scope="module")
def served(ui_store):
    srv = Server(ui_store / "lineage.duckdb").start()
    srv.out = ui_store
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def retail(retail):
    """The session's retail pipeline (tests/retail.py: catalog tables, a wide fact table written by a
    ``spark.sql`` CTAS, exports; captured zero-code once per session), served; ``times``: when each job ran."""
    srv = Server(retail.store).start()
    srv.out, srv.times = retail.root, retail.times
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser():
    ARTIFACTS.mkdir(exist_ok=True)
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    # bypass_csp: the pages' Content-Security-Policy refuses eval, which wait_for_function uses
    # (tests/test_access_oidc.py checks that the pages break no rule of it)
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=True)
    pg = ctx.new_page()
    yield pg
    ctx.close()


def ds(served, name: str) -> str:
    return f"file:{served.out / name}"


def col_url(served, dataset: str, column: str, query: str = "") -> str:
    q = urllib.parse.quote
    return f"{served.url}/#/column/{q(dataset, safe='')}/{q(column, safe='')}" + (f"?{query}" if query else "")


def api(served, path: str, **params) -> dict:
    with urllib.request.urlopen(f"{served.url}{path}?{urllib.parse.urlencode(params)}") as r:
        return json.loads(r.read())


def lineage_api(served, dataset: str, column: str, **params) -> dict:
    q = urllib.parse.quote
    return api(served, f"/v3/namespaces/default/datasets/{q(dataset, safe='')}/columns/{q(column, safe='')}/lineage",
               **params)


def ready(pg) -> None:
    """The view for the current hash has drawn its data (or its error)."""
    pg.wait_for_function("document.body.dataset.view === (location.hash || '#/')")


WH = "spark_catalog.warehouse."
READABLE_PX = 10  # the least label size a first view or "fit" may draw

#: What a graph looks like on screen: boxes (dataset boxes and their titles), column nodes and drawn edge
#: labels with their rendered bounding boxes and font sizes in screen pixels, and the canvas size.
GEOMETRY = """(() => {
  const cy = window.lineageGraph, z = cy.zoom();
  const label = el => el.renderedBoundingBox({includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false});
  const body = el => el.renderedBoundingBox({includeLabels: false, includeOverlays: false});
  const px = el => parseFloat(el.style('font-size')) * z;
  return {
    zoom: z, frame: {w: cy.width(), h: cy.height()},
    boxes: cy.nodes('.box').map(b => ({id: b.id(), label: b.data('label'), title: label(b), box: body(b), px: px(b)})),
    columns: cy.nodes('[column]').map(n => ({id: n.id(), column: n.data('column'), parent: n.data('box') || null,
                                             extra: n.hasClass('extra'), box: body(n), px: px(n)})),
    labels: cy.edges('[show = 1]').map(e => ({id: e.id(), label: e.data('label'), box: label(e), px: px(e)})),
    edges: cy.edges().length,
  };
})()"""


def overlap(a: dict, b: dict, gap: float = 0) -> bool:
    """Two rendered boxes ({x1, y1, x2, y2}) overlap, or lie closer than ``gap`` pixels."""
    return a["x1"] < b["x2"] + gap and b["x1"] < a["x2"] + gap and a["y1"] < b["y2"] + gap and b["y1"] < a["y2"] + gap


def clashes(geo: dict) -> list[tuple]:
    """What a reader cannot read on a drawn graph: box titles touching each other or another box, boxes on
    boxes, edge labels over a title, a column or another edge label."""
    out = []
    boxes = geo["boxes"]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if overlap(a["title"], b["title"], 6):
                out.append(("title on title", a["label"], b["label"]))
            if overlap(a["box"], b["box"]):
                out.append(("box on box", a["label"], b["label"]))
        for b in boxes:
            if a is not b and overlap(a["title"], b["box"], 4):
                out.append(("title on box", a["label"], b["label"]))
    for i, e in enumerate(geo["labels"]):
        out += [("edge label on title", e["label"], b["label"]) for b in boxes if overlap(e["box"], b["title"])]
        out += [("edge label on column", e["label"], c["id"]) for c in geo["columns"] if overlap(e["box"], c["box"])]
        out += [("edge label on edge label", e["label"], f["label"]) for f in geo["labels"][i + 1:] if overlap(e["box"], f["box"])]
    return out


def graph(pg) -> tuple[set, set]:
    nodes = set(map(tuple, pg.evaluate(
        "window.lineageGraph.nodes('[column]').map(n => [n.data('dataset'), n.data('column')])")))
    edges = set(map(tuple, pg.evaluate(
        "window.lineageGraph.edges().map(e => [e.source().data('dataset'), e.source().data('column'), "
        "e.target().data('dataset'), e.target().data('column'), e.data('kind'), e.data('masking')])")))
    return nodes, edges


def api_graph(body: dict) -> tuple[set, set]:
    return ({(n["dataset"], n["column"]) for n in body["nodes"]},
            {(e["source"]["dataset"], e["source"]["column"], e["target"]["dataset"], e["target"]["column"], e["kind"],
              int(e["masking"])) for e in body["edges"]})


def reach(edges: set, node: tuple, forward: int) -> set:
    """Nodes upstream (forward=0) or downstream (1) of ``node`` over (src ds, src col, dst ds, dst col, ...) edges."""
    step = {}
    for e in edges:
        a, b = (e[0], e[1]), (e[2], e[3])
        u, v = (a, b) if forward else (b, a)
        step.setdefault(u, set()).add(v)
    seen, todo = set(), [node]
    while todo:
        for nxt in step.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_search_columns_with_autocomplete_and_the_dataset_page(served, page):
    page.goto(served.url + "/")
    ready(page)
    assert page.evaluate("typeof window.cytoscape") == "undefined"  # no graph library on a page without a graph
    page.fill("#search", "email")
    page.wait_for_selector("#suggestions:not([hidden]) a")
    found = api(served, "/api/search", q="email", limit=500)
    assert found["columns_total"] == len(found["columns"]) >= 6
    shown = page.locator("#suggestions a").all_inner_texts()
    assert any("email" in s and "raw/customers" in s for s in shown)
    page.press("#search", "Enter")
    ready(page)
    assert page.inner_text("#columns-count") == f"{found['columns_total']} columns"
    rows = page.locator("#column-results tbody tr").count()
    assert rows == found["columns_total"]
    assert "email" in page.title()
    page.screenshot(path=str(ARTIFACTS / "search.png"), full_page=True)

    page.click(f"#column-results a[title='{ds(served, 'raw/customers')}']")
    ready(page)
    assert ds(served, "raw/customers") in page.title()
    names = page.locator("#columns a.column").all_inner_texts()
    schema = api(served, "/api/schema", dataset=ds(served, "raw/customers"))["columns"]
    assert names == [c["name"] for c in schema] and set(names) == {"customer_id", "name", "email", "country"}
    page.fill("#column-filter", "mail")
    assert page.locator("#columns tbody tr:not([hidden])").all_inner_texts()[0].split("\t")[1] == "email"
    assert page.locator("#columns tbody tr:not([hidden])").count() == 1
    assert "UTC" in page.inner_text("#view")  # human timestamps with their timezone
    page.screenshot(path=str(ARTIFACTS / "dataset.png"), full_page=True)


def test_column_graph_equals_the_api_highlights_paths_and_recentres_separately(served, page):
    start = (ds(served, "clean/customers"), "email")
    page.goto(col_url(served, *start, "direction=both&directOnly=false"))
    ready(page)
    nodes, edges = graph(page)
    assert (nodes, edges) == api_graph(lineage_api(served, *start, direction="both", directOnly="false"))
    assert any(e[3] == "email_sha" and e[5] == 1 for e in edges)  # the masked edge
    assert page.evaluate("window.lineageGraph.edges('[kind = \"indirect\"]')[0].style('line-style')") == "dashed"
    # datasets are compound nodes with distinct names: raw/customers and clean/customers both hold "email"
    labels = page.evaluate("window.lineageGraph.nodes('.box').map(n => n.data('label'))")
    assert "…/raw/customers" in labels and "…/clean/customers" in labels
    assert page.evaluate("window.lineageGraph.nodes('[column]').every(n => n.data('box') === 'ds:' + n.data('dataset'))")
    page.screenshot(path=str(ARTIFACTS / "column.png"), full_page=True)

    # click a column: its upstream and downstream paths light up, the rest is dimmed; no navigation
    hash_before = page.evaluate("location.hash")
    page.evaluate("""void window.lineageGraph.nodes('[column]').filter(n => n.data('column') === 'email_plain')[0]
                     .emit('tap')""")  # void: returning the element would make Playwright serialise the whole graph
    lit = set(map(tuple, page.evaluate(
        "window.lineageGraph.nodes('.hl[column]').map(n => [n.data('dataset'), n.data('column')])")))
    picked = (ds(served, "marts/contacts"), "email_plain")
    assert lit == {picked} | reach(edges, picked, 0) | reach(edges, picked, 1)
    assert {start, (ds(served, "raw/customers"), "email"), (ds(served, "exports/newsletter"), "contact")} < lit
    assert page.evaluate("window.lineageGraph.nodes('[column]').filter(n => n.data('column') === 'email_hash')[0]"
                         ".hasClass('dim')")
    assert page.evaluate("location.hash") == hash_before
    page.wait_for_selector("#labels-panel[data-ready]")  # the side panel shows the column clicked
    assert page.inner_text("#picked") == "email_plain" and "no label reaches this column" in page.inner_text("#labels-panel")
    page.screenshot(path=str(ARTIFACTS / "column-highlight.png"), full_page=True)
    # re-centring is its own action
    page.click("#recentre")
    ready(page)
    assert "email_plain" in page.evaluate("decodeURIComponent(location.hash)")
    assert page.evaluate("window.lineageGraph.nodes('[start = 1]').map(n => n.data('column'))") == ["email_plain"]
    # the table view holds the same edges (keyboard and screen readers)
    rows = page.locator("#edges-table tbody tr").count()
    assert rows == page.evaluate("window.lineageGraph.edges().length")


def test_backward_defaults_to_direct_edges_and_indirect_are_one_click_away(served, page):
    target = (ds(served, "marts/customer_spend"), "spend")
    page.goto(col_url(served, *target))
    ready(page)
    nodes, edges = graph(page)
    assert (nodes, edges) == api_graph(lineage_api(served, *target, directOnly="true"))
    assert {e[4] for e in edges} == {"direct"}
    assert page.is_checked("#direct")
    page.uncheck("#direct")
    page.click("#apply")
    page.wait_for_function("location.hash.includes('directOnly=false')")
    ready(page)
    _, edges = graph(page)
    assert {e[4] for e in edges} == {"direct", "indirect"}


def test_labels_stay_readable_on_a_45_column_graph(served, page):
    page.goto(col_url(served, ds(served, "marts/metrics_total"), "total"))
    ready(page)
    n = page.evaluate("window.lineageGraph.nodes('[column]').length")
    assert n >= 2 * WIDE + 1 >= 45
    px = page.evaluate("parseFloat(window.lineageGraph.nodes('[column]')[0].style('font-size')) "
                       "* window.lineageGraph.zoom()")
    assert px >= 10, f"labels drawn at {px:.1f} px"
    # left to right: every edge points rightwards
    assert page.evaluate("window.lineageGraph.edges().every(e => e.source().position('x') < e.target().position('x'))")
    assert page.is_visible("#minimap") and page.is_visible("#minimap-view")
    page.screenshot(path=str(ARTIFACTS / "column-45.png"), full_page=True)
    z0 = page.evaluate("window.lineageGraph.zoom()")
    page.click("#zoom-in")
    assert page.evaluate("window.lineageGraph.zoom()") == pytest.approx(z0 * 1.25)
    box = page.locator("#graph").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, 100)  # one notch out
    page.wait_for_function(f"window.lineageGraph.zoom() < {z0 * 1.25 / 1.1}")
    page.click("#zoom-fit")  # the graph does not fit at a readable size: fit stops there, as the first view did
    assert page.evaluate("window.lineageGraph.zoom()") == pytest.approx(z0)
    assert page.evaluate("parseFloat(window.lineageGraph.edges()[0].style('font-size')) * window.lineageGraph.zoom()") \
        >= READABLE_PX - 0.01


def test_a_slow_earlier_response_never_draws_over_a_later_page(served, page):
    """Open one column, then another while the first one's lineage request is held: the held response,
    released afterwards, must not replace the second page's graph."""
    first, second = (ds(served, "marts/customer_spend"), "spend"), (ds(served, "marts/customer_spend"), "email_hash")
    held, settled = [], []
    page.route("**/columns/spend/lineage*", lambda route: held.append(route))
    page.on("requestfinished", lambda r: settled.append(r.url))
    page.on("requestfailed", lambda r: settled.append(r.url))
    page.goto(served.url + "/")
    ready(page)
    with page.expect_request(lambda r: "/columns/spend/lineage" in r.url):
        page.evaluate("h => { location.hash = h; }", col_url(served, *first).split("#", 1)[1])
    page.evaluate("h => { location.hash = h; }", col_url(served, *second).split("#", 1)[1])
    ready(page)
    assert len(held) == 1
    try:
        held[0].continue_()  # the slow server answers at last
    except playwright.Error:
        pass  # the page had cancelled the request: Playwright refuses to continue it
    for _ in range(400):  # until the released request has settled (finished or failed) in the page
        if any("/columns/spend/lineage" in u for u in settled):
            break
        page.wait_for_timeout(25)
    assert any("/columns/spend/lineage" in u for u in settled)
    nodes, _ = graph(page)
    assert nodes == api_graph(lineage_api(served, *second, directOnly="true"))[0]
    assert page.evaluate("window.lineageGraph.nodes('[start = 1]').map(n => n.data('column'))") == ["email_hash"]
    assert "email_hash" in page.inner_text("h2") and page.title().startswith("email_hash")


def test_impact_view_has_the_cli_numbers_the_alarm_and_a_csv(served, page):
    source = (ds(served, "raw/customers"), "email")
    q = urllib.parse.quote
    page.goto(f"{served.url}/#/impact/{q(source[0], safe='')}/email")
    ready(page)
    cli = subprocess.run([sys.executable, "-m", "lineage_listener", "impact", "--store",
                          str(served.out / "lineage.duckdb"), *source, "--format", "json"],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    report = json.loads(cli.stdout)
    rows = [r.split("\t") for r in page.locator("#impact-table tbody tr").all_inner_texts()]
    words = {"unmasked (clear copy)": "unmasked", "partly masked": "partly", "masked on every path": "masked"}
    shown = {(r[1], r[2], words[r[3]]) for r in rows}
    assert shown == {(d["dataset"], d["column"], d["masking"]) for d in report["downstream"]}
    assert len(rows) == len(report["downstream"])
    for status in ("unmasked", "partly", "masked"):
        n = sum(d["masking"] == status for d in report["downstream"])
        assert page.inner_text(f"#n-{status}").startswith(f"{n} ")
    assert (ds(served, "exports/partner"), "email", "unmasked") in shown
    assert (ds(served, "exports/newsletter"), "contact", "partly") in shown
    assert (ds(served, "marts/customer_spend"), "email_hash", "masked") in shown
    # the clear copy is the alarm on the graph, the masked one is not
    colour = page.evaluate("""window.lineageGraph.nodes('[column]').filter(n => n.data('dataset').endsWith('exports/partner'))[0]
                              .style('border-color')""")
    assert colour == "rgb(192,57,43)"
    assert page.evaluate("window.lineageGraph.nodes('[status = \"masked\"]').length") == \
        sum(d["masking"] == "masked" for d in report["downstream"])
    page.screenshot(path=str(ARTIFACTS / "impact.png"), full_page=True)
    href = page.get_attribute("#csv", "href")
    with urllib.request.urlopen(served.url + href) as r:
        table = list(csv.DictReader(io.StringIO(r.read().decode())))
    assert {(r["dataset"], r["column"], r["masking"]) for r in table if r["reach"] == "copy"} == \
        {(d["dataset"], d["column"], d["masking"]) for d in report["downstream"]}
    assert {(r["dataset"], r["column"]) for r in table if r["reach"] == "influenced"} == \
        {(d["dataset"], d["column"]) for d in report["influenced"]}


def test_time_windows_errors_in_the_fields_words_and_suggestions(served, page):
    target = (ds(served, "clean/customers"), "email")
    page.goto(col_url(served, *target, "from=7d"))
    ready(page)
    assert page.input_value("#from") == "7d"
    assert len(graph(page)[0]) == len(lineage_api(served, *target, start="7d", directOnly="true")["nodes"]) > 1
    page.goto(col_url(served, *target, "to=2000-01-01"))
    ready(page)
    assert page.input_value("#to") == "2000-01-01"
    assert page.evaluate("window.lineageGraph.edges().length") == 0
    page.goto(col_url(served, *target, "depth=-1"))
    ready(page)
    err = page.inner_text("#depth-error")
    assert err and "maxLevels" not in err and page.get_attribute("#depth", "aria-invalid") == "true"
    assert page.is_visible("#controls") and page.input_value("#depth") == "-1"
    page.goto(col_url(served, *target, "from=2d&to=7d"))
    ready(page)
    assert page.inner_text("#from-error") == "later than “to”"
    page.goto(col_url(served, *target, "from=yesterday-ish"))
    ready(page)
    assert page.inner_text("#from-error").startswith("not a time: ") and page.is_visible("#controls")
    assert page.get_attribute("#from", "aria-invalid") == "true" and page.get_attribute("#to", "aria-invalid") is None
    page.goto(col_url(served, target[0], "emial"))
    ready(page)
    page.click(".error a:text('email')")
    ready(page)
    assert page.evaluate("window.lineageGraph.nodes('[start = 1]').map(n => n.data('column'))") == ["email"]
    page.screenshot(path=str(ARTIFACTS / "error.png"), full_page=True)


def test_paging_runs_and_sql(served, page):
    every = [d["dataset"] for d in api(served, "/api/search", what="datasets", limit=500)["datasets"]]
    page.goto(served.url + "/#/?limit=5")
    ready(page)
    assert page.inner_text("#datasets-count") == f"{len(every)} datasets"
    seen = []
    while True:
        seen += page.locator("#datasets tbody a").all_inner_texts()
        if not page.locator("#next-datasets").count():
            break
        page.click("#next-datasets")
        ready(page)
    assert seen == every and len(every) > 10
    page.goto(served.url + "/#/runs")
    ready(page)
    assert page.inner_text("#runs-count") == "1 run"
    assert "UTC" in page.inner_text("#runs")
    page.click("#runs tbody a")
    ready(page)
    text = page.inner_text("#queries")
    assert "succeeded" in text and "UTC" in text and "not from SQL" in text
    assert all(d.endswith((" ms", " s")) for d in page.locator("#queries tbody td:nth-child(4)").all_inner_texts())
    assert "run" in page.title()
    page.screenshot(path=str(ARTIFACTS / "run.png"), full_page=True)


def test_no_graph_is_leaked_over_40_navigations(served, page):
    a = col_url(served, ds(served, "marts/customer_spend"), "spend").split("#", 1)[1]
    b = col_url(served, ds(served, "clean/customers"), "email", "direction=both").split("#", 1)[1]
    page.goto(served.url + "/#" + a)
    ready(page)
    cdp = page.context.new_cdp_session(page)

    def heap() -> float:
        cdp.send("HeapProfiler.collectGarbage")
        return cdp.send("Runtime.getHeapUsage")["usedSize"]

    for target in (b, a):  # one navigation there and back: libraries loaded, caches warm
        page.evaluate(f"location.hash = {json.dumps(target)}")
        ready(page)
    after_1 = heap()
    for i in range(40):
        page.evaluate(f"location.hash = {json.dumps(b if i % 2 == 0 else a)}")
        ready(page)
    after_40 = heap()
    assert after_40 <= 1.5 * after_1, f"heap {after_1 / 1e6:.1f} MB -> {after_40 / 1e6:.1f} MB"
    print(f"JS heap after 1 navigation {after_1 / 1e6:.1f} MB, after 40: {after_40 / 1e6:.1f} MB")


def test_docs_render_offline_with_favicon_and_overview(served, page):
    outside = []

    def only_local(route):
        if urllib.parse.urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()
    page.route("**/*", only_local)
    page.goto(served.url + "/docs")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "lineage-listener" in page.inner_text(".swagger-ui .info .title")
    page.get_by_text("/api/impact.csv").first.wait_for()
    assert outside == []
    page.screenshot(path=str(ARTIFACTS / "docs.png"))
    with urllib.request.urlopen(served.url + "/favicon.ico") as r:
        assert r.status == 200 and r.headers["content-type"].startswith("image/svg")
    page.goto(f"{served.url}/#/overview/{urllib.parse.quote(ds(served, 'clean/customers'), safe='')}")
    ready(page)
    body = api(served, "/api/overview", dataset=ds(served, "clean/customers"))
    assert page.evaluate("window.lineageGraph.nodes().length") == len(body["nodes"])
    assert {e["target"] for e in body["edges"]} >= {ds(served, "exports/partner"), ds(served, "exports/newsletter")}
    page.screenshot(path=str(ARTIFACTS / "overview.png"), full_page=True)


def open_html(pg, store, start: tuple, out, *args: str) -> None:
    """Write ``lineage-listener html`` of ``start`` (with ``args``) to ``out`` and open it once drawn whole."""
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", "html", "--store", str(store), *start, *args,
                           "-o", str(out)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert "http://" not in out.read_text().split("window.LINEAGE_STATIC")[0].split("<script>")[0]
    pg.goto(out.as_uri())
    pg.wait_for_function("window.lineageGraph && window.lineageGraph.nodes().length > 0 && !window.lineageGraph.scratch('later')")


def test_html_file_draws_the_same_graph_offline(served, page, tmp_path):
    target = (ds(served, "marts/customer_spend"), "email_hash")
    open_html(page, served.out / "lineage.duckdb", target, tmp_path / "lineage.html")
    nodes, edges = graph(page)
    assert (nodes, edges) == api_graph(lineage_api(served, *target))
    assert any(e[3] == "email_hash" and e[5] == 1 for e in edges)
    page.screenshot(path=str(ARTIFACTS / "html-export.png"), full_page=True)


def test_a_stream_is_one_job_with_its_batches(spark, page, tmp_path):
    """A stream of three micro-batches is one row: its sink, batch count and last batch as the API says."""
    import lineage_listener

    src, out = tmp_path / "in", tmp_path / "live"
    src.mkdir()
    store = tmp_path / "lineage.duckdb"
    handle = lineage_listener.enable(spark, store=str(store))
    try:
        q = (spark.readStream.schema("id INT, name STRING").json(str(src)).selectExpr("id", "upper(name) AS who")
             .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(tmp_path / "ck"))
             .queryName("live_people").start())
        try:
            for i in range(3):  # a file arrives, a micro-batch runs
                (tmp_path / f"{i}.tmp").write_text(json.dumps({"id": i, "name": f"n{i}"}) + "\n")
                (tmp_path / f"{i}.tmp").rename(src / f"{i}.json")
                q.processAllAvailable()
        finally:
            q.stop()
        assert handle.flush(120)
    finally:
        lineage_listener.disable(spark)
    srv = Server(store).start()
    try:
        [body] = api(srv, "/api/streams")
        assert body["name"] == "live_people" and body["batch_count"] == 3 and body["targets"] == [f"file:{out}"]
        assert body["sources"] == [f"file:{src}"]
        page.goto(srv.url + "/#/streams")
        ready(page)
        assert page.inner_text("#streams-count").startswith("1 stream")
        row = page.locator("#streams tbody tr")
        assert row.count() == 1
        assert row.locator("td.batches").inner_text() == "3"
        assert "UTC" in row.locator("td.last-batch").inner_text()
        assert "live_people" in row.inner_text() and f"file:{out}" in row.locator("td.sinks").inner_text()
        assert row.locator("td.sources").inner_text() == f"file:{src}"
        page.screenshot(path=str(ARTIFACTS / "streams.png"), full_page=True)
        row.locator(f'a[title="file:{out}"]').click()
        ready(page)
        assert f"file:{out}" in page.inner_text("h2")
    finally:
        srv.stop()


def test_hover_shows_paths_and_a_dataset_box_expands_to_its_schema(served, page):
    start = (ds(served, "clean/customers"), "email")
    page.goto(col_url(served, *start, "direction=both&directOnly=false"))
    ready(page)
    pick = "window.lineageGraph.nodes('[column]').filter(n => n.data('column') === 'email_plain')[0]"
    page.evaluate(f"void {pick}.emit('mouseover')")
    assert page.evaluate("window.lineageGraph.nodes('.hl[column]').length") > 2
    assert page.evaluate("window.lineageGraph.elements('.dim').length") > 0
    page.evaluate(f"void {pick}.emit('mouseout')")
    assert page.evaluate("window.lineageGraph.elements('.dim, .hl').length") == 0
    # a click keeps its highlight while the pointer moves over other columns
    page.evaluate(f"void {pick}.emit('tap')")
    other = "window.lineageGraph.nodes('[column]').filter(n => n.data('column') === 'email_hash')[0]"
    page.evaluate(f"void {other}.emit('mouseover')")
    assert page.evaluate(f"{other}.hasClass('dim')") and page.evaluate(f"{pick}.hasClass('sel')")
    page.evaluate("void window.lineageGraph.emit('tap')")

    raw = ds(served, "raw/customers")
    box = f"window.lineageGraph.getElementById({json.dumps('ds:' + raw)})"
    shown = set(page.evaluate(f"columnsOf({box}).map(n => n.data('column'))"))
    schema = [c["name"] for c in api(served, "/api/schema", dataset=raw)["columns"]]
    assert shown < set(schema), (shown, schema)
    page.evaluate(f"void {box}.emit('tap')")
    page.wait_for_function(f"columnsOf({box}).filter('.extra').length > 0")
    extra = page.evaluate(f"columnsOf({box}).filter('.extra').map(n => n.data('column'))")
    assert extra == [c for c in schema if c not in shown]  # the rest, in schema order
    page.screenshot(path=str(ARTIFACTS / "column-expanded.png"), full_page=True)
    page.evaluate(f"void {box}.emit('tap')")
    page.wait_for_function(f"columnsOf({box}).filter('.extra').length === 0")
    assert set(page.evaluate(f"columnsOf({box}).map(n => n.data('column'))")) == shown


# ---------------------------------------------------------------- the retail pipeline (four applications)

def retail_col(srv, dataset: str, column: str, query: str = "") -> str:
    return col_url(srv, dataset, column, query)


def test_box_titles_and_edge_labels_stay_clear_and_readable(retail, page):
    """Long catalog names: box titles apart from each other and from other boxes, edge labels off titles,
    columns and each other, every label drawn at READABLE_PX or more."""
    views = [(WH + "fact_order_lines", "net_revenue_eur", "direction=both&directOnly=false"),
             (WH + "customer_ltv", "ltv_eur", "direction=backward&directOnly=false"),
             (WH + "customers_clean", "email", "direction=both&directOnly=false")]
    for dataset, column, query in views:
        page.goto(retail_col(retail, dataset, column, query))
        ready(page)
        geo = page.evaluate(GEOMETRY)
        assert clashes(geo) == [], (dataset, column)
        drawn = [x["px"] for x in geo["boxes"] + geo["columns"] + geo["labels"]]
        assert min(drawn) >= READABLE_PX - 0.01, (dataset, column, min(drawn))
        assert len(geo["labels"]) >= 0.8 * geo["edges"]  # labels are kept apart, not dropped
        # the session catalog is left out of box titles (the full name is on hover and in the table)
        titles = {b["label"] for b in geo["boxes"]}
        assert "warehouse.fact_order_lines" in titles and not any(t.startswith("spark_catalog.") for t in titles)
    page.screenshot(path=str(ARTIFACTS / "retail-titles.png"))


def test_expanding_a_box_makes_room_below_it_and_keeps_it_in_view(retail, page):
    page.goto(retail_col(retail, WH + "customer_ltv", "ltv_eur", "direction=backward&directOnly=false"))
    ready(page)
    before = page.evaluate(GEOMETRY)
    for name in ("orders_clean", "fact_order_lines"):  # one has a box under it, one is taller than the frame
        box = f"window.lineageGraph.getElementById({json.dumps('ds:' + WH + name)})"
        schema = [c["name"] for c in api(retail, "/api/schema", dataset=WH + name)["columns"]]
        page.evaluate(f"void {box}.emit('tap')")
        page.wait_for_function(f"columnsOf({box}).filter('.extra').length > 0")
        geo = page.evaluate(GEOMETRY)
        assert clashes(geo) == [], name
        mine = [c for c in geo["columns"] if c["parent"] == "ds:" + WH + name]
        assert len(mine) == len(schema)
        others = [c for c in geo["columns"] if c["parent"] != "ds:" + WH + name]
        assert not [(c["column"], o["id"]) for c in mine for o in others if overlap(c["box"], o["box"])]
        frame = geo["frame"]
        off = [c["column"] for c in mine if c["box"]["x1"] < 0 or c["box"]["y1"] < 0
               or c["box"]["x2"] > frame["w"] or c["box"]["y2"] > frame["h"]]
        assert off == [], f"{name}: {off} drawn outside the frame"
        assert min(c["px"] for c in mine) >= READABLE_PX - 0.01
        page.screenshot(path=str(ARTIFACTS / f"retail-expanded-{name}.png"))
        page.evaluate(f"void {box}.emit('tap')")
        page.wait_for_function(f"columnsOf({box}).filter('.extra').length === 0")
    # collapsed again, every column is back where the layout put it
    model = "window.lineageGraph.nodes('[column]').map(n => [n.id(), Math.round(n.position('x')), Math.round(n.position('y'))])"
    page.goto(retail_col(retail, WH + "customer_ltv", "ltv_eur", "direction=backward&directOnly=false"))
    ready(page)
    assert len(before["columns"]) == page.evaluate("window.lineageGraph.nodes('[column]').length")
    first = page.evaluate(model)
    box = f"window.lineageGraph.getElementById({json.dumps('ds:' + WH + 'orders_clean')})"
    page.evaluate(f"void {box}.emit('tap')")
    page.wait_for_function(f"columnsOf({box}).filter('.extra').length > 0")
    page.evaluate(f"void {box}.emit('tap')")
    page.wait_for_function(f"columnsOf({box}).filter('.extra').length === 0")
    assert page.evaluate(model) == first


def test_fit_stops_at_readable_labels_and_the_minimap_shows_the_rest(retail, page):
    start = (f"file:{retail.out / 'raw' / 'orders.csv'}", "status")
    page.goto(retail_col(retail, *start, "direction=both&directOnly=false"))
    ready(page)
    for _ in range(6):
        page.click("#zoom-out")
    assert page.evaluate("window.lineageGraph.zoom()") * 11 < READABLE_PX  # the user may look at the shape
    page.click("#zoom-fit")
    geo = page.evaluate(GEOMETRY)
    drawn = [x["px"] for x in geo["boxes"] + geo["columns"] + geo["labels"]]
    assert min(drawn) >= READABLE_PX - 0.01, min(drawn)
    assert page.is_visible("#minimap") and page.is_visible("#minimap-view")
    # the start column is in view after fit
    at = page.evaluate("window.lineageGraph.nodes('[start = 1]').renderedBoundingBox()")
    assert 0 <= at["x1"] and at["x2"] <= geo["frame"]["w"] and 0 <= at["y1"] and at["y2"] <= geo["frame"]["h"]
    # the minimap moves the view: a click on its far corner pans there
    pan = page.evaluate("({...window.lineageGraph.pan()})")
    mm = page.locator("#minimap canvas").bounding_box()
    page.mouse.click(mm["x"] + mm["width"] - 6, mm["y"] + mm["height"] - 6)
    page.wait_for_function(f"window.lineageGraph.pan().x !== {pan['x']} || window.lineageGraph.pan().y !== {pan['y']}")


#: Records, at the first frame of each graph drawn, the ids of the elements in it (``window.firstFrame``).
FIRST_FRAME = """Object.defineProperty(window, 'lineageGraph', {configurable: true, get() { return this.graph_; },
  set(cy) { this.graph_ = cy; if (cy) cy.one('render', () => { window.firstFrame = cy.elements().map(x => x.id()); }); }});"""


def test_a_graph_larger_than_its_view_draws_what_is_in_view_first_then_the_rest(page, tmp_path):
    """Every element in view is in the first frame; the rest follows unasked, and the graph is then the payload's."""
    from bench.server_bench import synthetic_graph
    from lineage_listener.cli import html

    payload = synthetic_graph(200)  # 200 columns in 14 layers: far wider than the frame at a readable size
    out = tmp_path / "large.html"
    out.write_text(html.page(payload), encoding="utf-8")
    page.add_init_script(FIRST_FRAME)
    page.goto(out.as_uri())
    page.wait_for_function("window.lineageGraph && window.firstFrame && !window.lineageGraph.scratch('later')")
    first, in_view = page.evaluate("""(() => { const cy = window.lineageGraph, v = cy.extent();
      const meets = x => { const b = x.boundingBox(); return b.x2 >= v.x1 && b.x1 <= v.x2 && b.y2 >= v.y1 && b.y1 <= v.y2; };
      return [window.firstFrame, cy.elements().filter(meets).map(x => x.id())]; })()""")
    assert in_view and set(in_view) <= set(first)
    assert len(first) < page.evaluate("window.lineageGraph.elements().length")  # some of it came after
    assert graph(page) == api_graph(payload)
    # the side panel counts the start's paths on the whole graph
    start = (payload["start"]["dataset"], payload["start"]["column"])
    up = reach(graph(page)[1], start, 0)
    assert page.inner_text("#picked-paths").startswith(f"{len(up)} columns upstream")


def test_a_graph_page_starts_at_its_top_with_frame_and_minimap_on_screen(retail, page):
    page.goto(f"{retail.url}/#/search?q=e&limit=500")  # a long list
    ready(page)
    assert page.evaluate("document.documentElement.scrollHeight") > 900 + 500
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    page.wait_for_function("window.scrollY > 500")
    target = (f"file:{retail.out / 'raw' / 'orders.csv'}", "status")
    page.evaluate("h => { location.hash = h; }", retail_col(retail, *target, "direction=both&directOnly=false").split("#", 1)[1])
    ready(page)
    assert page.evaluate("window.scrollY") == 0
    header, search = page.locator("header").bounding_box(), page.locator("#search").bounding_box()
    assert header["y"] == 0 and search["y"] >= 0
    frame, minimap = page.locator("#graph").bounding_box(), page.locator("#minimap").bounding_box()
    assert page.is_visible("#minimap")
    assert frame["y"] + frame["height"] <= 900 and minimap["y"] + minimap["height"] <= 900
    assert frame["height"] >= 360
    page.screenshot(path=str(ARTIFACTS / "retail-graph-page.png"))


#: Counted nouns the pages print, each wrong with the other number ("1 columns", "2 query").
NOUNS = ("column", "dataset", "edge", "link", "hop", "run", "stream", "application", "copy", "unmasked copy",
         "query", "batch")


def bad_plurals(text: str) -> list[str]:
    """Counts whose noun does not agree with the number, and plurals like "querys"."""
    def plural(word: str) -> str:
        return word[:-1] + "ies" if word.endswith("y") else word + ("es" if word.endswith("ch") else "s")
    out = re.findall(r"\b\w+[^aeiou\W]ys\b", text)
    for noun in NOUNS:
        out += re.findall(rf"(?<![\d,.])\b1 {plural(noun)}\b", text)
        out += [m for m in re.findall(rf"\b(\d[\d,]*) {noun}\b(?!s)", text) if m != "1"]
    return out


def test_counts_agree_with_their_nouns_on_every_page(retail, page):
    runs = api(retail, "/api/browse/runs")["rows"]
    fact = next(r for r in runs if r["app_name"] == "retail_fact")
    ingest = next(r for r in runs if r["app_name"] == "retail_ingest")
    assert fact["queries"] == 1 and ingest["queries"] == 2
    email = (WH + "customers_clean", "email")
    pages = ["#/", "#/runs", "#/streams", f"#/run/{fact['run_id']}", f"#/run/{ingest['run_id']}", "#/search?q=e",
             f"#/dataset/{WH}customer_ltv", f"#/overview/{WH}customer_ltv",
             retail_col(retail, *email, "direction=both&directOnly=false").split("#", 1)[1],
             f"#/impact/{WH}customers_clean/email"]
    seen = ""
    for h in pages:
        page.goto(f"{retail.url}/{h if h.startswith('#') else '#' + h}")
        ready(page)
        page.fill("#search", "custo")  # the suggestions count too
        page.wait_for_selector("#suggestions:not([hidden]) a")
        text = page.inner_text("body")
        assert bad_plurals(text) == [], h
        seen += text
    assert "2 queries" in seen and "1 query" in seen and "4 runs" in seen


def test_a_spark_sql_write_shows_its_sql_on_the_run_page(retail, page):
    """The fact table is written by ``spark.sql("CREATE TABLE ... AS SELECT ...")``: the store has its text
    and the run page shows it."""
    run = next(r for r in api(retail, "/api/browse/runs")["rows"] if r["app_name"] == "retail_fact")
    [write] = [q for q in api(retail, f"/api/runs/{run['run_id']}")["queries"]
               if q["target_dataset"] == WH + "fact_order_lines"]
    assert write["sql_text"] and write["sql_text"].strip().startswith("CREATE TABLE warehouse.fact_order_lines")
    page.goto(f"{retail.url}/#/run/{urllib.parse.quote(run['run_id'], safe='')}")
    ready(page)
    row = page.locator("#queries tbody tr", has=page.locator(f"a[title='{WH}fact_order_lines']"))
    assert "not from SQL" not in row.inner_text()
    assert "JOIN warehouse.customers_clean c ON o.customer_id = c.customer_id" in row.locator("pre").inner_text()
    # DataFrame writes stay "not from SQL"
    ingest = next(r for r in api(retail, "/api/browse/runs")["rows"] if r["app_name"] == "retail_ingest")
    assert all(q["sql_text"] is None for q in api(retail, f"/api/runs/{ingest['run_id']}")["queries"])


def typos(q: str) -> int:
    """Edits a fuzzy match may make in ``q``, by the search's own rule (docs/reference/rest.md)."""
    return 0 if len(q) < 4 or any(c.isdigit() for c in q) else 1 if len(q) < 7 else 2


def match_kind(name: str, q: str) -> str | None:
    """How ``name`` should match ``q`` by the search's own definition, computed here independently."""
    n, q = name.lower(), q.lower()
    short = n.rsplit("/", 1)[-1] if "/" in n else n.rsplit(".", 1)[-1]
    if q in (n, short):
        return "exact"
    if short.startswith(q) or n.startswith(q):
        return "prefix"
    if q in n:
        return "substring"
    k, asked, words = typos(q), re.findall("[a-z]+", q), re.findall("[a-z]+", n)
    if not k or not asked:
        return None
    edits = 0
    for word in asked:  # every word asked is (or starts) a word of the name, within its own typos
        budget = min(k, typos(word))
        near = [min(damerau(w, word), damerau(w[:len(word)], word)) for w in words if len(w) >= len(word) - budget]
        if not near or min(near) > budget:
            return None
        edits += min(near)
    return "fuzzy" if edits <= k else None


@functools.lru_cache(maxsize=None)
def damerau(a: str, b: str) -> int:
    """Edits between ``a`` and ``b``, a swap of two neighbours counting one (DuckDB's own measure)."""
    import duckdb

    return duckdb.execute("SELECT damerau_levenshtein(?, ?)", [a, b]).fetchone()[0]


def test_search_ranks_exact_prefix_substring_then_fuzzy(retail, page):
    every = api(retail, "/api/search", what="datasets", limit=500)["datasets"]
    columns = {(c["dataset"], c["column"]) for c in api(retail, "/api/search", what="columns", limit=500)["columns"]}
    order = ["exact", "prefix", "substring", "fuzzy"]
    for q in ("email", "cust", "custmer", "emial", "ltv", "fact_order_lines", "orders", "custmer_id", "net_revnue",
              "fact_ordr_lines"):
        body = api(retail, "/api/search", q=q, limit=500)
        for kind, rows, key in (("datasets", body["datasets"], "dataset"), ("columns", body["columns"], "column")):
            got = [(r[key], r["match"]) for r in rows]
            assert all(m == match_kind(name, q) for name, m in got), (q, got)
            assert [order.index(m) for _, m in got] == sorted(order.index(m) for _, m in got), (q, got)
        expect_ds = {d["dataset"] for d in every if match_kind(d["dataset"], q)}
        assert {r["dataset"] for r in body["datasets"]} == expect_ds and body["datasets_total"] == len(expect_ds)
        expect_cols = {c for c in columns if match_kind(c[1], q)}
        assert {(r["dataset"], r["column"]) for r in body["columns"]} == expect_cols, q
    found = api(retail, "/api/search", q="custmer", limit=500)
    assert {d["dataset"] for d in found["datasets"]} >= {WH + "customers_clean", WH + "customer_ltv"}
    assert {c["column"] for c in found["columns"]} == {"customer_id"}
    # one typo in a name of several words still finds it
    assert {c["column"] for c in api(retail, "/api/search", q="custmer_id", limit=500)["columns"]} == {"customer_id"}
    assert {c["column"] for c in api(retail, "/api/search", q="net_revnue", limit=500)["columns"]} == {"net_revenue_eur"}
    # in the search box: the typo still finds them, marked as similar names
    page.goto(retail.url + "/")
    ready(page)
    page.fill("#search", "custmer")
    page.wait_for_selector("#suggestions:not([hidden]) a")
    shown = page.locator("#suggestions a").all_inner_texts()
    assert any("customer_id" in s for s in shown) and any(WH + "customers_clean" in s for s in shown)
    assert page.locator("#suggestions .similar").count() == len(shown) - 1  # all but the "all ... matching" line
    page.press("#search", "Enter")
    ready(page)
    assert page.inner_text("#columns-count") == f"{found['columns_total']} columns"
    page.fill("#search", "net_revnue")
    page.wait_for_function("[...document.querySelectorAll('#suggestions a')].some(a => a.innerText.includes('net_revenue_eur'))")


def test_the_graph_pages_take_their_time_window_from_the_url(retail, page):
    t = retail.times
    start = (WH + "customers_clean", "email")
    since = t["retail_exports"].started.isoformat(timespec="seconds")
    every = lineage_api(retail, *start, direction="forward", directOnly="false")
    late = lineage_api(retail, *start, direction="forward", directOnly="false", start=since)
    assert len(late["nodes"]) < len(every["nodes"])  # the window matters here
    asked = []
    page.on("request", lambda r: asked.append(urllib.parse.unquote(r.url)))
    page.goto(retail_col(retail, *start, f"direction=forward&directOnly=false&from={since}"))
    ready(page)
    assert page.input_value("#from") == since
    assert any("/lineage?" in u and f"start={since}" in u for u in asked)
    assert graph(page) == api_graph(late)
    assert red(page) == unmasked_copies(late)  # the colours are the windowed answer's own
    # ages, the form's own words, and the API's names all fill the fields
    for query, field, value in (("from=7d", "from", "7d"), ("to=2000-01-01", "to", "2000-01-01"),
                                ("start=7d", "from", "7d"), ("since=30d", "from", "30d"), ("until=1h", "to", "1h")):
        page.goto(retail_col(retail, *start, query))
        ready(page)
        assert page.input_value(f"#{field}") == value, query
    # submitting the form keeps the window in the URL in the form's words
    page.fill("#from", "2d")
    page.click("#apply")
    page.wait_for_function("location.hash.includes('from=2d')")
    ready(page)
    assert page.input_value("#from") == "2d"
    # a bad value says so in its field
    page.goto(retail_col(retail, *start, "from=yesterday-ish"))
    ready(page)
    assert page.get_attribute("#from", "aria-invalid") == "true"
    assert page.inner_text("#from-error").startswith("not a time: use an ISO date")
    assert page.is_visible("#from-error") and page.is_visible("#controls")
    # the impact page too
    page.goto(f"{retail.url}/#/impact/{urllib.parse.quote(start[0], safe='')}/email?from={since}")
    ready(page)
    assert page.input_value("#from") == since
    report = api(retail, "/api/impact", dataset=start[0], column="email", since=since)
    assert page.locator("#impact-table tbody tr").count() == len(report["downstream"])
    assert len(report["downstream"]) < len(api(retail, "/api/impact", dataset=start[0], column="email")["downstream"])


def test_a_window_that_leaves_nothing_says_what_lies_outside_it(retail, page, tmp_path):
    """The API's ``window.outside`` message is shown on the graph page, the impact page and in the html
    export, with "0 copies"; a window that leaves some steps out keeps what it has and says the rest."""
    start = (WH + "customers_clean", "email")
    until = retail.times["retail_fact"].started.isoformat(timespec="seconds")  # before anything read the column
    body = lineage_api(retail, *start, direction="forward", directOnly="false", end=until)
    report = api(retail, "/api/impact", dataset=start[0], column=start[1], until=until)
    assert body["edges"] == [] and report["downstream"] == report["influenced"] == []
    message = body["window"]["outside"]["message"]
    assert message and report["window"]["outside"]["message"] == message
    page.goto(retail_col(retail, *start, f"direction=forward&directOnly=false&to={until}"))
    ready(page)
    assert page.inner_text("#window-note") == message
    assert page.inner_text("#copies-count") == "0 copies"
    page.goto(f"{retail.url}/#/impact/{urllib.parse.quote(start[0], safe='')}/email?to={until}")
    ready(page)
    assert page.inner_text("#window-note") == message
    assert page.inner_text("#n-copies") == "0 copies" and page.locator("#alarm").count() == 0
    assert page.locator("#impact-table tbody tr:not(.empty), #influenced-table tbody tr:not(.empty)").count() == 0
    # empty tables say so, and "0 unmasked" is no alarm
    assert page.inner_text("#impact-table tbody tr.empty") == "no column holds a copy of it"
    assert page.inner_text("#influenced-table tbody tr.empty") == "no column is only influenced by it"
    assert page.get_attribute("#n-unmasked", "class") == "" and page.evaluate(
        "getComputedStyle(document.getElementById('n-unmasked')).color") != "rgb(192, 57, 43)"
    # the html export says it too
    open_html(page, retail.store, start, tmp_path / "empty.html", "--direction", "forward", "--until", until)
    assert page.inner_text("#window-note") == message
    assert page.inner_text("#copies-count") == "0 copies"
    # a window that leaves later steps out: what it kept, and what lies outside it
    raw = (f"file:{retail.out / 'raw' / 'customers.csv'}", "email")
    until = retail.times["retail_marts"].started.isoformat(timespec="seconds")
    report = api(retail, "/api/impact", dataset=raw[0], column=raw[1], until=until)
    assert report["downstream"] and report["window"]["outside"]["message"]
    page.goto(f"{retail.url}/#/impact/{urllib.parse.quote(raw[0], safe='')}/email?to={until}")
    ready(page)
    assert page.inner_text("#window-note") == report["window"]["outside"]["message"]
    assert page.locator("#impact-table tbody tr").count() == len(report["downstream"])
    # a window that keeps everything has no notice
    page.goto(retail_col(retail, *start, "direction=forward&directOnly=false"))
    ready(page)
    assert page.locator("#window-note").count() == 0


# ---------------------------------------------------------------- copies and influence, masking, time windows
RED, RED_FILL = "rgb(192,57,43)", "rgb(251,213,208)"


def red(pg) -> set:
    """The columns the drawn graph fills red (an unmasked copy; a hovered or picked column keeps its fill)."""
    return set(map(tuple, pg.evaluate(f"""window.lineageGraph.nodes('[column]')
        .filter(n => n.style('background-color') === '{RED_FILL}').map(n => [n.data('dataset'), n.data('column')])""")))


def unmasked_copies(body: dict) -> set:
    """A forward graph payload's unmasked copies written in its window (docs/reference/semantics.md)."""
    return {(n["dataset"], n["column"]) for n in body["nodes"]
            if n.get("reach") == "copy" and n.get("masking") == "unmasked" and not n.get("before_window")}


def impact_report(srv, dataset: str, column: str, **window) -> dict:
    """``reports.impact`` on the served store, in this process."""
    import lineage_listener
    from lineage_listener.query import reports

    return reports.impact(lineage_listener.open_store(str(srv.store)), dataset, column, **window)


def hover(pg, dataset: str, column: str) -> str:
    """Move the pointer onto a drawn column (centred first) and return its tooltip; the pointer then leaves
    the graph (its paths are no longer lit)."""
    pg.mouse.move(2, 2)  # off the graph: the move onto the column is a move, wherever the last hover ended
    at = pg.evaluate("""([d, c]) => {
        const cy = window.lineageGraph, n = cy.nodes('[column]').filter(x => x.data('dataset') === d && x.data('column') === c)[0];
        cy.center(n);
        const p = n.renderedPosition(), box = cy.container().getBoundingClientRect();
        return {x: box.left + p.x, y: box.top + p.y};
    }""", [dataset, column])
    pg.mouse.move(at["x"], at["y"])
    pg.wait_for_function("([d, c]) => { const t = document.getElementById('tooltip'); "
                         "return !t.hidden && t.textContent.startsWith(d + '\\n[' + c + ']'); }", arg=[dataset, column])
    text = pg.inner_text("#tooltip")
    pg.mouse.move(2, 2)
    return text


def test_impact_page_lists_copies_and_influence_as_the_cli_does(retail, page):
    raw = (f"file:{retail.out / 'raw' / 'customers.csv'}", "email")
    partner = (f"file:{retail.out / 'exports' / 'partner_top_customers.csv'}", "email")
    report = impact_report(retail, *raw)
    cli = json.loads(subprocess.run([sys.executable, "-m", "lineage_listener", "impact", "--store", str(retail.store),
                                     *raw, "--format", "json"], capture_output=True, text=True, check=True,
                                    env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout)
    copies = {(d["dataset"], d["column"], d["masking"]) for d in report["downstream"]}
    assert copies == {(d["dataset"], d["column"], d["masking"]) for d in cli["downstream"]}
    leaks = {(d, c) for d, c, m in copies if m == "unmasked"}
    assert partner in leaks and leaks == {partner, (WH + "customers_clean", "email"), (WH + "fact_order_lines", "email")}
    page.goto(f"{retail.url}/#/impact/{urllib.parse.quote(raw[0], safe='')}/email")
    ready(page)
    # the alarm lists exactly the unmasked copies
    alarm = set(map(tuple, page.evaluate("[...document.querySelectorAll('#alarm-list li')].map(li => [li.dataset.dataset, li.dataset.column])")))
    assert alarm == leaks
    # the copies table: the CLI's copies, unmasked first, then partly masked, then masked
    words = {"unmasked (clear copy)": "unmasked", "partly masked": "partly", "masked on every path": "masked"}
    rows = [r.split("\t") for r in page.locator("#impact-table tbody tr").all_inner_texts()]
    shown = [(r[1], r[2], words[r[3]]) for r in rows]
    assert set(shown) == copies and len(shown) == len(copies)
    order = ["unmasked", "partly", "masked"]
    assert [order.index(m) for *_, m in shown] == sorted(order.index(m) for *_, m in shown)
    # columns it only influenced are in their own table with ``via``, never in the alarm
    influenced = [r.split("\t") for r in page.locator("#influenced-table tbody tr").all_inner_texts()]
    assert {(r[1], r[2], r[3]) for r in influenced} == {(d["dataset"], d["column"], ", ".join(d["via"])) for d in cli["influenced"]}
    assert len(influenced) == len(cli["influenced"])
    for mart in ("customers_masked", "customer_ltv"):
        assert any(r[1] == WH + mart for r in influenced)
        assert not any(d == WH + mart for d, _ in alarm)
    # counts, reads, window
    for status in order:
        assert page.inner_text(f"#n-{status}").startswith(f"{sum(d['masking'] == status for d in cli['downstream'])} ")
    assert page.inner_text("#n-copies") == f"{len(cli['downstream'])} copies"
    assert page.inner_text("#n-influenced") == f"{len(cli['influenced'])} columns influenced only"
    assert page.locator("#reads tbody tr").count() == len(cli["reads"])
    assert "window any time – now" in page.inner_text("#impact-summary") and page.locator("#window-note").count() == 0
    # the graph below: red exactly where the alarm is
    assert red(page) == leaks
    page.screenshot(path=str(ARTIFACTS / "retail-impact.png"), full_page=True)
    with urllib.request.urlopen(retail.url + page.get_attribute("#csv", "href")) as r:
        table = list(csv.DictReader(io.StringIO(r.read().decode())))
    assert {(r["dataset"], r["column"], r["masking"]) for r in table if r["reach"] == "copy"} == copies
    assert {(r["dataset"], r["column"]) for r in table if r["reach"] == "influenced"} == \
        {(d["dataset"], d["column"]) for d in cli["influenced"]}


def test_graphs_colour_copies_and_influence_from_the_payload(retail, page):
    raw = (f"file:{retail.out / 'raw' / 'customers.csv'}", "email")
    body = lineage_api(retail, *raw, direction="forward", directOnly="false")
    leaks = unmasked_copies(body)
    assert leaks == {(d["dataset"], d["column"]) for d in impact_report(retail, *raw)["downstream"] if d["masking"] == "unmasked"}
    page.goto(retail_col(retail, *raw, "direction=forward&directOnly=false"))
    ready(page)
    assert red(page) == leaks
    copies = [n for n in body["nodes"] if n.get("reach") == "copy"]
    counts = {m: sum(n["masking"] == m for n in copies) for m in ("unmasked", "partly", "masked")}
    assert page.inner_text("#copies-count") == (f"{counts['unmasked']} unmasked copies, {counts['partly']} partly masked, "
                                                f"{counts['masked']} masked on every path")
    influenced = [n for n in body["nodes"] if n.get("reach") == "influenced"]
    assert page.inner_text("#influenced-count") == f"{len(influenced)} columns influenced only"
    # influenced columns are neutral and dotted, never red, and say through what on hover
    drawn = page.evaluate("""window.lineageGraph.nodes('[column]').map(n => ({dataset: n.data('dataset'), column: n.data('column'),
        border: n.style('border-style'), colour: n.style('border-color'), fill: n.style('background-color')}))""")
    style = {(d["dataset"], d["column"]): d for d in drawn}
    for n in influenced:
        s = style[(n["dataset"], n["column"])]
        assert s["border"] == "dotted" and RED not in (s["colour"], s["fill"]) and s["fill"] != RED_FILL
    assert all(style[(n["dataset"], n["column"])]["border"] == "solid" for n in copies)
    assert "influenced via group_by" in hover(page, WH + "customer_ltv", "ltv_eur")
    assert "influenced via filter, group_by, join, sort" in hover(page, f"file:{retail.out / 'exports' / 'partner_top_customers.csv'}", "name")
    assert "unmasked copy of the start" in hover(page, WH + "fact_order_lines", "email")
    # red edges carry the values in clear: direct, unmasked, into an unmasked copy
    alarm = page.evaluate("window.lineageGraph.edges('[alarm = 1]').map(e => [e.data('kind'), e.data('masking'), "
                          "e.target().data('dataset'), e.target().data('column')])")
    assert alarm and all(k == "direct" and m == 0 and (d, c) in leaks for k, m, d, c in alarm)
    page.screenshot(path=str(ARTIFACTS / "retail-forward.png"))
    # a column that is copied nowhere, only filtered on: "0 copies", nothing red
    status = (f"file:{retail.out / 'raw' / 'orders.csv'}", "status")
    body = lineage_api(retail, *status, direction="forward", directOnly="false")
    assert len(body["nodes"]) > 10 and {n["reach"] for n in body["nodes"]} == {"start", "influenced"}
    page.goto(retail_col(retail, *status, "direction=forward&directOnly=false"))
    ready(page)
    assert page.inner_text("#copies-count") == "0 copies" and red(page) == set()
    # backward: the columns it is a copy of (direct paths) apart from those that only influenced it
    partner = (f"file:{retail.out / 'exports' / 'partner_top_customers.csv'}", "email")
    body = lineage_api(retail, *partner, direction="backward", directOnly="false")
    sources = {(n["dataset"], n["column"]) for n in body["nodes"] if n.get("reach") == "copy"}
    assert raw in sources and (WH + "customer_ltv", "ltv_eur") not in sources
    page.goto(retail_col(retail, *partner, "direction=backward&directOnly=false"))
    ready(page)
    assert page.inner_text("#sources-count") == f"copied from {len(sources)} columns"
    dotted = set(map(tuple, page.evaluate("window.lineageGraph.nodes('[column]').filter(n => n.style('border-style') === 'dotted')"
                                          ".map(n => [n.data('dataset'), n.data('column')])")))
    assert dotted == {(n["dataset"], n["column"]) for n in body["nodes"] if n.get("reach") == "influenced"}
    assert red(page) == set()
    assert "influenced the start via filter, sort" in hover(page, WH + "customer_ltv", "ltv_eur")


@pytest.mark.parametrize("job", ["retail_fact", "retail_marts"])
def test_a_window_after_the_first_jobs_marks_the_hops_before_it(retail, page, job):
    """A window starting when ``job`` started: the columns written from then on are the start's copies and
    influenced columns; the columns and hops written before it are marked (faded, italic, ○─, legend)."""
    raw = (f"file:{retail.out / 'raw' / 'customers.csv'}", "email")
    since = retail.times[job].started.isoformat(timespec="seconds")
    later = set(JOBS[JOBS.index(job):])
    report = impact_report(retail, *raw, since=since)
    listed = {(d["dataset"], d["column"]) for d in report["downstream"] + report["influenced"]}
    assert listed and all(set(d["applications"]) <= later for d in report["downstream"] + report["influenced"])
    body = lineage_api(retail, *raw, direction="forward", directOnly="false", start=since)
    before = {(n["dataset"], n["column"]) for n in body["nodes"] if n.get("before_window")}
    earlier = {(WH + "customers_clean", "email")} | ({(WH + "fact_order_lines", "email")} if job == "retail_marts" else set())
    assert before == earlier
    page.goto(retail_col(retail, *raw, f"direction=forward&directOnly=false&from={since}"))
    ready(page)
    nodes = page.evaluate("""window.lineageGraph.nodes('[column]').map(n => [n.data('dataset'), n.data('column'), n.data('start'),
                                                                          n.style('font-style')])""")
    assert {(d, c) for d, c, s, _ in nodes if not s and (d, c) not in before} == listed
    assert {(d, c) for d, c, _, f in nodes if f == "italic"} == before
    hops = set(map(tuple, page.evaluate("""window.lineageGraph.edges().filter(e => e.style('source-arrow-shape') === 'circle')
        .map(e => [e.source().data('dataset'), e.source().data('column'), e.target().data('dataset'), e.target().data('column')])""")))
    assert hops == {(e["source"]["dataset"], e["source"]["column"], e["target"]["dataset"], e["target"]["column"])
                    for e in body["edges"] if e["before_window"]} and hops
    assert page.inner_text("#before-count") == f"{len(before)} column{'s' * (len(before) != 1)} written before the window"
    assert "written before the window" in page.inner_text("#legend-before") and page.is_visible("#legend-before")
    assert "written before the window" in hover(page, WH + "customers_clean", "email")
    assert red(page) == {(d["dataset"], d["column"]) for d in report["downstream"] if d["masking"] == "unmasked"}
    page.screenshot(path=str(ARTIFACTS / f"retail-window-{job}.png"))
    # the impact page of the same window: the same copies, the same marks
    page.goto(f"{retail.url}/#/impact/{urllib.parse.quote(raw[0], safe='')}/email?from={since}")
    ready(page)
    alarm = set(map(tuple, page.evaluate("[...document.querySelectorAll('#alarm-list li')].map(li => [li.dataset.dataset, li.dataset.column])")))
    assert alarm == {(d["dataset"], d["column"]) for d in report["downstream"] if d["masking"] == "unmasked"}
    assert page.locator("#impact-table tbody tr, #influenced-table tbody tr").count() == len(listed)
    italic = "window.lineageGraph.nodes('[column]').filter(n => n.style('font-style') === 'italic').map(n => [n.data('dataset'), n.data('column')])"
    assert set(map(tuple, page.evaluate(italic))) == before  # its graph marks the columns written before the window


def test_html_export_draws_copies_and_the_window_as_the_server_does(retail, page, tmp_path):
    raw = (f"file:{retail.out / 'raw' / 'customers.csv'}", "email")
    since = retail.times["retail_marts"].started.isoformat(timespec="seconds")
    seen = "window.lineageGraph.nodes('[column]').map(n => [n.data('dataset'), n.data('column'), n.data('status'), n.data('reach'), n.data('before')])"
    page.goto(retail_col(retail, *raw, f"direction=forward&directOnly=false&from={since}"))
    ready(page)
    served = (sorted(map(tuple, page.evaluate(seen))), red(page), page.inner_text("#copies-count"), page.inner_text("#before-count"))
    open_html(page, retail.store, raw, tmp_path / "forward.html", "--direction", "forward", "--since", since)
    assert (sorted(map(tuple, page.evaluate(seen))), red(page), page.inner_text("#copies-count"),
            page.inner_text("#before-count")) == served
    assert served[1] == {(f"file:{retail.out / 'exports' / 'partner_top_customers.csv'}", "email")}
    assert page.is_visible("#legend-before")
    page.screenshot(path=str(ARTIFACTS / "retail-html-export.png"))


# ---------------------------------------------------------------- nothing hidden: side panel, marks, overlays
POLICY = """rules:
  - name: no-clear-pii-in-exports
    kind: forbid
    label: pii
    datasets: ["file:/**/exports/**"]
"""


def post(srv, path: str, body: dict) -> int:
    req = urllib.request.Request(f"{srv.url}{path}", json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req) as r:
        return r.status


@pytest.fixture(scope="module")
def governed(retail, tmp_path_factory):
    """The retail store with the raw customers' email and phone labelled PII, served with a policy that forbids
    clear PII in exports (the partner CSV's email breaks it)."""
    from conftest import wait_for

    tmp = tmp_path_factory.mktemp("governed")
    store = tmp / "lineage.duckdb"
    shutil.copy(retail.store, store)
    (tmp / "policy.yml").write_text(POLICY)
    srv = Server(store, extra_args=["--policy", str(tmp / "policy.yml")], output=tmp / "serve.log").start()
    srv.out, srv.times = retail.out, retail.times
    raw = f"file:{retail.out / 'raw' / 'customers.csv'}"
    for column, label in (("email", "pii.email"), ("phone", "pii.phone")):
        assert post(srv, "/api/labels", {"dataset": raw, "column": column, "label": label}) == 200

    def settled() -> bool:
        v = api(srv, "/api/violations")
        return bool(v["violations"]) and not v["watch"]["waiting"]
    assert wait_for(settled, 120)
    yield srv
    srv.stop()


def nid(dataset: str, column: str) -> str:
    """A column node's id as graph.js makes it (JSON, no spaces), as a JavaScript string literal."""
    return json.dumps(json.dumps([dataset, column], separators=(",", ":")))


def page_rect(pg, selector: str) -> dict:
    b = pg.locator(selector).bounding_box()
    return {"x1": b["x"], "y1": b["y"], "x2": b["x"] + b["width"], "y2": b["y"] + b["height"]}


#: Every drawn node's box in page pixels (the canvas's offset added to its rendered box).
NODES_ON_PAGE = """(() => { const cy = window.lineageGraph, c = cy.container().getBoundingClientRect();
  return cy.nodes().filter(n => n.visible()).map(n => { const b = n.renderedBoundingBox({includeLabels: true});
    return {id: n.id(), x1: b.x1 + c.left, x2: b.x2 + c.left, y1: b.y1 + c.top, y2: b.y2 + c.top}; }); })()"""


def test_nothing_covers_the_graph_and_the_side_panel_names_labels_rules_and_why(governed, page):
    """The issue's view: nothing drawn over a node; the column's labels, the rules it breaks and why, in a side
    panel beside the graph on the first screen; the marks explained by the legend, the copy border kept."""
    fact = (WH + "fact_order_lines", "email")
    partner = (f"file:{governed.out / 'exports' / 'partner_top_customers.csv'}", "email")
    for start, query in ((fact, "direction=both&directOnly=false"),
                         ((f"file:{governed.out / 'raw' / 'customers.csv'}", "email"), "direction=forward&directOnly=false")):
        page.goto(col_url(governed, *start, query))
        ready(page)
        page.wait_for_function("document.querySelector('#labels-panel[data-ready]')")
        # the canvas clips what lies beyond its edge, and nothing is laid over it: no node can be covered
        chrome = {s: page_rect(page, s) for s in ("#minimap", ".graph-tools", "#graph-side", "#zoom-fit", "#show-jobs", "header")}
        frame = page_rect(page, "#graph")
        assert [s for s, r in chrome.items() if overlap(r, frame)] == []
        assert any(overlap(n, frame) for n in page.evaluate(NODES_ON_PAGE))
        # the side panel is beside the graph, on the first screen, and shows the page's column
        side = page_rect(page, "#graph-side")
        assert side["x1"] >= frame["x2"] and side["y1"] < 900 and page.inner_text("#picked") == start[1]
    # the start (fact email) carries pii.email, and the panel says why, hop by hop; it breaks no rule
    page.goto(col_url(governed, *fact, "direction=both&directOnly=false"))
    ready(page)
    page.wait_for_function("document.querySelector('#labels-panel[data-ready]')")
    assert "why is this pii.email?" in page.inner_text("#labels-panel") and page.locator("#column-violations").count() == 0
    # the partner's email on the raw email's graph: a clear copy (red border), labelled, breaking the rule (red halo)
    page.goto(col_url(governed, f"file:{governed.out / 'raw' / 'customers.csv'}", "email", "direction=forward&directOnly=false"))
    ready(page)
    node = page.evaluate("""([d, c]) => { const n = window.lineageGraph.nodes('[column]').filter(n => n.data('dataset') === d && n.data('column') === c)[0];
        return {label: n.data('label'), labels: n.data('labels'), border: n.style('border-color'), outline: n.style('outline-color'),
                style: n.style('outline-style')}; }""", list(partner))
    assert node["labels"] == "pii.email" and node["label"] == "⚠ email [pii.email]"
    assert node["border"] == RED and node["outline"] == RED and node["style"] == "dashed"
    # a click on it: the rule it breaks, by name, with its path, and why it is PII
    violation = next(v for v in api(governed, "/api/violations")["violations"] if (v["dataset"], v["column"]) == partner)
    page.evaluate("([d, c]) => void window.lineageGraph.nodes('[column]').filter(n => n.data('dataset') === d && n.data('column') === c)[0].emit('tap')",
                  list(partner))
    page.wait_for_function(f"document.querySelector('#labels-panel[data-ready]') && "
                           f"document.querySelector('#labels-panel').dataset.ready === {nid(*partner)}")
    rules = page.locator("#violations-list li").all_inner_texts()
    assert len(rules) == 1 and violation["rule"] in rules[0] and violation["message"] in rules[0]
    assert "why is this pii.email?" in page.inner_text("#labels-panel")
    page.screenshot(path=str(ARTIFACTS / "governed-panel.png"))
    page.goto(col_url(governed, *fact, "direction=both&directOnly=false"))
    ready(page)
    clean = page.evaluate("""(d) => { const n = window.lineageGraph.nodes('[column]').filter(n => n.data('dataset') === d && n.data('column') === 'email')[0];
        return [n.style('border-color'), n.style('outline-color')]; }""", WH + "customers_clean")
    assert clean == ["rgb(44,111,173)", "rgb(142,68,173)"]  # blue: a copy (the legend's promise); purple: labelled
    legend = page.inner_text("#legend")
    assert "purple halo" in legend and "carries a label" in legend and "red dashed halo" in legend and "breaks a policy rule" in legend
    # a box opened to its schema: its other columns keep their label marks
    box = f"window.lineageGraph.getElementById({json.dumps('ds:' + WH + 'customers_clean')})"
    page.evaluate(f"void {box}.emit('tap')")
    page.wait_for_function(f"columnsOf({box}).filter('.extra').length > 0")
    phone = page.evaluate(f"columnsOf({box}).filter(n => n.data('column') === 'phone').map(n => [n.data('labels'), n.data('label')])")
    assert phone == [["pii.phone", "phone [pii.phone]"]]


def test_the_dataset_graph_marks_pii_and_violations(governed, page):
    raw, partner = f"file:{governed.out / 'raw' / 'customers.csv'}", f"file:{governed.out / 'exports' / 'partner_top_customers.csv'}"
    page.goto(f"{governed.url}/#/overview/{urllib.parse.quote(WH + 'customers_clean', safe='')}")
    ready(page)
    marks = dict(page.evaluate("window.lineageGraph.nodes().map(n => [n.id(), [n.data('labels') || '', n.data('violations'), n.data('label')]])"))
    assert marks[raw][:2] == ["pii.email,pii.phone", 0] and marks[partner][0] == "pii.email" and marks[partner][1] == 1
    assert marks[partner][2].startswith("⚠ ") and marks[partner][2].endswith("\n[pii.email]")
    assert marks[WH + "customers_masked"][:2] == ["", 0]  # the phone is masked there: no label travels
    assert page.inner_text("#violating-count") == "1 dataset breaking a policy rule"
    page.evaluate(f"void window.lineageGraph.getElementById({json.dumps(partner)}).emit('tap')")
    assert "no-clear-pii-in-exports" in page.inner_text("#selection")
    page.screenshot(path=str(ARTIFACTS / "overview-marks.png"))


# ---------------------------------------------------------------- reading big graphs
def test_edge_labels_where_they_fit_the_rest_on_hover_and_crossings_cut(retail, page):
    status = (f"file:{retail.out / 'raw' / 'orders.csv'}", "status")
    page.goto(retail_col(retail, *status, "direction=both&directOnly=false"))
    ready(page)
    geo = page.evaluate(GEOMETRY)
    assert geo["edges"] > 40 and len(geo["labels"]) >= geo["edges"] / 2 and clashes(geo) == []
    stats = page.evaluate(GRAPH_STATS)
    assert stats["through"] == 0 and stats["labels"] == len(geo["labels"])
    # the layout's own count: its order crosses less than the payload's order would
    unordered = page.evaluate("""(() => { const els = window.lineageGraph.elements().map(el => ({data: {...el.data()}, classes: el.classes().join(' ')}));
        const saved = LAYOUT.sweeps; LAYOUT.sweeps = 0;
        try { const d = arrange(els); return d.crossings; } finally { LAYOUT.sweeps = saved; } })()""")
    assert page.evaluate("window.lineageGraph.scratch('drawing').crossings") < unordered
    # an edge without room for its label shows it while hovered
    hidden = "window.lineageGraph.edges('[show = 0]')[0]"
    assert page.evaluate(f"{hidden}.style('label')") == ""
    page.evaluate(f"void {hidden}.emit('mouseover')")
    assert page.evaluate(f"{hidden}.style('label')") == page.evaluate(f"{hidden}.data('label')") != ""
    page.evaluate(f"void {hidden}.emit('mouseout')")
    # after a box opens, no edge runs through its columns
    page.goto(retail_col(retail, WH + "customer_ltv", "ltv_eur", "direction=backward&directOnly=false"))
    ready(page)
    box = f"window.lineageGraph.getElementById({json.dumps('ds:' + WH + 'fact_order_lines')})"
    page.evaluate(f"void {box}.emit('tap')")
    page.wait_for_function(f"columnsOf({box}).filter('.extra').length > 0")
    assert page.evaluate(GRAPH_STATS)["through"] == 0


def test_jobs_are_drawn_between_datasets_and_link_to_their_runs(retail, page):
    start = (WH + "customer_ltv", "ltv_eur")
    body = lineage_api(retail, *start, direction="backward", directOnly="false")
    page.goto(retail_col(retail, *start, "direction=backward&directOnly=false"))
    ready(page)
    page.check("#show-jobs")
    page.wait_for_function("location.hash.includes('jobs=1') && window.lineageGraph.nodes('.job').length > 0")
    ready(page)
    apps = {(body["queries"][e["query_id"]]["app_name"], e["target"]["dataset"]) for e in body["edges"]}
    jobs = page.evaluate("window.lineageGraph.nodes('.job').map(n => [n.data('label'), n.data('run')])")
    assert sorted(label for label, _ in jobs) == sorted(f"⚙ {app}" for app, _ in apps) and {"⚙ retail_fact", "⚙ retail_marts"} <= {j[0] for j in jobs}
    # every step now runs source -> job -> target, and the steps themselves are hidden
    links = set(map(tuple, page.evaluate("""window.lineageGraph.edges('.job-edge').map(e => [e.source().data('column') ? 'column' : 'job',
                                                                                         e.target().data('column') ? 'column' : 'job'])""")))
    assert links == {("column", "job"), ("job", "column")}
    assert page.evaluate("window.lineageGraph.edges().not('.job-edge').every(e => !e.visible())")
    # a reload keeps them; a click on one opens its run
    page.reload()
    ready(page)
    assert page.is_checked("#show-jobs") and page.evaluate("window.lineageGraph.nodes('.job').length") == len(jobs)
    page.screenshot(path=str(ARTIFACTS / "retail-jobs.png"))
    run = next(r for label, r in jobs if label == "⚙ retail_marts")
    page.evaluate("void window.lineageGraph.nodes('.job').filter(n => n.data('label') === '⚙ retail_marts')[0].emit('tap')")
    page.wait_for_function(f"location.hash === {json.dumps('#/run/' + urllib.parse.quote(run, safe=''))}")
    ready(page)
    assert "retail_marts" in page.inner_text("h2")
    page.go_back()
    ready(page)
    page.uncheck("#show-jobs")
    page.wait_for_function("!location.hash.includes('jobs=1') && window.lineageGraph.nodes('.job').length === 0")
    assert page.evaluate("window.lineageGraph.edges().every(e => e.visible())")


def test_one_more_hop_up_or_downstream_from_any_column(retail, page):
    start = (WH + "fact_order_lines", "email")
    page.goto(retail_col(retail, *start))  # backward, direct edges: customers_clean and raw email
    ready(page)
    assert "depth" not in page.inner_text("#controls")  # no depth to guess: hops instead
    clean = (WH + "customers_clean", "email")
    before = graph(page)[0]
    # hovering a column shows its + handles; the right one adds one hop downstream
    page.evaluate(f"void window.lineageGraph.getElementById({nid(*clean)}).emit('mouseover')")
    assert page.evaluate("window.lineageGraph.nodes('.handle').map(n => n.data('way')).sort()") == ["down", "up"]
    page.evaluate("void window.lineageGraph.getElementById('hop:down').emit('tap')")
    page.wait_for_function(f"window.lineageGraph.nodes('[column]').length > {len(before)}")
    one = lineage_api(retail, *clean, direction="forward", maxLevels="1", directOnly="true")
    nodes = graph(page)[0]
    assert nodes == before | {(n["dataset"], n["column"]) for n in one["nodes"]}
    added = set(map(tuple, page.evaluate("window.lineageGraph.nodes('.explored').map(n => [n.data('dataset'), n.data('column')])")))
    assert added == nodes - before and added
    assert all(page.evaluate("window.lineageGraph.nodes('.explored').map(n => n.data('status') === '' && n.style('border-style') === 'dashed')"))
    # the column and what the hop added are in view
    frame = page.evaluate("({w: window.lineageGraph.width(), h: window.lineageGraph.height()})")
    seen = page.evaluate(f"""window.lineageGraph.nodes('.explored').union(window.lineageGraph.getElementById({nid(*clean)}))
                             .map(n => n.renderedBoundingBox({{includeLabels: false}}))""")
    assert all(b["x1"] >= 0 and b["y1"] >= 0 and b["x2"] <= frame["w"] and b["y2"] <= frame["h"] for b in seen), (seen, frame)
    assert "added downstream of email" in page.inner_text("#graph-note")
    page.screenshot(path=str(ARTIFACTS / "retail-hop.png"))
    # the side panel's buttons do the same, upstream
    raw = (f"file:{retail.out / 'raw' / 'customers.csv'}", "email")
    page.evaluate(f"void window.lineageGraph.getElementById({nid(*raw)}).emit('tap')")
    page.click("#hop-up")
    page.wait_for_function("document.getElementById('graph-note').innerText.includes('upstream of email')")
    assert "nothing more upstream" in page.inner_text("#graph-note")  # a raw file: nothing wrote it


def test_time_presets_and_a_date_picker_keep_the_url_form(retail, page):
    start = (WH + "customers_clean", "email")
    page.goto(retail_col(retail, *start, "direction=forward&directOnly=false"))
    ready(page)
    assert page.input_value("#window-preset") == "" and not page.is_visible("#from")
    page.select_option("#window-preset", "7d")
    page.wait_for_function("location.hash.includes('from=7d')")
    ready(page)
    assert page.input_value("#window-preset") == "7d" and graph(page) == api_graph(
        lineage_api(retail, *start, direction="forward", directOnly="false", start="7d"))
    # a custom range: typed, or picked in a calendar (UTC), into the same URL form
    page.select_option("#window-preset", "custom")
    assert page.is_visible("#from") and page.is_visible("#from-pick") and page.input_value("#from") == "7d"
    since = retail.times["retail_exports"].started.isoformat(timespec="seconds")
    page.fill("#from-pick", since)
    assert page.input_value("#from") == since
    page.click("#apply")
    page.wait_for_function(f"decodeURIComponent(location.hash).includes('from={since}')")
    ready(page)
    assert page.input_value("#window-preset") == "custom" and page.input_value("#from-pick") == since
    assert graph(page) == api_graph(lineage_api(retail, *start, direction="forward", directOnly="false", start=since))
    page.select_option("#window-preset", "")
    page.wait_for_function("!location.hash.includes('from=')")
    ready(page)
    # the impact page has them too
    page.goto(f"{retail.url}/#/impact/{urllib.parse.quote(start[0], safe='')}/email?from=24h")
    ready(page)
    assert page.input_value("#window-preset") == "24h"


def test_edges_a_later_write_replaced_are_drawn_as_history(page, tmp_path):
    """Lineage answers over time; an edge whose target a later write replaced is drawn faded with a bar at
    its end, says so on hover and in the table, naming that write (docs/reference/semantics.md, Current state)."""
    from tests.test_current_state import CLEAN, CLEAR, EXPORT, MASKED, RAW, store_of
    path = store_of(tmp_path, [(1, RAW, CLEAN, CLEAR, "replace"), (2, CLEAN, EXPORT, CLEAR, "replace"),
                               (3, RAW, EXPORT, MASKED, "replace")])
    srv = Server(path).start()
    try:
        body = lineage_api(srv, EXPORT, "email", direction="backward")
        assert {(e["source"]["dataset"], e["target"]["dataset"]) for e in body["edges"] if e.get("history")} == {(CLEAN, EXPORT)}
        page.goto(col_url(srv, EXPORT, "email", "direction=backward"))
        ready(page)
        drawn = page.evaluate("""window.lineageGraph.edges('[history = 1]').map(e => [e.source().data('dataset'),
            e.target().data('dataset'), Number(e.style('opacity')), e.style('target-arrow-shape'), e.data('label')])""")
        assert [(s, t) for s, t, *_ in drawn] == [(CLEAN, EXPORT)]
        _, _, opacity, arrow, label = drawn[0]
        assert opacity < 1 and arrow == "tee" and label.endswith("(history)")
        current = page.evaluate("window.lineageGraph.edges('[history = 0]').map(e => Number(e.style('opacity')))")
        assert len(current) == 2 and all(o == 1 for o in current)   # raw -> clean and the masked write now
        table = page.locator("#edges-table").text_content()
        assert f"history: replaced by app-3-{EXPORT}:1" in table and table.count("history:") == 1
        assert "a later write replaced the target" in page.locator("#legend-history").text_content()
    finally:
        srv.stop()


def test_influence_not_followed_is_not_counted_as_none(retail, page):
    start = (WH + "customer_ltv", "ltv_eur")
    page.goto(retail_col(retail, *start))  # backward: direct edges only
    ready(page)
    assert page.inner_text("#influencers-count") == "influence upstream not computed (direct edges only)"
    page.goto(retail_col(retail, *start, "direction=backward&directOnly=false"))
    ready(page)
    influencers = sum(n.get("reach") == "influenced" for n in lineage_api(retail, *start, directOnly="false")["nodes"])
    assert page.inner_text("#influencers-count") == f"influenced by {influencers} columns" and influencers > 0


def test_back_returns_to_where_the_reader_was(retail, page):
    page.goto(f"{retail.url}/#/search?q=e&limit=500")
    ready(page)
    page.evaluate("window.scrollTo(0, 700)")
    page.wait_for_function("window.scrollY === 700")
    link = page.evaluate("""(() => { const a = [...document.querySelectorAll('#column-results a.column')]
        .find(a => a.getBoundingClientRect().top > 100 && a.getBoundingClientRect().bottom < 800); a.click(); return a.getAttribute('href'); })()""")
    page.wait_for_function(f"location.hash === {json.dumps(link)}")
    ready(page)
    assert page.evaluate("window.scrollY") == 0  # a new page starts at its top
    page.go_back()
    ready(page)
    assert page.evaluate("window.scrollY") == 700
    page.go_forward()
    ready(page)
    assert page.evaluate("window.scrollY") == 0
    # an empty table says so
    page.goto(f"{retail.url}/#/streams")
    ready(page)
    assert page.inner_text("#streams tbody") == "no stream captured yet"


def test_layout_examples_hold(served, page):
    """The examples in layout.js's comments (``>>> expression   // result``), evaluated in the browser."""
    page.goto(served.url + "/")
    ready(page)
    text = (ROOT / "lineage_listener" / "server" / "static" / "layout.js").read_text()
    examples = re.findall(r"^ \* >>> (.*?)\s+// (.*)$", text, re.M)
    assert len(examples) >= 4
    for expr, result in examples:
        assert page.evaluate(f"JSON.stringify({expr})") == page.evaluate(f"JSON.stringify({result})"), expr


def test_every_page_works_under_a_strict_content_security_policy(governed, page):
    """No inline script or style anywhere: each page drawn with a CSP allowing only the server's own files
    reports no violation and no console error."""
    policy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'"

    def with_csp(route):
        response = route.fetch()
        route.fulfill(response=response, headers={**response.headers, "content-security-policy": policy})
    page.route(f"{governed.url}/", with_csp)
    problems = []
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.add_init_script("document.addEventListener('securitypolicyviolation', e => console.error('CSP ' + e.violatedDirective + ' ' + e.blockedURI))")
    def drawn() -> None:  # ready(), by polling: a CSP without 'unsafe-eval' refuses wait_for_function's strings
        from conftest import wait_for
        assert wait_for(lambda: page.evaluate("document.body.dataset.view === (location.hash || '#/')"), 60)
    page.goto(governed.url + "/")
    drawn()
    raw = urllib.parse.quote(f"file:{governed.out / 'raw' / 'customers.csv'}", safe="")
    for h in (f"#/column/{raw}/email?direction=forward&directOnly=false&jobs=1", f"#/impact/{raw}/email",
              f"#/overview/{urllib.parse.quote(WH + 'customers_clean', safe='')}", f"#/dataset/{raw}", "#/violations",
              "#/changes", "#/runs", "#/search?q=custmer_id"):
        page.evaluate(f"location.hash = {json.dumps(h)}")
        drawn()
    page.evaluate("void window.lineageGraph && window.lineageGraph.nodes()[0].emit('tap')")
    assert problems == []
