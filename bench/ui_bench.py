"""The UI's graph in headless chromium: draw time, JS heap, label sizes and crossings.

    python bench/ui_bench.py                                   # synthetic graphs of 45, 50, 200 and 500 nodes
    python bench/ui_bench.py --static DIR                      # another copy of server/static (an older commit's)
    python bench/ui_bench.py --store S --graph 'DATASET|COLUMN|QUERY[|EXPAND]' ...   # graphs of a store, served

Synthetic graphs are ``lineage-listener html`` pages of layered graphs (bench/server_bench.py's), opened in
Debian's chromium at 1400x900. Draw: navigation start until the graph is laid out and drawn (median of
``--runs``), and the CPU time the page's main thread spent until it was on screen (from a Chromium trace: on
a busy machine the wall time is mostly waiting for a core). Drawn is the first frame (the page's
``lineage-graph-drawn`` mark: a graph larger than its view draws what is in view first); whole, the time until
the rest of the graph is in it and drawn (the same as drawn for a UI without that mark). Heap: JS heap in use after a forced GC with the graph on screen. Labels: the smallest drawn label
(column, dataset title or edge label) in screen pixels (font size x zoom), at first draw and after "fit".

A store's graphs are the column pages ``#/column/DATASET/COLUMN?QUERY`` of a server on the store (this
checkout's, or ``--static``'s UI, served in this process); EXPAND names a dataset whose box is then opened
to its whole schema and measured again.

Every graph also reports, as drawn: *crossings* (pairs of edges whose drawn curves cross, edges that share
a column left out) and *through* (edges whose curve runs through a column other than its own two ends), and
how many edge labels are drawn.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.server_bench import synthetic_graph  # noqa: E402
from lineage_listener.cli import html  # noqa: E402

LABEL_PX = """(() => { const cy = window.lineageGraph;
  const drawn = cy.nodes().union(cy.edges().filter(e => e.style('label')));
  return Math.min(...drawn.map(x => parseFloat(x.style('font-size')))) * cy.zoom(); })()"""

#: The drawn graph's edges as polylines (bezier curves sampled), and what they cross: ``crossings`` (pairs of
#: edges with no column in common whose lines cross), ``through`` (edges running through a column other than
#: their ends), ``labels`` (edge labels drawn), ``edges``.
GRAPH_STATS = """(() => {
  const cy = window.lineageGraph;
  const mid = (a, b) => ({x: (a.x + b.x) / 2, y: (a.y + b.y) / 2});
  const quad = (a, c, b, t) => ({x: (1 - t) * (1 - t) * a.x + 2 * t * (1 - t) * c.x + t * t * b.x,
                                 y: (1 - t) * (1 - t) * a.y + 2 * t * (1 - t) * c.y + t * t * b.y});
  const line = e => {
    const s = e.sourceEndpoint(), t = e.targetEndpoint(), pts = [s];
    const cps = e.controlPoints(), seg = e.segmentPoints();
    if (cps && cps.length) {
      let a = s;
      cps.forEach((c, i) => {
        const b = i < cps.length - 1 ? mid(c, cps[i + 1]) : t;
        for (let k = 1; k <= 8; k++) pts.push(quad(a, c, b, k / 8));
        a = b;
      });
    } else {
      if (seg) pts.push(...seg);
      pts.push(t);
    }
    return pts;
  };
  const side = (a, b, c) => Math.sign((b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x));
  const cross = (p, q, r, s) => side(p, q, r) * side(p, q, s) < 0 && side(r, s, p) * side(r, s, q) < 0;
  const box = pts => ({x1: Math.min(...pts.map(p => p.x)), x2: Math.max(...pts.map(p => p.x)),
                       y1: Math.min(...pts.map(p => p.y)), y2: Math.max(...pts.map(p => p.y))});
  const apart = (a, b) => a.x2 < b.x1 || b.x2 < a.x1 || a.y2 < b.y1 || b.y2 < a.y1;
  const edges = cy.edges().filter(e => !e.isLoop() && e.visible()).map(e => {
    const pts = line(e);
    return {e, pts, bb: box(pts), ends: new Set([e.source().id(), e.target().id()])};
  });
  const meets = (a, b) => {
    for (let i = 1; i < a.pts.length; i++) for (let j = 1; j < b.pts.length; j++) {
      if (cross(a.pts[i - 1], a.pts[i], b.pts[j - 1], b.pts[j])) return true;
    }
    return false;
  };
  let crossings = 0;
  for (let i = 0; i < edges.length; i++) for (let j = i + 1; j < edges.length; j++) {
    const a = edges[i], b = edges[j];
    if ([...a.ends].some(x => b.ends.has(x)) || apart(a.bb, b.bb)) continue;
    if (meets(a, b)) crossings++;
  }
  const columns = cy.nodes(':childless').not('.box').filter(n => n.visible()).map(n => {
    const b = n.boundingBox({includeLabels: false}), k = 2;
    return {id: n.id(), bb: {x1: b.x1 + k, x2: b.x2 - k, y1: b.y1 + k, y2: b.y2 - k}};
  });
  const inside = (p, b) => p.x > b.x1 && p.x < b.x2 && p.y > b.y1 && p.y < b.y2;
  const hits = (p, q, b) => inside(p, b) || inside(q, b) ||
    [[{x: b.x1, y: b.y1}, {x: b.x2, y: b.y1}], [{x: b.x2, y: b.y1}, {x: b.x2, y: b.y2}],
     [{x: b.x2, y: b.y2}, {x: b.x1, y: b.y2}], [{x: b.x1, y: b.y2}, {x: b.x1, y: b.y1}]].some(([r, s]) => cross(p, q, r, s));
  const through = edges.filter(a => columns.some(c => !a.ends.has(c.id) && !apart(a.bb, c.bb) &&
    a.pts.some((p, i) => i > 0 && hits(a.pts[i - 1], p, c.bb)))).length;
  return {edges: edges.length, crossings, through, labels: cy.edges().filter(e => !!e.style('label')).length};
})()"""


def main_thread_ms(trace: Path, until: str | None = None) -> float:
    """CPU time of the page's main thread in a Chromium trace (the sum of its tasks' thread durations): what
    the drawing costs, apart from waiting for a busy machine's cores. ``until``: only the tasks begun by the
    page's ``performance.mark`` of that name (all of them when the page made no such mark)."""
    events = json.loads(trace.read_text())["traceEvents"]
    mains = {(e["pid"], e["tid"]) for e in events if e.get("name") == "thread_name" and e["args"].get("name") == "CrRendererMain"}
    marks = [e["ts"] for e in events if until and e.get("name") == until and "user_timing" in e.get("cat", "")]
    end = min(marks) if marks else float("inf")
    return sum(e.get("tdur", 0) for e in events
               if (e["pid"], e["tid"]) in mains and e.get("name") == "RunTask" and e.get("ph") == "X" and e["ts"] <= end) / 1000


