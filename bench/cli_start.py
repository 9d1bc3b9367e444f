"""How long the ``lineage-listener`` command takes to start: fresh processes, as a shell runs it.

    python bench/cli_start.py [--rounds 20] [--before CHECKOUT]

Each round runs, in a fresh Python process each (the console script's own two lines: import
``lineage_listener.cli``, call ``main``): ``python -c pass`` (the interpreter alone),
``lineage-listener --help`` and ``lineage-listener spark-conf --store /tmp/x.duckdb``. Rows give
the median and the least wall time and the median CPU time (user + system of the process) per
command. ``--before``: a copy of the repository before a change, measured in the same rounds in
rotating order, so the load of a shared machine falls on both; its rows are followed by the ratio
of the medians.

The target is 150 ms wall on an idle machine for ``--help`` and ``spark-conf``. On a busy one the
least wall time of many rounds is the nearest to idle, and the CPU time the least disturbed.
A warm-up round first writes the byte code of every module the commands import (into a
temporary ``PYTHONPYCACHEPREFIX``), as an installed Python and wheel have it.

>>> verdict(120.0), verdict(180.0)
('met (target 150 ms)', 'missed (target 150 ms)')
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_MS = 150.0
CONSOLE = "import sys\nfrom lineage_listener.cli import main\nsys.exit(main())"
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "lineage-listener --help": ["-c", CONSOLE, "--help"],
    "lineage-listener spark-conf": ["-c", CONSOLE, "spark-conf", "--store", "/tmp/x.duckdb"],
}


def verdict(ms: float) -> str:
    """Whether ``ms`` meets the start-up target."""
    return f"{'met' if ms <= TARGET_MS else 'missed'} (target {TARGET_MS:.0f} ms)"


def run_once(code: Path, args: list[str], cache: str) -> tuple[float, float]:
    """(wall ms, CPU ms) of one fresh process running ``args`` with ``code``'s package."""
    env = {**os.environ, "PYTHONPATH": str(code), "PYTHONPYCACHEPREFIX": cache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, cwd=cache)  # not a checkout
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0,):
        raise SystemExit(f"{args} failed with {code}: {done.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--before", type=Path, help="a checkout of the repository before a change")
    opts = parser.parse_args()
    codes = {"after": REPO, **({"before": opts.before.resolve()} if opts.before else {})}
    with tempfile.TemporaryDirectory() as cache:
        for code in codes.values():  # a warm-up round writes the byte code every command imports
            for args in COMMANDS.values():
                run_once(code, args, cache)
        samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
        order = list(codes.items())
        for n in range(opts.rounds):
            for label, code in order[n % len(order):] + order[:n % len(order)]:  # rotate who goes first
                for name, args in COMMANDS.items():
                    samples.setdefault((name, label), []).append(run_once(code, args, cache))
    print(f"{opts.rounds} rounds, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'command':30} {'code':7} {'median wall':>12} {'least wall':>11} {'median CPU':>11}")
    for name in COMMANDS:
        medians = {}
        for label in codes:
            walls = [w for w, _ in samples[(name, label)]]
            cpus = [c for _, c in samples[(name, label)]]
            medians[label] = statistics.median(walls), statistics.median(cpus)
            judged = f"  {verdict(min(walls))}" if name != "python -c pass" else ""
            print(f"{name:30} {label:7} {medians[label][0]:10.0f}ms {min(walls):9.0f}ms "
                  f"{medians[label][1]:9.0f}ms{judged}")
        if "before" in medians:
            print(f"{'':30} {'ratio':7} {medians['after'][0] / medians['before'][0]:11.2f}x "
                  f"{'':11} {medians['after'][1] / medians['before'][1]:10.2f}x")


if __name__ == "__main__":
    main()
