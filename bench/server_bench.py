"""The lineage server: start time, p95 of the column-lineage endpoint, and the UI's draw time.

    python bench/make_synthetic_store.py /tmp/lineage-10m.duckdb --edges 10000000
    python bench/server_bench.py /tmp/lineage-10m.duckdb --runs 20

Start time: process launch until ``/healthz`` answers. Endpoint: ``/v3/.../lineage``
(depth 10, backward) for random columns with edges, timed over HTTP. Draw: headless
chromium (Debian's) opens ``lineage-listener html`` pages of synthetic graphs with
200 and 500 nodes and reports the time until the graph is laid out.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.query_bench import p95, sample_starts  # noqa: E402
from lineage_listener.cli.html import page  # noqa: E402
from lineage_listener.query import open_store  # noqa: E402
from tests.server_helpers import Server  # noqa: E402


def synthetic_graph(n: int, seed: int = 1) -> dict:
    """A layered graph of ``n`` columns, each fed by up to 3 columns of the layer before."""
    rng = random.Random(seed)
    width = max(2, int(n ** 0.5))
    nodes = [{"dataset": f"db.t{i // width}", "column": f"c{i % width}", "depth": i // width} for i in range(n)]
    edges = []
    for i, node in enumerate(nodes[width:], start=width):
        for j in rng.sample(range((i // width - 1) * width, (i // width) * width), k=min(3, width)):
            src = nodes[j]
            edges.append({"source": {"dataset": src["dataset"], "column": src["column"]},
                          "target": {"dataset": node["dataset"], "column": node["column"]},
                          "transform": rng.choice(["identity", "derived", "aggregate", "filter"]),
                          "kind": "direct", "expression": "x + 1", "masking": False, "query_id": "q",
                          "captured_at": "2026-01-01T00:00:00"})
    return {"start": {"dataset": nodes[-1]["dataset"], "column": nodes[-1]["column"]}, "direction": "backward",
            "nodes": nodes, "edges": edges, "written_at": "bench"}


def draw_ms(sizes: list[int]) -> dict[int, float]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    out = {}
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        pg = browser.new_page(viewport={"width": 1400, "height": 900})
        for n in sizes:
            f = Path(tmp) / f"g{n}.html"
            f.write_text(page(synthetic_graph(n)))
            pg.goto(f.as_uri())
            pg.wait_for_function("window.lineageGraph && window.lineageGraph.nodes().length > 0", timeout=120_000)
            out[n] = pg.evaluate("performance.now()")  # navigation start -> graph laid out
        browser.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--depth", type=int, default=10)
    args = ap.parse_args()
    t0 = time.perf_counter()
    srv = Server(Path(args.store)).start(timeout=300)
    started = time.perf_counter() - t0
    try:
        store = open_store(args.store)
        edges = store.sql("SELECT count(*) FROM column_lineage").fetchall()[0][0]
        starts = sample_starts(store, "upstream", args.runs, 1)
        times, sizes = [], []
        for dataset, column in starts:
            url = (f"{srv.url}/v3/namespaces/default/datasets/{urllib.parse.quote(dataset, safe='')}/columns/"
                   f"{urllib.parse.quote(column, safe='')}/lineage?maxLevels={args.depth}")
            t = time.perf_counter()
            with urllib.request.urlopen(url, timeout=120) as r:
                body = json.loads(r.read())
            times.append(time.perf_counter() - t)
            sizes.append(len(body["edges"]))
    finally:
        srv.stop()
    print(f"store {args.store}: {edges:,} edges")
    print(f"server start (launch -> /healthz answers): {started:.2f} s")
    print(f"column lineage endpoint, depth {args.depth}, {len(times)} columns: median "
          f"{statistics.median(times) * 1000:.0f} ms, p95 {p95(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms "
          f"(edges per answer: median {statistics.median(sizes):.0f}, max {max(sizes)})")
    if shutil.which("chromium"):
        for n, ms in draw_ms([200, 500]).items():
            print(f"UI: {n}-node graph laid out and drawn {ms:.0f} ms after navigation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
