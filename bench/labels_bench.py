"""Time label propagation: the labels of every column of a dataset, on a (synthetic or history) store.

    python bench/make_synthetic_store.py /tmp/lineage-bench-10m.duckdb --edges 10000000
    python bench/labels_bench.py /tmp/lineage-bench-10m.duckdb --runs 20

First declares labels (``pii.email`` and ``confidential``, source ``set`` by ``labels_bench``; the
same ones again on a second run) on ``--labelled`` source columns: columns of datasets no job
writes, each with copies downstream. Then, for ``--runs`` datasets drawn from those the labelled
columns reach and ``--runs`` drawn at random among the written ones, times
``govern.answers.column_labels(store, dataset)`` end to end (connection, the walk upstream of
every column, propagation, why-paths with their captures): once over direct edges only (the
labels a column carries: badges, exports, policy checks) and once with influence (indirect
edges too: the column page). Each both ways a user of the Python API asks many questions: a
connection opened per question (``open_store(path)`` kept, its default), and one
``store.session()`` around them all (the file opened once, DuckDB's cache kept). Prints p50/p95
of each (wall time, and the CPU time of the process beside it: on a busy machine the difference
is the wait for a core), the queries a question sends (p50/p95), and whether labels' p95 is under
the target.

Each question is asked in a worker process (``bench/versions.py``); ``--before CHECKOUT`` asks it of
another checkout's package too, in turn with this one's, times both and compares their answers
column for column.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.versions import Versions  # noqa: E402
from lineage_listener.govern import labelstore  # noqa: E402
from lineage_listener.govern.answers import column_labels, run  # noqa: E402
from lineage_listener.query import open_store, store as query_store  # noqa: E402
from lineage_listener.store.writer import StoreWriter  # noqa: E402

TARGET_P95_MS = 500.0


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def declare(path: str, count: int, seed: int) -> list[tuple[str, str]]:
    """Label ``count`` source columns (of datasets nothing writes) that have direct edges downstream."""
    store = open_store(path)
    rows = store.sql("""
        SELECT DISTINCT source_dataset, source_column FROM edges
        WHERE kind = 'direct' AND source_column IS NOT NULL
          AND source_dataset NOT IN (SELECT target_dataset FROM edges WHERE target_dataset IS NOT NULL)
        ORDER BY 1, 2""").fetchall()
    store.close()
    picked = random.Random(seed).sample(rows, min(count, len(rows)))
    labels = [(ds, col, "pii.email" if i % 2 == 0 else "confidential", True) for i, (ds, col) in enumerate(picked)]
    if not StoreWriter(path).write(labelstore.set_batch(labels, "labels_bench")):
        raise SystemExit(f"could not write labels to {path} (busy?)")
    return picked


def reached_datasets(path: str, seeds: list[tuple[str, str]]) -> list[str]:
    """Datasets some labelled column's label reaches (a walk downstream from every seed)."""
    store = open_store(path)
    with store.connect() as con:
        p = run(con, None, influence=False)
    return sorted({n[0] for found in p.reached.values() for n in found} - {s[0] for s in seeds})


class Counting:
    """A connection that counts the queries sent through it."""

    def __init__(self, con) -> None:
        self._con, self.queries = con, 0

    def execute(self, *args, **kwargs):
        self.queries += 1
        return self._con.execute(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._con, name)


def queries_per_question(path: str, picks: list[str]) -> list[int]:
    """How many queries ``column_labels`` (direct edges) sends for each dataset."""
    opened: list[Counting] = []
    real = query_store.open_readonly

    def counting(p):
        opened.append(Counting(real(p)))
        return opened[-1]
    query_store.open_readonly = counting
    try:
        store, counts = open_store(path), []
        for dataset in picks:
            before = sum(c.queries for c in opened)
            column_labels(store, dataset, influence=False)
            counts.append(sum(c.queries for c in opened) - before)
        return counts
    finally:
        query_store.open_readonly = real


def timed(versions: Versions, picks: list[str], influence: bool) -> dict[str, tuple[list[float], list[float], int, int]]:
    """Per version: milliseconds per dataset (wall, and CPU of its process: DuckDB's threads included),
    columns answered, columns labelled."""
    out: dict[str, tuple[list[float], list[float], int, int]] = {v: ([], [], 0, 0) for v in versions.names}
    for dataset in picks:
        for name, r in versions.ask({"ask": "labels", "dataset": dataset, "influence": influence}).items():
            times, cpu, columns, labelled = out[name]
            times.append(r["ms"])
            cpu.append(r["cpu_ms"])
            out[name] = (times, cpu, columns + len(r["answer"]["columns"]),
                         labelled + sum(1 for c in r["answer"]["columns"] if c["labels"]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--runs", type=int, default=20, help="datasets timed of each kind (reached, random)")
    ap.add_argument("--labelled", type=int, default=40, help="source columns to label")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--before", type=Path, help="a checkout of the code before a change: timed in turn with this "
                                                "one, every answer compared")
    args = ap.parse_args(argv)
    store = open_store(args.store)
    edges = store.sql("SELECT count(*) FROM column_lineage").fetchall()[0][0]
    written = [r[0] for r in store.sql("SELECT DISTINCT target_dataset FROM edges WHERE target_dataset IS NOT NULL "
                                       "ORDER BY 1").fetchall()]
    store.close()
    seeds = declare(args.store, args.labelled, args.seed)
    t0 = time.perf_counter()
    reached = reached_datasets(args.store, seeds)
    whole = time.perf_counter() - t0
    rng = random.Random(args.seed)
    picks = rng.sample(reached, min(args.runs, len(reached))) + rng.sample(written, min(args.runs, len(written)))
    print(f"store {args.store}: {edges:,} edge rows; {len(seeds)} labelled source columns reach "
          f"{len(reached)} datasets (propagation over the whole store: {whole:.1f} s)")
    counts = queries_per_question(args.store, picks)
    print(f"queries a question sends (labels, direct edges): p50 {statistics.median(counts):.0f}  "
          f"p95 {p95(counts):.0f}  max {max(counts)}")
    versions = Versions(args.store, args.before)
    worst: dict[str, float] = {}
    try:
        for how in ("a connection per question", "one session"):
            versions.session(how == "one session")
            for what, influence in (("labels (direct edges)", False), ("labels + influence", True)):
                for name, (times, cpu, columns, labelled) in timed(versions, picks, influence).items():
                    p50, top = statistics.median(times), p95(times)
                    if name == "now":
                        worst[f"{how}, {what}"] = top
                    print(f"{how:26s} {what:22s} {name:6s}: p50 {p50:7.1f} ms  p95 {top:7.1f} ms  max "
                          f"{max(times):7.1f} ms  (CPU p50 {statistics.median(cpu):6.1f} ms  p95 {p95(cpu):6.1f} ms; "
                          f"{len(picks)} datasets, {columns} columns, {labelled} labelled)", flush=True)
    finally:
        versions.close()
    print(versions.verdict())
    for how, top in worst.items():
        verdict = "PASS" if top < TARGET_P95_MS else "FAIL"
        print(f"{verdict}: {how}: p95 {top:.1f} ms (target < {TARGET_P95_MS:.0f} ms)")
    return 0 if all(top < TARGET_P95_MS for top in worst.values()) and not versions.mismatches else 1

if __name__ == "__main__":
    sys.exit(main())
