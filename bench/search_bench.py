"""The search the UI's box and search page ask (``/api/search``): time per answer over HTTP.

    python bench/make_synthetic_store.py /tmp/lineage-10m.duckdb --edges 10000000
    python bench/search_bench.py /tmp/lineage-10m.duckdb --runs 10

Each query is asked as the search box asks it while typing (``limit=6``) and as the search page does
(``what=all&limit=50``); the median and the slowest of ``--runs`` answers are printed with how many
datasets and columns matched. The default queries cover an exact name, a prefix, a substring, a word
with a typo and one matching nothing; ``--q`` asks others.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.server_helpers import Server  # noqa: E402

QUERIES = ("t7995", "t799", "db35", "atalog.db3", "custmer", "zzzzqqq")


def ask(url: str) -> tuple[float, dict]:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as r:
        body = json.loads(r.read())
    return time.perf_counter() - t, body


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--q", action="append", help="a query to time (repeatable); default: a fixed mix")
    args = ap.parse_args()
    srv = Server(Path(args.store)).start(timeout=300)
    try:
        ask(f"{srv.url}/api/search?q=warm&limit=6")  # first connection, caches
        for q in args.q or QUERIES:
            for label, params in (("box", {"q": q, "limit": 6}), ("page", {"q": q, "what": "all", "limit": 50})):
                url = f"{srv.url}/api/search?{urllib.parse.urlencode(params)}"
                times, body = [], {}
                for _ in range(args.runs):
                    took, body = ask(url)
                    times.append(took)
                print(f"search {q!r:14} ({label}): median {statistics.median(times) * 1000:6.0f} ms, "
                      f"max {max(times) * 1000:6.0f} ms; {body['datasets_total']:,} datasets, "
                      f"{body['columns_total']:,} columns")
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
