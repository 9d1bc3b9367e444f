"""A thousand writers: one lineage server under 200 concurrent jobs, then bursts of 1,000 posts.

    python bench/writers_bench.py --seconds 300 --clients 200 --burst 1000 --bursts 3

Starts a real ``lineage-listener serve`` on 127.0.0.1 (token, fresh store) and ``--clients``
client processes. Each is a job: it POSTs capture batches to ``/api/batches`` over plain HTTP
(urllib, a new connection each, as ``RemoteWriter`` does) back to back for ``--seconds``: a
``runs`` row, a ``queries`` row (a new query id each), the datasets and the target's columns,
and 50-1,000 ``column_lineage`` rows (log-uniform). A 503 is retried after its Retry-After;
a timeout or a refused connection is retried with the same batch (idempotent: a replay adds
nothing). Then ``--bursts`` times, ``--burst`` posts start at once (threads spread over the
client processes) and the time until the last is acknowledged is measured. A batch still not
acknowledged ``--grace`` seconds after its phase ends is given up (a server that cannot keep
up would otherwise keep the bench running for ever).

Meanwhile one reader GETs ``/api/datasets``, an upstream column-lineage answer (depth 10)
and the UI's index page in turn. Afterwards the server is stopped and every edge in the
store is counted per query: each acknowledged batch's edges exactly once (200: in the store;
202: spooled beside it, ingested here first), each ``new_edges`` answered equal to its batch's
edges (or 0 when an earlier attempt whose answer was lost had written them), a batch given up
either whole or absent, and nothing else.
Printed: batches/s and edges/s accepted, POST latency p50/p95/max, server peak RSS
(``VmHWM``), read latency p50/p95 per kind, and the counts.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.query_bench import p95  # noqa: E402
from tests.server_helpers import TOKEN, Server  # noqa: E402

TIMEOUT = 60.0  # per POST attempt (RemoteWriter gives up after 10 s); slower is a failure, retried as is
CHAIN = 4  # job j reads job j-1's tables unless j % CHAIN == 0: lineage several hops deep
TABLES = 20  # tables per job (a job's batches rewrite them)
READ_COLUMN = ("spark_catalog.bench.j3_t0", "c0")  # 3 hops up to raw sources


def batch_rows(job: int, n: int, edges: int, rng: random.Random) -> dict[str, list[list]]:
    """One capture batch as ``/api/batches`` takes it: ``{table: [row, ...]}`` in ``store.batch`` order."""
    now = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    run, qid = f"run-{job}", f"bench-{job}-{n}-{rng.getrandbits(40):010x}"
    target = f"spark_catalog.bench.j{job}_t{n % TABLES}"
    if job % CHAIN:
        sources = [f"spark_catalog.bench.j{job - 1}_t{(n + k) % TABLES}" for k in range(3)]
    else:
        sources = [f"spark_catalog.raw.s{(job + k) % 50}" for k in range(3)]
    datasets = [[d, "table", "parquet", None, None, now, now] for d in [target, *sources]]
    columns = [[target, f"c{c}", "bigint", True, now, now, c] for c in range(edges)]
    lineage = [[qid, run, target, f"c{c}", sources[c % 3], f"c{c}", "identity" if c % 4 else "derived", "direct",
                f"c{c}" if c % 4 else f"c{c} * 2", False, now] for c in range(edges)]
    return {"runs": [[run, f"app-{job}", f"bench job {job}", "4.3.0", "bench", "local[2]", now, None]],
            "queries": [[qid, run, "save", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None, 120, now,
                         target]],
            "datasets": datasets, "dataset_columns": columns, "column_lineage": lineage}


def post(url: str, body: bytes) -> tuple[int, dict, float, float]:
    """One attempt: (status, answer, seconds, Retry-After); status 0 when it did not get an answer."""
    req = urllib.request.Request(f"{url}/api/batches", data=body, method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"})
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            return r.status, json.loads(r.read()), time.perf_counter() - t, 0.0
    except urllib.error.HTTPError as exc:
        retry = float(exc.headers.get("Retry-After") or 1)
        exc.read()
        return exc.code, {}, time.perf_counter() - t, retry
    except OSError:
        return 0, {}, time.perf_counter() - t, 1.0


class Tally:
    """What one client saw: latencies and statuses per attempt; per batch its query id, edges and answer."""

    def __init__(self) -> None:
        self.latency: list[float] = []  # attempts answered 200/202
        self.statuses: dict[int, int] = {}
        # query id, edges, status, new_edges, whether an earlier attempt got no answer (it may have landed)
        self.acked: list[tuple[str, int, int, int | None, bool]] = []
        self.unresolved: list[tuple[str, int]] = []  # sent, never acknowledged before giving up
        self.lock = threading.Lock()

    def send(self, url: str, rows: dict[str, list[list]], give_up: float) -> None:
        """Post until acknowledged (200 or 202) or ``give_up`` (epoch seconds) passes; a 4xx other than 429
        is a bug in the bench: raise."""
        body = json.dumps({"rows": rows}).encode()
        qid, edges = rows["queries"][0][0], len(rows["column_lineage"])
        lost = False
        while time.time() < give_up:
            status, answer, seconds, retry = post(url, body)
            with self.lock:
                self.statuses[status] = self.statuses.get(status, 0) + 1
                if status in (200, 202):
                    self.latency.append(seconds)
                    self.acked.append((qid, edges, status, answer.get("new_edges"), lost))
                    return
            lost = lost or status == 0
            if 400 <= status < 500 and status != 429:
                raise RuntimeError(f"POST answered {status}")
            time.sleep(retry * random.uniform(0.5, 1.5))
        with self.lock:
            self.unresolved.append((qid, edges))

    def result(self) -> dict:
        return {"latency": self.latency, "statuses": self.statuses, "acked": self.acked,
                "unresolved": self.unresolved}


def client(job: int, url: str, until: float, grace: float, bursts: list, per_burst: int, out: "mp.Queue") -> None:
    """Post back to back until ``until`` (epoch seconds), then wait for each burst's signal. A batch not
    acknowledged ``grace`` seconds after its phase ends is given up (counted apart)."""
    rng = random.Random(job)
    n = 0

    def edges() -> int:
        return int(math.exp(rng.uniform(math.log(50), math.log(1000))))
    tally = Tally()
    while time.time() < until:
        tally.send(url, batch_rows(job, n, edges(), rng), until + grace)
        n += 1
    out.put(("sustained", job, tally.result()))
    for go in bursts:
        tally = Tally()
        todo = [batch_rows(job, n + k, edges(), rng) for k in range(per_burst)]
        n += per_burst
        go.wait()
        give_up = time.time() + grace
        threads = [threading.Thread(target=tally.send, args=(url, rows, give_up)) for rows in todo]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out.put(("burst", job, {**tally.result(), "done": time.time()}))


def reader(url: str, stop: threading.Event, out: dict[str, list[float]]) -> None:
    """GET the three reads in turn while ``stop`` is not set; latencies per kind (failures as inf)."""
    ds, col = READ_COLUMN
    paths = {"datasets": "/api/datasets?limit=100",
             "upstream": f"/v3/namespaces/default/datasets/{urllib.parse.quote(ds, safe='')}/columns/{col}/lineage"
                         "?maxLevels=10",
             "ui": "/"}
    while not stop.is_set():
        for kind, path in paths.items():
            t = time.perf_counter()
            try:
                with urllib.request.urlopen(url + path, timeout=TIMEOUT) as r:
                    r.read()
                out.setdefault(kind, []).append(time.perf_counter() - t)
            except urllib.error.HTTPError as exc:  # 404 before the first batch naming the column
                if exc.code != 404:
                    out.setdefault(kind, []).append(math.inf)
            except OSError:
                out.setdefault(kind, []).append(math.inf)
            stop.wait(0.2)


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return math.nan


def ms(values: list[float]) -> str:
    """p50/p95/max; a failed or timed-out request counts as infinitely slow (and is counted)."""
    if not values:
        return "none"
    failed = sum(math.isinf(v) for v in values)

    def fmt(v: float) -> str:
        return f">{TIMEOUT:.0f} s" if math.isinf(v) else f"{v * 1000:.0f} ms"
    return (f"p50 {fmt(statistics.median(values))}, p95 {fmt(p95(values))}, max {fmt(max(values))} "
            f"(n={len(values)}{f', {failed} failed or timed out' if failed else ''})")


def merge(results: list[dict]) -> dict:
    out: dict = {"latency": [], "statuses": {}, "acked": [], "unresolved": []}
    for r in results:
        out["latency"] += r["latency"]
        for k, v in r["statuses"].items():
            out["statuses"][k] = out["statuses"].get(k, 0) + v
        out["acked"] += r["acked"]
        out["unresolved"] += r["unresolved"]
    return out


def acked_edges(r: dict) -> int:
    return sum(edges for _, edges, *_ in r["acked"])


def phase(title: str, seconds: float, r: dict) -> None:
    n, edges = len(r["acked"]), acked_edges(r)
    print(f"{title}: {n} batches ({edges:,} edges) acknowledged in {seconds:.1f} s: {n / seconds:.1f} batches/s, "
          f"{edges / seconds:,.0f} edges/s; POST latency {ms(r['latency'])}; answers "
          f"{dict(sorted(r['statuses'].items()))}"
          + (f"; GAVE UP on {len(r['unresolved'])} batches" if r["unresolved"] else ""), flush=True)


def check(store: Path, r: dict) -> bool:
    """Every acknowledged batch's edges exactly once; a batch given up: all its edges or none; nothing else."""
    import duckdb

    with duckdb.connect(str(store), read_only=True) as con:
        per_query = dict(con.execute("SELECT query_id, count(*) FROM column_lineage GROUP BY 1").fetchall())
        twice = con.execute("SELECT count(*) - count(DISTINCT (query_id, target_dataset, target_column, "
                            "source_dataset, source_column, transform, kind, expression)) "
                            "FROM column_lineage").fetchone()[0]
    acked = {qid: edges for qid, edges, *_ in r["acked"]}
    unresolved = dict(r["unresolved"])
    wrong = [q for q, e in acked.items() if per_query.get(q, 0) != e]
    partial = [q for q, e in unresolved.items() if per_query.get(q, 0) not in (0, e)]
    stray = [q for q in per_query if q not in acked and q not in unresolved]
    landed = sum(per_query.get(q, 0) for q in unresolved)
    # new_edges: a batch's edges, or 0 when an earlier attempt whose answer was lost had written them
    odd = [q for q, e, status, n, lost in r["acked"] if status == 200 and n != e and not (lost and n == 0)]
    answered = sum(n for _, _, status, n, _ in r["acked"] if status == 200)
    spooled = sum(e for _, e, status, *_ in r["acked"] if status == 202)
    stored = sum(per_query.values())
    print(f"edges in store {stored:,}; acknowledged {acked_edges(r):,} (of which spooled {spooled:,}), "
          f"new_edges answered {answered:,}; given up {sum(unresolved.values()):,} of which in the store "
          f"{landed:,}; stored twice {twice}; batches with wrong counts {len(wrong)}, partial {len(partial)}, "
          f"unknown {len(stray)}, wrong new_edges {len(odd)}")
    return not (wrong or partial or stray or twice or odd)


