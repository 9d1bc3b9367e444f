"""Concurrent jobs writing one store: how many batches had to be spooled, with and without turn-taking.

Each of ``--jobs`` processes writes ``--batches`` batches (one query, ``--edges`` edges each)
through ``StoreWriter`` with the default 10 s lock timeout, pausing ``--pause`` s between
batches, as capture threads of concurrent jobs do. Prints, per mode: batches spooled,
edges in the store, wall time; and when edges are missing, whether the last writer's ingest of
the spool reached the store, the spool files left (``.json`` waiting, ``.bad`` quarantined) and
how many queries lack edges (``bench/spool_stress.py`` follows every batch).

    python bench/concurrent_writers.py --jobs 10 --batches 15
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402

from lineage_listener.store import spool  # noqa: E402
from lineage_listener.store.batch import Batch  # noqa: E402
from lineage_listener.store.rows import row_of  # noqa: E402
from lineage_listener.store.writer import StoreWriter  # noqa: E402


def batch(job: int, n: int, edges: int) -> Batch:
    b = Batch()
    qid = f"bench:{job}:{n}:{uuid.uuid4().hex[:6]}"
    now = "2026-01-01 00:00:00"
    b.add(row_of("queries", (qid, "run", "save", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None, 5, now,
                      f"file:/out/{job}")))
    for e in range(edges):
        b.add(row_of("column_lineage", (qid, "run", f"file:/out/{job}", f"c{e}", "file:/in", f"c{e}", "identity",
                                 "direct", f"c{e}", False, now)))
    return b


def job(store: str, index: int, batches: int, edges: int, pause: float, turn: bool, out: "mp.Queue") -> None:
    spool.TURN_LOCK = turn
    writer = StoreWriter(store)
    spooled = 0
    for n in range(batches):
        spooled += not writer.write(batch(index, n, edges))
        time.sleep(pause)
    out.put(spooled)


def run(jobs: int, batches: int, edges: int, pause: float, turn: bool) -> tuple[int, int, float, str]:
    """One mode: batches spooled, edges stored, wall time, and what is known of missing edges."""
    folder = Path(tempfile.mkdtemp(prefix="concurrent-writers-"))
    store = str(folder / "lineage.duckdb")
    StoreWriter(store).write(Batch())
    out: mp.Queue = mp.Queue()
    start = time.perf_counter()
    procs = [mp.Process(target=job, args=(store, i, batches, edges, pause, turn, out)) for i in range(jobs)]
    for p in procs:
        p.start()
    spooled = sum(out.get() for _ in procs)
    for p in procs:
        p.join()
    wall = time.perf_counter() - start
    final = StoreWriter(store)
    ingested = final.write(Batch())  # ingest what was spooled: nothing may be lost
    final.close()
    with duckdb.connect(store, read_only=True) as con:
        stored = con.execute("SELECT count(*) FROM column_lineage").fetchone()[0]
        short = con.execute("SELECT count(*) FROM queries q WHERE (SELECT count(*) FROM column_lineage c "
                            "WHERE c.query_id = q.query_id) <> ?", [edges]).fetchone()[0]
        queries = con.execute("SELECT count(*) FROM queries").fetchone()[0]
    left = [f.name for d in spool.dirs(Path(store)) if d.is_dir() for f in d.iterdir()]
    note = ""
    if stored != jobs * batches * edges:
        note = (f"    final ingest {'reached the store' if ingested else 'did NOT reach the store'}; "
                f"{jobs * batches - queries} queries absent, {short} with some edges missing; "
                f"spool files left: {left}")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(spool.dirs(Path(store))[1], ignore_errors=True)  # this store's only: others may be in use
    return spooled, stored, wall, note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--edges", type=int, default=200)
    ap.add_argument("--pause", type=float, default=0.25)
    args = ap.parse_args()
    total = args.jobs * args.batches
    print(f"{args.jobs} jobs x {args.batches} batches x {args.edges} edges, one store")
    for turn in (True, False):
        spooled, stored, wall, note = run(args.jobs, args.batches, args.edges, args.pause, turn)
        print(f"  turn lock {'on ' if turn else 'off'}: spooled {spooled}/{total} batches, "
              f"edges in store {stored}/{total * args.edges}, wall {wall:.1f} s")
        if note:
            print(note)


if __name__ == "__main__":
    main()
