"""Extra wall time of zero-code capture: the same spark-submit job with and without
``$(lineage-listener spark-conf --store ...)``, median of N runs each (interleaved, so
background load hits both sides alike).

    python bench/bridge_overhead.py [--runs 5] [--job examples/sample_job.py | --queries 10] [--before DIR]

``--queries N`` runs ``bench/queries_job.py`` (N captured queries) instead of ``--job``. Each
repository measured is byte-compiled first, as an installed package is. After the medians it
prints where the captured runs spent their time, from the bridge's and the worker's log lines:
the worker's CPU seconds (to attach, in all), how long the application end waited for it, and
the drain that overlaps Spark's shutdown.
"""
from __future__ import annotations

import argparse
import compileall
import os
import re
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


#: The driver log lines the breakdown reads (the bridge logs at INFO, the worker with spark.lineage.logLevel).
MARKS = {
    "worker CPU to attach (s)": re.compile(r"worker: connected .*?, ([\d.]+) s CPU"),
    "worker CPU in all (s)": re.compile(r"worker: stopped; .*?, ([\d.]+) s CPU"),
    "application end waited (ms)": re.compile(r"application end waited (\d+) ms"),
    "drain beside Spark's stop (ms)": re.compile(r"drained in (\d+) ms"),
    # Spark's own line, written only when a listener holds its bus longer than 1 s
    "application end held Spark's listener bus (ms, when > 1 s)": re.compile(r"by\s*listener AppEndListener took ([\d.]+)\s*ms"),
}


def run_once(job: Path, work: Path, extra: list[str], code: Path | None = None,
             job_args: tuple[str, ...] = ()) -> tuple[float, str]:
    """Wall seconds and driver log of one spark-submit of ``job``; ``code``: the repository the
    driver and the worker import ``lineage_listener`` from (default: the installed one)."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, **({"PYTHONPATH": str(code)} if code else {})}
    log = work / "driver.log"
    start = time.perf_counter()
    with open(log, "w") as sink:
        subprocess.run([str(SPARK_HOME / "bin" / "spark-submit"), *BASE, *extra, str(job), str(work / "out"),
                        *job_args], cwd=work, env=env, check=True, stdout=subprocess.DEVNULL, stderr=sink)
    return time.perf_counter() - start, log.read_text(errors="replace")


def breakdown(logs: list[str]) -> dict[str, float]:
    """The median of each of :data:`MARKS` over the driver logs that have it."""
    found = {name: [float(m.group(1)) for text in logs for m in [pattern.search(text)] if m]
             for name, pattern in MARKS.items()}
    return {name: statistics.median(values) for name, values in found.items() if values}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--job", type=Path, default=REPO / "examples" / "sample_job.py")
    ap.add_argument("--queries", type=int, help="run bench/queries_job.py with this many captured queries")
    ap.add_argument("--before", type=Path, help="a copy of the repository before a change: its capture is "
                    "measured in the same rounds")
    args = ap.parse_args()
    job, job_args = args.job, ()
    if args.queries:
        job, job_args = REPO / "bench" / "queries_job.py", (str(args.queries),)
    for code in (REPO, args.before):
        if code:
            compileall.compile_dir(code / "lineage_listener", quiet=1)
    info = ["--conf", "spark.lineage.logLevel=INFO"]  # the worker's start and stop lines, for the breakdown
    with tempfile.TemporaryDirectory(prefix="bridge-bench-") as tmp:
        base = Path(tmp)
        store = base / "lineage.duckdb"
        conf = capture_args(store) + info  # builds the jar once, outside the timings
        plain: list[float] = []
        captured: list[float] = []
        before: list[float] = []
        logs: dict[str, list[str]] = {"captured": [], "before": []}
        arms = ["plain", "captured"] + (["before"] if args.before else [])
        for i in range(args.runs):
            # Each round rotates which arm runs first: the first job after a pause runs on a cooler
            # machine, and a fixed order would hand that to one arm every round.
            for arm in arms[i % len(arms):] + arms[:i % len(arms)]:
                if arm == "plain":
                    plain.append(run_once(job, base / "plain", [], job_args=job_args)[0])
                elif arm == "captured":
                    seconds, log = run_once(job, base / "captured", conf, job_args=job_args)
                    captured.append(seconds)
                    logs["captured"].append(log)
                else:
                    seconds, log = run_once(job, base / "before", capture_args(base / "before.duckdb", args.before)
                                            + info, args.before, job_args)
                    before.append(seconds)
                    logs["before"].append(log)
            print(f"run {i + 1}: without {plain[-1]:.2f} s, with capture {captured[-1]:.2f} s"
                  + (f", with the capture of {args.before} {before[-1]:.2f} s" if before else ""), flush=True)
        import duckdb

        with duckdb.connect(str(store), read_only=True) as con:
            edges = con.execute("SELECT count(*) FROM column_lineage").fetchone()[0]
            per_run = con.execute("SELECT count(*) / count(DISTINCT run_id) FROM queries").fetchone()[0]
    p, c = statistics.median(plain), statistics.median(captured)
    print(f"job: {job.name} {' '.join(job_args)}, {args.runs} runs each, load average {os.getloadavg()[0]:.1f}")
    print(f"median without capture: {p:.2f} s")
    print(f"median with capture:    {c:.2f} s")
    print(f"extra wall time:        {c - p:+.2f} s ({(c / p - 1) * 100:+.1f} %), ratio {c / p:.3f}")
    print(f"median of the rounds' own ratios: {statistics.median(x / y for x, y in zip(captured, plain)):.3f}")
    print(f"edges in the store after all runs: {edges}; captured queries per run: {per_run:.0f}")
    if before:
        b = statistics.median(before)
        print(f"median with the capture of {args.before}: {b:.2f} s, ratio {b / p:.3f}; median of the rounds' "
              f"own ratios {statistics.median(x / y for x, y in zip(before, plain)):.3f}")
    for side, texts in logs.items():
        for name, value in breakdown(texts).items():
            print(f"{side}: {name}: {value:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
