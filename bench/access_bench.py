"""What access control costs a read (docs/security.md): the same routes asked of one ``serve --access``
as an admin (reads everything: answers are not shaped) and as a reader of half the databases (lists
asked of the store for the readable rows, every answer through the visibility rule), in interleaved
rounds; p50 and p95 per route and the reader/admin ratio.

    python bench/make_synthetic_store.py /tmp/lineage-1m.duckdb --edges 1000000
    python bench/access_bench.py /tmp/lineage-1m.duckdb --rounds 10
"""
from __future__ import annotations

import argparse
import os
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
from lineage_listener.query import open_store  # noqa: E402
from tests.server_helpers import Server  # noqa: E402

SECRETS = {"BENCH_ADMIN": "bench-admin-token-0123456789", "BENCH_READER": "bench-reader-token-0123456789"}
ACCESS = """tokens:
  - {name: admin, env: BENCH_ADMIN, groups: [admins]}
  - {name: reader, env: BENCH_READER, groups: [readers]}
grants:
  - {groups: [admins], read: ["**"], admin: true}
  - {groups: [readers], read: [%s]}
"""


def get(url: str, token: str) -> float:
    started = time.perf_counter()
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=600) as r:
        r.read()
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="access-bench-"))
    store = work / "store.duckdb"
    shutil.copy(args.store, store)
    # start columns the reader may read (even databases): the same question, answered whole to the admin
    starts = [(ds, col) for ds, col in sample_starts(open_store(store), "upstream", args.rounds * 4, seed=3)
              if ds.startswith("spark_catalog.db") and int(ds.split(".")[1][2:]) % 2 == 0][:args.rounds]
    half = ", ".join(f'"spark_catalog.db{d}.*"' for d in range(0, 40, 2)) + ', "s3a://raw/**"'
    (work / "access.yml").write_text(ACCESS % half)
    srv = Server(store, extra_args=["--access", str(work / "access.yml")], env=SECRETS, output=work / "log").start()
    q = urllib.parse.quote
    routes = {
        "lineage depth 10": lambda ds, col: f"/v3/namespaces/default/datasets/{q(ds, safe='')}/columns/{q(col, safe='')}"
                                             f"/lineage?maxLevels=10",
        "dataset page": lambda ds, col: f"/api/datasets/{q(ds, safe='')}",
        "overview": lambda ds, col: f"/api/overview?dataset={q(ds)}",
        "datasets list": lambda ds, col: "/api/datasets?limit=100",
        "search": lambda ds, col: f"/api/search?q={q(col)}",
        "runs page": lambda ds, col: "/api/browse/runs?limit=50",
    }
    times: dict[tuple[str, str], list[float]] = {}
    try:
        for ds, col in starts:
            for name, path in routes.items():
                for who in ("admin", "reader"):  # interleaved: the same moment's load for both
                    token = SECRETS["BENCH_ADMIN" if who == "admin" else "BENCH_READER"]
                    try:
                        times.setdefault((name, who), []).append(get(srv.url + path(ds, col), token))
                    except urllib.error.HTTPError as exc:
                        if exc.code != 404:  # the reader asking about a dataset it may not read: answered 404
                            raise
                        times.setdefault((name, who), []).append(float("nan"))
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"store {args.store}: {args.rounds} rounds, cores {os.cpu_count()}")
    print(f"{'route':18} {'admin p50':>10} {'admin p95':>10} {'reader p50':>11} {'reader p95':>11} {'p50 ratio':>10}")
    for name in routes:
        a = [t for t in times[(name, "admin")] if t == t]
        r = [t for t in times[(name, "reader")] if t == t]
        if not a or not r:
            continue
        print(f"{name:18} {statistics.median(a) * 1000:9.0f}ms {p95(a) * 1000:9.0f}ms "
              f"{statistics.median(r) * 1000:10.0f}ms {p95(r) * 1000:10.0f}ms {statistics.median(r) / statistics.median(a):9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
