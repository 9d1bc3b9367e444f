"""Lineage diffs on a store of history (made by ``bench/history_bench.py``): how long each question takes.

    python bench/diff_bench.py --store /tmp/lineage-year.duckdb [--samples 20]

Measured through the Python API (``lineage_listener.govern``), each question asked for
``--samples`` applications (or their target datasets) picked at random (seeded):

- ``diff --app``: an application's last run against the run before;
- ``diff --runs``: two runs a month apart;
- the change points of an application over its whole history, and of a dataset;
- two capture windows of the whole store (the last week against the week before), once;
- the whole store against itself (``--against``), once.

Prints p50 / p95 / max in milliseconds per question and the store's size (runs, captures,
distinct edges, edge-set members).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lineage_listener.govern import history  # noqa: E402
from lineage_listener.govern.diff import diff  # noqa: E402
from lineage_listener.query import open_store  # noqa: E402


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return (time.perf_counter() - start) * 1000, out


def report(name: str, ms: list[float], note: str = "") -> None:
    print(f"{name:<44} n={len(ms):<3} p50 {statistics.median(ms):8.0f} ms  p95 {p95(ms):8.0f} ms  "
          f"max {max(ms):8.0f} ms  {note}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    store = open_store(args.store)
    with store.connect() as con:
        size = con.execute("""SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM edge_captures),
                                     (SELECT count(*) FROM edges), (SELECT count(*) FROM edge_sets)""").fetchone()
        apps = con.execute("""SELECT r.app_name, list(r.run_id ORDER BY r.started_at), any_value(q.target_dataset)
                              FROM runs r JOIN queries q USING (run_id) WHERE q.target_dataset IS NOT NULL
                              GROUP BY r.app_name HAVING count(*) >= 31 ORDER BY r.app_name""").fetchall()
    print(f"{args.store}: {size[0]:,} runs, {size[1]:,} captures, {size[2]:,} distinct edges, "
          f"{size[3]:,} edge-set members; {len(apps)} applications with a month of runs or more", flush=True)
    picked = random.Random(args.seed).sample(apps, min(args.samples, len(apps)))
    timed(diff, store, app=picked[0][0])  # the first question opens the file and warms DuckDB
    rows: dict[str, list[float]] = {"last": [], "month": [], "app_history": [], "dataset_history": []}
    changes = []
    for app, runs, target in picked:
        rows["last"].append(timed(diff, store, app=app)[0])
        rows["month"].append(timed(diff, store, runs=(runs[-31], runs[-1]))[0])
        ms, h = timed(history.app_history, store, app, limit=500)
        rows["app_history"].append(ms)
        changes.append(len(h["changes"]))
        rows["dataset_history"].append(timed(history.dataset_history, store, target, limit=500)[0])
    report("diff --app (last run vs the one before)", rows["last"])
    report("diff --runs (a month apart)", rows["month"])
    report("history of an application (all its runs)", rows["app_history"],
           f"{statistics.mean(changes):.1f} change points on average over {len(picked[0][1])} runs")
    report("history of a dataset (all its writes)", rows["dataset_history"])
    ms, d = timed(diff, store, windows=("14d..7d", "7d.."))
    report("diff --windows 14d..7d 7d.. (whole store)", [ms], f"{d.edges[0]:,} / {d.edges[1]:,} edges, "
           f"{sum(d.counts().values()):,} changes")
    ms, d = timed(diff, store, against=store)
    report("diff --against itself (whole store)", [ms], f"{d.edges[1]:,} edges, {sum(d.counts().values())} changes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
