"""What judging the current state costs: a policy check and a column's labels over a pipeline that
replaces its datasets every day, against the same questions over all time (``--history``).

    python bench/current_state_bench.py [--days 365] [--columns 20] [--rounds 5]

The store holds ``raw -> clean -> export`` with ``--columns`` columns, the first declared ``pii``,
written once a day for ``--days`` days by overwriting writes (``write_mode`` ``replace``), every
write captured (one ``edge_captures`` row per set per day, as daily runs of unchanged jobs give).
Each round asks, in alternating order, ``check`` of a forbid rule and ``classify`` labels of the
export's first column, current and history; rows give the median wall time of each and their ratio.

>>> sorted(shape(2, 3))
['clean', 'export']
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lineage_listener.govern import labelstore  # noqa: E402
from lineage_listener.govern.answers import column_labels  # noqa: E402
from lineage_listener.govern.checks import check_store  # noqa: E402
from lineage_listener.govern.policy import parse  # noqa: E402
from lineage_listener.query import open_store  # noqa: E402
from lineage_listener.store.batch import Batch  # noqa: E402
from lineage_listener.store.connection import open_writable  # noqa: E402
from lineage_listener.store.rows import EdgeRow, QueryRow  # noqa: E402
from lineage_listener.store.upsert import commit_batch  # noqa: E402

RAW, CLEAN, EXPORT = "file:/bench/raw.csv", "spark_catalog.bench.clean", "file:/bench/exports/out.csv"


def shape(days: int, columns: int) -> dict[str, str]:
    """Each written dataset and the dataset it reads."""
    return {"clean": RAW, "export": CLEAN} if days and columns else {}


def build(path: Path, days: int, columns: int) -> None:
    con = open_writable(path)
    try:
        commit_batch(con, labelstore.set_batch([(RAW, "c0", "pii", True)], "bench"))
        start = datetime(2026, 1, 1)
        for day in range(days):
            batch = Batch()
            for hour, (source, target) in enumerate(((RAW, CLEAN), (CLEAN, EXPORT))):
                at = (start + timedelta(days=day, hours=hour + 1)).isoformat(sep=" ")
                q = f"run{day}:{target}"
                batch.add(QueryRow(query_id=q, run_id=f"run{day}", action="save", command="Insert",
                                   sql_text=None, status="succeeded", error=None, duration_ms=1, captured_at=at,
                                   target_dataset=target, write_mode="replace"))
                for c in range(columns):
                    batch.add(EdgeRow(query_id=q, run_id=f"run{day}", target_dataset=target, target_column=f"c{c}",
                                      source_dataset=source, source_column=f"c{c}", transform="identity",
                                      kind="direct", expression=f"c{c}", masking=False, captured_at=at))
            commit_batch(con, batch)
    finally:
        con.close()


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--columns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    policy = parse({"rules": [{"name": "r", "kind": "forbid", "label": "pii", "datasets": ["file:/**/exports/**"]}]},
                   "bench")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lineage.duckdb"
        started = time.perf_counter()
        build(path, opts.days, opts.columns)
        print(f"store: {opts.days} daily replacing runs of raw -> clean -> export, {opts.columns} columns "
              f"({time.perf_counter() - started:.1f} s to build)")
        store = open_store(path)
        questions = {
            "check": lambda history: check_store(store, policy, history=history),
            "labels": lambda history: column_labels(store, EXPORT, "c0", history=history),
        }
        times: dict[tuple[str, bool], list[float]] = {}
        for n in range(opts.rounds):
            for history in ((False, True) if n % 2 == 0 else (True, False)):
                for name, ask in questions.items():
                    times.setdefault((name, history), []).append(timed(lambda: ask(history)))
        for name in questions:
            now, past = (statistics.median(times[(name, h)]) for h in (False, True))
            print(f"{name:7} current {now * 1000:8.1f} ms   history {past * 1000:8.1f} ms   ratio {now / past:5.2f}x")


if __name__ == "__main__":
    main()