def report_reads(title: str, reads: dict[str, list[float]]) -> None:
    for kind in ("datasets", "upstream", "ui"):
        print(f"  {title} read {kind:9s}: {ms(reads.get(kind, []))}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300, help="sustained phase (default %(default)s)")
    ap.add_argument("--clients", type=int, default=200, help="client processes (default %(default)s)")
    ap.add_argument("--burst", type=int, default=1000, help="posts started at once per burst (default %(default)s)")
    ap.add_argument("--bursts", type=int, default=3, help="(default %(default)s)")
    ap.add_argument("--grace", type=float, default=180,
                    help="give a batch up this long after its phase ends (default %(default)s)")
    ap.add_argument("--serve-arg", action="append", default=[], help="extra argument for serve (repeatable)")
    args = ap.parse_args()
    ctx = mp.get_context("fork")
    folder = Path(tempfile.mkdtemp(prefix="writers-bench-"))
    store = folder / "lineage.duckdb"
    srv = Server(store, extra_args=args.serve_arg, output=folder / "server.log").start(timeout=120)
    per_burst = max(1, args.burst // args.clients)
    out: mp.Queue = ctx.Queue()
    gos = [ctx.Event() for _ in range(args.bursts)]
    stop = threading.Event()
    reads: dict[str, list[float]] = {}
    reading = threading.Thread(target=reader, args=(srv.url, stop, reads), daemon=True)
    print(f"{args.clients} client processes for {args.seconds:.0f} s, then {args.bursts} bursts of "
          f"{per_burst * args.clients} posts; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"server pid {srv.proc.pid}, store {store}", flush=True)
    procs = []
    results = []
    try:
        start = time.time() + 3  # every process forked and ready
        procs = [ctx.Process(target=client, args=(j, srv.url, start + args.seconds, args.grace, gos, per_burst,
                                                  out)) for j in range(args.clients)]
        for p in procs:
            p.start()
        reading.start()
        sustained = merge([out.get()[2] for _ in procs])
        results.append(sustained)
        phase("sustained", time.time() - start, sustained)
        report_reads("sustained", reads)
        for i, go in enumerate(gos, 1):
            reads.clear()
            time.sleep(2)
            t0 = time.time()
            go.set()
            got = [out.get()[2] for _ in procs]
            burst = merge(got)
            results.append(burst)
            phase(f"burst {i}", max(r["done"] for r in got) - t0, burst)
            report_reads(f"burst {i}", reads)
        stop.set()
        reading.join()
        for p in procs:
            p.join()
        print(f"server peak RSS: {peak_rss_mb(srv.proc.pid):.0f} MB; load average now {os.getloadavg()[0]:.1f}",
              flush=True)
    finally:
        stop.set()
        for p in procs:
            if p.is_alive():
                p.kill()
        try:
            srv.stop()
        except subprocess.TimeoutExpired:  # requests of clients long gone still in flight: what is committed stays
            print("server did not stop within 30 s: killed", flush=True)
            srv.proc.kill()
            srv.proc.wait()
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.writer import StoreWriter

    StoreWriter(store).write(Batch())  # anything spooled (202) goes in first
    print(f"store {store.stat().st_size / 1e6:.1f} MB")
    ok = check(store, merge(results))
    print("nothing lost, nothing twice" if ok else "MISMATCH: edges lost or stored twice")
    shutil.rmtree(folder, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
