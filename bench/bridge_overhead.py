"""Extra wall time of zero-code capture: the same spark-submit job with and without
``$(lineage-listener spark-conf --store ...)``, median of N runs each (interleaved, so
background load hits both sides alike).

    python bench/bridge_overhead.py [--runs 5] [--job examples/sample_job.py]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyspark

REPO = Path(__file__).resolve().parent.parent
SPARK_HOME = Path(pyspark.__file__).resolve().parent
BASE = ["--master", "local[2]", "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4"]


def capture_args(store: Path, code: Path = REPO) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "lineage_listener", "spark-conf", "--store", str(store)],
                         cwd=code, env={**os.environ, "PYTHONPATH": str(code)},
                         check=True, capture_output=True, text=True).stdout
    return out.split()


def run_once(job: Path, work: Path, extra: list[str], code: Path | None = None) -> float:
    """Wall seconds of one spark-submit of ``job``; ``code``: the repository the driver and the
    worker import ``lineage_listener`` from (default: the installed one)."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, **({"PYTHONPATH": str(code)} if code else {})}
    start = time.perf_counter()
    subprocess.run([str(SPARK_HOME / "bin" / "spark-submit"), *BASE, *extra, str(job), str(work / "out")],
                   cwd=work, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--job", type=Path, default=REPO / "examples" / "sample_job.py")
    ap.add_argument("--before", type=Path, help="a copy of the repository before a change: its capture is "
                    "measured in the same rounds")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bridge-bench-") as tmp:
        base = Path(tmp)
        store = base / "lineage.duckdb"
        conf = capture_args(store)  # builds the jar once, outside the timings
        plain: list[float] = []
        captured: list[float] = []
        before: list[float] = []
        for i in range(args.runs):
            plain.append(run_once(args.job, base / "plain", []))
            captured.append(run_once(args.job, base / "captured", conf))
            if args.before:
                before.append(run_once(args.job, base / "before", capture_args(base / "before.duckdb", args.before),
                                       args.before))
            print(f"run {i + 1}: without {plain[-1]:.2f} s, with capture {captured[-1]:.2f} s"
                  + (f", with the capture of {args.before} {before[-1]:.2f} s" if before else ""), flush=True)
        import duckdb

        with duckdb.connect(str(store), read_only=True) as con:
            edges = con.execute("SELECT count(*) FROM column_lineage").fetchone()[0]
            per_run = con.execute("SELECT count(*) / count(DISTINCT run_id) FROM queries").fetchone()[0]
    p, c = statistics.median(plain), statistics.median(captured)
    print(f"job: {args.job.name}, {args.runs} runs each, load average {os.getloadavg()[0]:.1f}")
    print(f"median without capture: {p:.2f} s")
    print(f"median with capture:    {c:.2f} s")
    print(f"extra wall time:        {c - p:+.2f} s ({(c / p - 1) * 100:+.1f} %), ratio {c / p:.3f}")
    print(f"edges in the store after all runs: {edges}; captured queries per run: {per_run:.0f}")
    if before:
        b = statistics.median(before)
        print(f"median with the capture of {args.before}: {b:.2f} s, ratio {b / p:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
