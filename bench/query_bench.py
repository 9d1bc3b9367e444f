"""Time upstream/downstream questions of depth 10 on a (synthetic) store.

    python bench/make_synthetic_store.py /tmp/lineage-10m.duckdb
    python bench/query_bench.py /tmp/lineage-10m.duckdb --runs 20 [--before CHECKOUT]

Start columns are drawn at random from columns that have edges in the
direction asked (so every timing is a real multi-hop walk), each timed
end to end through ``open_store(...).upstream/downstream`` (connection
open, name resolution, expansion, graph build), in a worker process
(``bench/versions.py``). ``--before``: another checkout's package answers
every question too, in turn with this one's; both are timed and their
answers compared column for column.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.versions import Versions  # noqa: E402
from lineage_listener.query import open_store  # noqa: E402

TARGET_SECONDS = 1.0


def sample_starts(store, direction: str, n: int, seed: int) -> list[tuple[str, str]]:
    near = ("target_dataset", "target_column") if direction == "upstream" else ("source_dataset", "source_column")
    rows = store.sql(f"""
        SELECT DISTINCT {near[0]}, {near[1]}
        FROM (SELECT * FROM column_lineage USING SAMPLE reservoir(20000 ROWS) REPEATABLE ({seed}))
        WHERE {near[0]} IS NOT NULL AND {near[1]} IS NOT NULL AND {near[0]} NOT LIKE 'file:%'""").fetchall()
    store.close()
    rng = random.Random(seed)
    return rng.sample(sorted(rows), min(n, len(rows)))


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--runs", type=int, default=20, help="start columns per direction")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--before", type=Path, help="a checkout of the code before a change: timed in turn with this "
                                                "one, every answer compared")
    args = ap.parse_args(argv)
    store = open_store(args.store)
    edges = store.sql("SELECT count(*) FROM column_lineage").fetchall()[0][0]
    store.close()
    print(f"store {args.store}: {edges:,} edges; depth {args.depth}; {args.runs} random start columns")
    versions = Versions(args.store, args.before)
    worst = 0.0
    try:
        for direction in ("upstream", "downstream"):
            times: dict[str, list[float]] = {v: [] for v in versions.names}
            cpu: dict[str, list[float]] = {v: [] for v in versions.names}
            sizes = []
            for dataset, column in sample_starts(store, direction, args.runs, args.seed):
                replies = versions.ask({"ask": direction, "dataset": dataset, "column": column, "depth": args.depth})
                for name, r in replies.items():
                    times[name].append(r["ms"] / 1000)
                    cpu[name].append(r["cpu_ms"] / 1000)
                sizes.append(len(replies["now"]["answer"]["edges"]))
            for name in versions.names:
                med, q95 = statistics.median(times[name]), p95(times[name])
                if name == "now":
                    worst = max(worst, q95)
                print(f"{direction:10s} {name:6s} median {med * 1000:6.0f} ms  p95 {q95 * 1000:6.0f} ms  "
                      f"max {max(times[name]) * 1000:6.0f} ms  (CPU median {statistics.median(cpu[name]) * 1000:5.0f}"
                      f" ms, p95 {p95(cpu[name]) * 1000:5.0f} ms; p95 = {q95 / TARGET_SECONDS:.2f} x the "
                      f"{TARGET_SECONDS:.0f} s target; graph edges median {statistics.median(sizes):.0f}, "
                      f"max {max(sizes)})")
    finally:
        versions.close()
    print(versions.verdict())
    ok = worst < TARGET_SECONDS and not versions.mismatches
    print("PASS" if worst < TARGET_SECONDS else "FAIL", f"p95 {worst * 1000:.0f} ms vs {TARGET_SECONDS * 1000:.0f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