def measure(sizes: list[int], runs: int) -> dict[int, dict[str, float]]:
    from playwright.sync_api import sync_playwright

    out: dict[int, dict[str, float]] = {}
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        for n in sizes:
            f = Path(tmp) / f"g{n}.html"
            f.write_text(html.page(synthetic_graph(n)))
            draws, cpus, wholes, whole_cpus, heaps, label = [], [], [], [], [], 0.0
            for _ in range(runs):
                pg = browser.new_page(viewport={"width": 1400, "height": 900})
                browser.start_tracing(page=pg, path=str(Path(tmp) / "trace.json"), categories=[
                    "toplevel", "devtools.timeline", "disabled-by-default-devtools.timeline", "blink.user_timing"])
                pg.goto(f.as_uri())
                # the whole graph: a UI that draws a large graph's view first adds the rest after that frame
                pg.wait_for_function("window.lineageGraph && window.lineageGraph.nodes().length > 0"
                                     " && !window.lineageGraph.scratch('later')", timeout=120_000)
                wholes.append(pg.evaluate("performance.now()"))
                pg.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")  # drawn on screen
                browser.stop_tracing()
                first = pg.evaluate("(performance.getEntriesByName('lineage-graph-drawn')[0] || {}).startTime")
                draws.append(first if first is not None else wholes[-1])
                cpus.append(main_thread_ms(Path(tmp) / "trace.json", "lineage-graph-drawn"))
                whole_cpus.append(main_thread_ms(Path(tmp) / "trace.json"))
                cdp = pg.context.new_cdp_session(pg)
                cdp.send("HeapProfiler.collectGarbage")
                heaps.append(cdp.send("Runtime.getHeapUsage")["usedSize"] / 1e6)
                label = pg.evaluate(LABEL_PX)
                stats = pg.evaluate(GRAPH_STATS)
                pg.click("#zoom-fit")
                fit = pg.evaluate(LABEL_PX)
                pg.close()
            out[n] = {"draw_ms": statistics.median(draws), "cpu_ms": statistics.median(cpus),
                      "whole_ms": statistics.median(wholes), "whole_cpu_ms": statistics.median(whole_cpus), "heap_mb": statistics.median(heaps),
                      "label_px": label, "fit_px": fit, **stats}
        browser.close()
    return out


