"""The bridge's fault-injection tests, N times in a row on a machine made busy on purpose.

Each run is one pytest session over the fault tests of ``tests/test_bridge_jobs.py`` (frozen,
killed, twice-killed, slow and hung workers, the bounded queue); every one of them asserts that
each event is captured exactly once or counted exactly. While the runs go, ``--burners`` extra
processes spin on the CPU (``python3 -c 'while True: pass'``); they are stopped at the end.
A failed run keeps its pytest temp dir (driver logs) and its output under ``--keep``.

    python bench/bridge_faults_soak.py [--runs 20] [--burners 2] [--keep /tmp/bridge-soak]

Prints one line per run, then ``passed runs: P/N``; the exit code is 0 only if every run passed.
"""
from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FAULT_TESTS = [
    "test_frozen_worker_is_detected_by_its_silence_and_replaced",
    "test_worker_killed_mid_run_loses_no_edges",
    "test_second_worker_death_counts_exactly",
    "test_events_before_a_slow_worker_are_queued_bounded_and_drops_reported",
    "test_a_busy_replacement_worker_is_not_taken_for_a_frozen_one",
    "test_a_worker_computing_without_releasing_the_gil_is_kept",
    "test_a_hung_worker_is_kept_while_the_job_runs_and_stopped_at_the_drain_deadline",
]


def outcomes(junit: Path) -> dict[str, str]:
    """``{test name: passed | failed | error | skipped}`` from a pytest JUnit XML report."""
    found: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        found[case.get("name", "?")] = {"failure": "failed"}.get(kinds[0], kinds[0]) if kinds else "passed"
    return found


def run_once(n: int, python: str, keep: Path, timeout: float) -> tuple[bool, str]:
    """One pytest session over the fault tests; True and a summary line when all passed."""
    work = keep / f"run{n:02d}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    junit = work / "junit.xml"
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(work / "tmp"),
           f"--junitxml={junit}", *[f"tests/test_bridge_jobs.py::{t}" for t in FAULT_TESTS]]
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
        output, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        output, code = f"pytest did not finish within {timeout:.0f} s\n{exc.stdout or ''}", -1
    took = time.monotonic() - started
    (work / "pytest.out").write_text(output)
    results = outcomes(junit) if junit.exists() else {}
    bad = sorted(name for name, outcome in results.items() if outcome != "passed")
    ok = code == 0 and not bad and len(results) == len(FAULT_TESTS)
    if ok:
        shutil.rmtree(work)
        return True, f"{len(results)} passed ({took:.0f} s)"
    return False, f"FAILED {', '.join(bad) or f'pytest exit {code}'} ({took:.0f} s; kept in {work})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--burners", type=int, default=2, help="extra CPU-burning processes while the runs go")
    ap.add_argument("--python", default=sys.executable, help="the Python whose pytest and PySpark to use")
    ap.add_argument("--keep", type=Path, default=Path("/tmp/bridge-soak"), help="where failed runs are kept")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds one run may take before it counts as failed")
    args = ap.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated soak still stops its burners
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)]
    passed = 0
    try:
        print(f"{len(FAULT_TESTS)} fault tests x {args.runs} runs, {len(burners)} CPU burners "
              f"(pids {' '.join(str(b.pid) for b in burners) or '-'})", flush=True)
        for n in range(1, args.runs + 1):
            ok, line = run_once(n, args.python, args.keep, args.timeout)
            passed += ok
            print(f"run {n:2d}/{args.runs}: {line}", flush=True)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    print(f"passed runs: {passed}/{args.runs}", flush=True)
    return 0 if passed == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
