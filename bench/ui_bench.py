"""The UI's graph in headless chromium: draw time, JS heap and label sizes for 45, 50, 200 and 500-node graphs.

    python bench/ui_bench.py                 # the UI in this checkout
    python bench/ui_bench.py --static DIR    # another copy of server/static (e.g. an older commit's) to compare

Each graph is a ``lineage-listener html`` page of a synthetic layered graph (bench/server_bench.py's), opened
in Debian's chromium at 1400x900. Draw: navigation start until the graph is laid out and drawn (median of
``--runs``). Heap: JS heap in use after a forced GC with the graph on screen. Labels: the smallest drawn label
(column, dataset title or edge label) in screen pixels (font size x zoom), at first draw and after the "fit" button.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.server_bench import synthetic_graph  # noqa: E402
from lineage_listener.cli import html  # noqa: E402

LABEL_PX = """(() => { const cy = window.lineageGraph;
  const drawn = cy.nodes().union(cy.edges().filter(e => e.style('label')));
  return Math.min(...drawn.map(x => parseFloat(x.style('font-size')))) * cy.zoom(); })()"""


def measure(sizes: list[int], runs: int) -> dict[int, dict[str, float]]:
    from playwright.sync_api import sync_playwright

    out: dict[int, dict[str, float]] = {}
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        for n in sizes:
            f = Path(tmp) / f"g{n}.html"
            f.write_text(html.page(synthetic_graph(n)))
            draws, heaps, label = [], [], 0.0
            for _ in range(runs):
                pg = browser.new_page(viewport={"width": 1400, "height": 900})
                pg.goto(f.as_uri())
                pg.wait_for_function("window.lineageGraph && window.lineageGraph.nodes().length > 0", timeout=120_000)
                draws.append(pg.evaluate("performance.now()"))
                cdp = pg.context.new_cdp_session(pg)
                cdp.send("HeapProfiler.collectGarbage")
                heaps.append(cdp.send("Runtime.getHeapUsage")["usedSize"] / 1e6)
                label = pg.evaluate(LABEL_PX)
                pg.click("#zoom-fit")
                fit = pg.evaluate(LABEL_PX)
                pg.close()
            out[n] = {"draw_ms": statistics.median(draws), "heap_mb": statistics.median(heaps), "label_px": label,
                      "fit_px": fit}
        browser.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="45,50,200,500")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--static", help="a server/static directory to bench instead of this checkout's")
    args = ap.parse_args()
    if not shutil.which("chromium"):
        print("ui_bench: no chromium (make install adds Debian's); skipped")
        return 0
    if args.static:
        root = Path(args.static)
        html._static = lambda name: (root / name).read_text(encoding="utf-8")  # noqa: SLF001 - bench only
    for n, m in measure([int(s) for s in args.sizes.split(",")], args.runs).items():
        print(f"UI graph of {n:3d} nodes: drawn {m['draw_ms']:6.0f} ms after navigation, JS heap {m['heap_mb']:5.1f} MB, "
              f"smallest label {m['label_px']:4.1f} px at first draw, {m['fit_px']:4.1f} px after fit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