def serve(store: str, static: Path | None) -> tuple[str, object]:
    """A lineage server on ``store`` in this process (``static``: its UI files), on a free port."""
    import socket

    import uvicorn

    from lineage_listener.server import app as app_module

    if static:
        app_module.STATIC = static
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app_module.create_app(store), host="127.0.0.1", port=port,
                                           log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/healthz", timeout=1).close()
            return url, server
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def store_graphs(store: str, graphs: list[str], static: Path | None) -> list[tuple[str, dict]]:
    """Each ``DATASET|COLUMN|QUERY[|EXPAND]`` graph's stats as drawn, and again with EXPAND opened."""
    from playwright.sync_api import sync_playwright

    url, server = serve(store, static)
    q = lambda s: urllib.parse.quote(s, safe="")  # noqa: E731
    out = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
            # bypass_csp: the server's pages refuse eval, which wait_for_function uses
            pg = browser.new_page(viewport={"width": 1400, "height": 900}, bypass_csp=True)
            for spec in graphs:
                dataset, column, query, *expand = spec.split("|")
                pg.goto(f"{url}/#/column/{q(dataset)}/{q(column)}?{query}")
                pg.wait_for_function("document.body.dataset.view === location.hash && window.lineageGraph", timeout=120_000)
                name = f"{dataset.rsplit('/', 1)[-1]} [{column}] {query}"
                out.append((name, pg.evaluate(GRAPH_STATS)))
                for ds in expand:
                    box = f"window.lineageGraph.getElementById('ds:' + {ds!r})"
                    pg.evaluate(f"void {box}.emit('tap')")
                    # a box's columns: its children in a UI that drew boxes as compound nodes, columnsOf() since
                    kids = f"(typeof columnsOf === 'function' ? columnsOf({box}) : {box}.children())"
                    pg.wait_for_function(f"{kids}.filter('.extra').length > 0")
                    pg.wait_for_timeout(200)
                    out.append((f"{name}, {ds.rsplit('.', 1)[-1]} opened", pg.evaluate(GRAPH_STATS)))
            browser.close()
    finally:
        server.should_exit = True
    return out


def use_static(root: Path) -> None:
    """Draw ``lineage-listener html`` pages with the UI files under ``root`` (a copy of server/static)."""
    html._static = lambda name: (root / name).read_text(encoding="utf-8")  # noqa: SLF001 - bench only
    if (root / "app.js").exists():  # a copy from before the UI was split into scripts and laid out its graphs
        html.SCRIPTS = ("app.js",)
        html.LIBRARIES = tuple(f"vendor/{v}" for v in ("cytoscape.min.js", "dagre.min.js", "cytoscape-dagre.js"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="45,50,200,500")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--static", help="a server/static directory to bench instead of this checkout's")
    ap.add_argument("--store", help="a store whose --graph pages to measure, served in this process")
    ap.add_argument("--graph", action="append", default=[], help="DATASET|COLUMN|QUERY[|EXPAND] (repeatable)")
    args = ap.parse_args()
    if not shutil.which("chromium"):
        print("ui_bench: no chromium (make install adds Debian's); skipped")
        return 0
    static = Path(args.static) if args.static else None
    if args.store:
        for name, s in store_graphs(args.store, args.graph, static):
            print(f"{name}: {s['edges']} edges, {s['crossings']} crossings, {s['through']} through a column, "
                  f"{s['labels']} edge labels")
        return 0
    if static:
        use_static(static)
    for n, m in measure([int(s) for s in args.sizes.split(",")], args.runs).items():
        print(f"UI graph of {n:3d} nodes: drawn {m['draw_ms']:6.0f} ms after navigation ({m['cpu_ms']:5.0f} ms of main-thread CPU), "
              f"whole {m['whole_ms']:6.0f} ms ({m['whole_cpu_ms']:5.0f} ms CPU), "
              f"JS heap {m['heap_mb']:5.1f} MB, "
              f"smallest label {m['label_px']:4.1f} px at first draw, {m['fit_px']:4.1f} px after fit; "
              f"{m['edges']} edges, {m['crossings']} crossings, {m['through']} through a column, {m['labels']} edge labels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
