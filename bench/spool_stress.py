"""Stress the capture writer's spool: many processes, short lock timeouts, each batch's fate counted.

Each of ``--jobs`` processes writes ``--batches`` batches (one query, ``--edges`` edges each, the same
edge set for every batch of a job, as ``bench/concurrent_writers.py`` writes) through ``StoreWriter``
with ``--lock-timeout`` s, pausing ``--pause`` s between batches. Every batch's fate is taken from the
writer: written (``write`` returned True), spooled (False, nothing held in memory) or held (False,
kept in the writer's memory). Warnings and errors of every process are counted. After the jobs end,
one more writer ingests the spool; then the store is read and every query id whose edges are not all
there is printed with its fate, the process that wrote it, and the spool files left (``.json``,
``.bad``). Rounds repeat until ``--rounds`` or the first loss (exit status 1).

    python bench/spool_stress.py --jobs 12 --batches 20 --edges 200 --lock-timeout 0.3 --rounds 20
    python bench/spool_stress.py --turn on --start spawn --rounds 5
"""
from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402

from lineage_listener.store import connection, spool  # noqa: E402
from lineage_listener.store.batch import Batch  # noqa: E402
from lineage_listener.store.writer import StoreWriter  # noqa: E402
from bench.concurrent_writers import batch  # noqa: E402


class _Count(logging.Handler):
    """Keeps every WARNING and ERROR line of the writer's loggers."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.getMessage()[:300]}")


def job(store: str, index: int, batches: int, edges: int, pause: float, lock_timeout: float, turn: bool,
        out: "mp.Queue") -> None:
    spool.TURN_LOCK = turn
    handler = _Count()
    logging.getLogger("lineage_listener").addHandler(handler)
    own: list[str] = []  # files opened with a connection of their own instead of attached to the host
    attach = connection._open

    def counted(p: Path, host: duckdb.DuckDBPyConnection | None) -> duckdb.DuckDBPyConnection:
        con = attach(p, host)
        if host is not None and con is not host:
            own.append(p.name)
        return con
    connection._open = counted
    writer = StoreWriter(store, lock_timeout=lock_timeout)
    fates: list[tuple[str, str]] = []
    for n in range(batches):
        b = batch(index, n, edges)
        qid = b.rows["queries"][0][0]
        ok = writer.write(b)
        fates.append((qid, "written" if ok else ("held" if writer._held else "spooled")))
        time.sleep(pause)
    held = sum(len(b) for b in writer._held)
    writer.close()
    out.put((index, fates, held, handler.lines + [f"INFO own connection to {name}" for name in own]))


def run(jobs: int, batches: int, edges: int, pause: float, lock_timeout: float, turn: bool,
        ctx: mp.context.BaseContext) -> tuple[Counter, list[str]]:
    """One round; the fates counted and one line per query whose edges are missing."""
    folder = Path(tempfile.mkdtemp(prefix="spool-stress-"))
    store = str(folder / "lineage.duckdb")
    StoreWriter(store).write(Batch())
    out = ctx.Queue()
    procs = [ctx.Process(target=job, args=(store, i, batches, edges, pause, lock_timeout, turn, out))
             for i in range(jobs)]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    fate: dict[str, tuple[int, str]] = {}
    lines: list[str] = []
    held = 0
    for index, fates, kept, logged in results:
        held += kept
        for qid, f in fates:
            fate[qid] = (index, f)
        lines += [f"job {index}: {line}" for line in logged]
    final = StoreWriter(store)
    handler = _Count()
    logging.getLogger("lineage_listener").addHandler(handler)
    try:
        ingested = final.write(Batch())
    finally:
        logging.getLogger("lineage_listener").removeHandler(handler)
        final.close()
    lines += [f"final ingest: {line}" for line in handler.lines]
    with duckdb.connect(store, read_only=True) as con:
        stored = dict(con.execute("SELECT query_id, count(*) FROM column_lineage GROUP BY query_id").fetchall())
    left = [p.name for d in spool.dirs(Path(store)) if d.is_dir() for p in sorted(d.iterdir())]
    counts = Counter(f for _, f in fate.values())
    counts["held rows at exit"] = held
    counts["own connections"] = sum("INFO own connection" in line for line in lines)
    missing = [f"  MISSING {qid}: {stored.get(qid, 0)}/{edges} edges, job {index}, fate {f}"
               for qid, (index, f) in sorted(fate.items()) if stored.get(qid, 0) != edges]
    if missing:
        missing += [f"  final ingest returned {ingested}; spool files left: {left}", f"  store kept in {folder}"]
        missing += [f"  log: {line}" for line in lines]
    else:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(spool.dirs(Path(store))[1], ignore_errors=True)
    return counts, missing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--edges", type=int, default=200)
    ap.add_argument("--pause", type=float, default=0.02)
    ap.add_argument("--lock-timeout", type=float, default=0.3)
    ap.add_argument("--turn", choices=["on", "off"], default="off")
    ap.add_argument("--start", choices=["fork", "spawn", "forkserver"], default="fork")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    ctx = mp.get_context(args.start)
    for r in range(args.rounds):
        start = time.perf_counter()
        counts, missing = run(args.jobs, args.batches, args.edges, args.pause, args.lock_timeout,
                              args.turn == "on", ctx)
        print(f"round {r + 1}: {dict(counts)}, {time.perf_counter() - start:.1f} s", flush=True)
        if missing:
            print("\n".join(missing), flush=True)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
