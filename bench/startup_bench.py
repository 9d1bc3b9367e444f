"""What capture costs a short job, one-time costs included: every measurement in a FRESH Python
process with a new SparkSession (``local[2]``), as a user's job would run.

    python bench/startup_bench.py [--pairs 5] [--before CHECKOUT] [--skip-steady] [--steady-rounds 8]

``--before``: a copy of the repository before a change; its capture is measured in the same
rounds (fresh processes in rotating order), so the load of a shared machine falls on both.

The package's modules are byte-compiled first (into a temporary ``PYTHONPYCACHEPREFIX``), as
an installed wheel's are: with ``PYTHONDONTWRITEBYTECODE`` set, each fresh process would
otherwise compile every module it imports from source (~20 ms of ``enable()``'s CPU alone).
``--source`` measures that way instead.

Rows (medians; each line also gives the single values and the load average):

- ``enable()``: wall time (and the calling thread's CPU time and py4j round trips) of the first
  ``lineage_listener.enable(spark)`` in the process, including importing the capture modules;
  Spark's session state, built lazily by a session's first use, is built before;
- ``enable() -> first edges``: ``enable()`` plus, after the first query returned, the time until
  its edges are in the store (``flush()``); the first flush alone is printed too, and the second;
- ``mixed job, one-time costs included``: the mixed job of ``bench/capture_bench.py`` (two
  tables, 25 CTAS join + aggregate, 25 window collects), timed from after ``getOrCreate()`` to
  after ``disable()`` (the final flush), with and without capture, in alternating fresh processes:
  the wall-time ratio, and the ratio of the CPU time this Python process and the driver JVM used
  (less sensitive to other work on a shared machine: the job keeps both cores busy); each round's
  line gives the Python process's own CPU too, and what the run with capture stored (queries,
  ``capture_errors`` rows), so a round far off the others shows whether capture took another path;
- ``steady state``: in one process, after warm-up runs with capture on (``--steady-warm-ups``, 3:
  the job gets faster run after run at first), the same job without and with capture in rounds of
  alternating order (``--steady-rounds``, 8): each round's ratio, all rounds' wall times' ratio,
  their CPU's (the Python process and the driver JVM) and the CPU capture added to the Python
  process per job (its own threads: the capture thread, the write lane, py4j's callbacks).

Both ratio rows end with a verdict: the rounds' geometric mean ratio, its 95% confidence interval
(Student's t over the logarithms of the rounds' ratios), and whether the interval lies under the
target (met), over it (missed) or across it (not shown either way: more rounds, or a quieter
machine, would tell). On a shared machine single rounds spread by 10-20%; a median of a few rounds
moves by more than the targets' 2-5%.

``--before`` runs this script's own measurements with the other checkout's package.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

REPO = Path(__file__).resolve().parent.parent
#: The checkout whose package a measured process imports (``--before`` runs this script with another).
CODE = Path(os.environ.get("STARTUP_BENCH_CODE", REPO))
sys.path.insert(0, str(CODE))


def session(work: Path) -> Any:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("startup-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.warehouse.dir", str(work / "warehouse"))
             .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work}")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def mixed(spark: Any) -> list[tuple[str, Callable[[], None]]]:
    """The mixed job's tables (made now) and its queries: 25 CTAS (join + aggregate), 25 window collects."""
    spark.sql("CREATE DATABASE IF NOT EXISTS bench")
    spark.sql("USE bench")
    spark.range(2000).selectExpr("id", "id % 50 AS k", "cast(id * 7 % 1000 AS double) AS v",
                                 "concat('n', id % 97) AS s").write.mode("overwrite").saveAsTable("facts")
    spark.range(50).selectExpr("id AS k", "concat('dim', id) AS label").write.mode("overwrite").saveAsTable("dims")
    out: list[tuple[str, Callable[[], None]]] = []
    for i in range(25):
        def ctas(i: int = i) -> None:
            spark.sql(f"DROP TABLE IF EXISTS agg{i}")
            spark.sql(f"CREATE TABLE agg{i} USING parquet AS SELECT d.label, f.s, sum(f.v) AS total, "
                      f"count(*) AS n, max(f.id + {i}) AS top FROM facts f JOIN dims d ON f.k = d.k "
                      f"WHERE f.v > {i} GROUP BY d.label, f.s")
        out.append((f"ctas{i}", ctas))
    for i in range(25):
        def win(i: int = i) -> None:
            spark.sql(f"SELECT k, v, s, row_number() OVER (PARTITION BY k ORDER BY v DESC) AS rn, "
                      f"sum(v) OVER (PARTITION BY s ORDER BY id ROWS BETWEEN {i % 5 + 1} PRECEDING "
                      f"AND CURRENT ROW) AS moving FROM facts WHERE id % 25 = {i}").collect()
        out.append((f"window{i}", win))
    return out


def mixed_job(spark: Any) -> None:
    """The mixed job: its tables, then its 50 queries."""
    for _, query in mixed(spark):
        query()


def child(mode: str, work: Path, warm_ups: int = 3, rounds: int = 8) -> dict[str, Any]:
    """One measurement in this (fresh) process."""
    spark = session(work)
    store = work / "lineage.duckdb"
    out: dict[str, Any] = {}
    if mode == "first":
        spark._jsparkSession.sessionState()  # Spark's own lazy set-up, paid by a session's first use
        trips = _count_trips()
        start, cpu = time.perf_counter(), time.thread_time()
        import lineage_listener

        handle = lineage_listener.enable(spark, store=str(store))
        out["enable"] = time.perf_counter() - start
        out["enable_cpu"] = time.thread_time() - cpu
        out["enable_trips"] = trips[0]
        trips[1] = False
        for key in ("flush1", "flush2"):
            spark.range(5).selectExpr("id AS a", "id * 2 AS b").collect()
            start = time.perf_counter()
            handle.flush()
            out[key] = time.perf_counter() - start
        lineage_listener.disable(spark)
        out["edges"], = _counts(store, "column_lineage")
    elif mode in ("on", "off"):
        jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        start, cpu, own = time.perf_counter(), _cpu(jvm), time.process_time()
        if mode == "on":
            import lineage_listener

            lineage_listener.enable(spark, store=str(store))
        mixed_job(spark)
        if mode == "on":
            lineage_listener.disable(spark)
        out["wall"] = time.perf_counter() - start
        out["cpu"] = _cpu(jvm) - cpu
        out["python"] = time.process_time() - own
        if mode == "on":  # what was captured: an outlier round says whether capture took another path
            # (a plan read another way leaves a capture_errors row)
            out["queries"], out["errors"] = _counts(store, "queries", "capture_errors")
    elif mode == "steady":
        import lineage_listener

        for _ in range(warm_ups):  # capture on: its modules and the JIT's code for both sides
            lineage_listener.enable(spark, store=str(store))
            mixed_job(spark)
            lineage_listener.disable(spark)
        jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        walls: dict[str, list[float]] = {"on": [], "off": []}
        cpus: dict[str, list[float]] = {"on": [], "off": []}
        python: dict[str, list[float]] = {"on": [], "off": []}
        for i in range(rounds):  # alternating order: a trend run after run leans on both sides alike
            for side in (("off", "on"), ("on", "off"))[i % 2]:
                start, cpu, own = time.perf_counter(), _cpu(jvm), time.process_time()
                if side == "on":
                    lineage_listener.enable(spark, store=str(store))
                mixed_job(spark)
                if side == "on":
                    lineage_listener.disable(spark)
                walls[side].append(time.perf_counter() - start)
                cpus[side].append(_cpu(jvm) - cpu)
                python[side].append(time.process_time() - own)
        out["ratios"] = [on / off for on, off in zip(walls["on"], walls["off"])]
        out["walls"], out["cpus"], out["python"] = walls, cpus, python
    spark.stop()
    return out


def _count_trips() -> list[Any]:
    """Count the py4j round trips of this thread from now on: [count, counting] (set counting False to stop)."""
    from py4j import clientserver, java_gateway

    caller, state = threading.current_thread(), [0, True]
    for cls in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
        def send(self: Any, command: str, *args: Any, _send: Any = cls.send_command, **kwargs: Any) -> Any:
            if state[1] and threading.current_thread() is caller:
                state[0] += 1
            return _send(self, command, *args, **kwargs)
        cls.send_command = send
    return state


def _cpu(jvm: int) -> float:
    """CPU seconds used so far by this Python process and the driver JVM (user + system)."""
    ticks = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{jvm}/stat").read_text().rsplit(")", 1)[1].split()
    return time.process_time() + (int(fields[11]) + int(fields[12])) / ticks


def _counts(store: Path, *tables: str) -> list[int]:
    """Rows of each of ``tables`` in the store."""
    import duckdb

    with duckdb.connect(str(store), read_only=True) as con:
        return [con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables]


#: Extra environment of the measured processes (``PYTHONPYCACHEPREFIX`` once compiled).
ENV: dict[str, str] = {}


def byte_compile(codes: list[Path], prefix: Path) -> None:
    """Byte-compile each checkout's package into ``prefix``, read by the measured processes."""
    for code in codes:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "lineage_listener")], check=True,
                       env={**os.environ, "PYTHONPYCACHEPREFIX": str(prefix)}, stdout=subprocess.DEVNULL)
    ENV["PYTHONPYCACHEPREFIX"] = str(prefix)


def fresh(mode: str, code: Path = REPO, *extra: str) -> dict[str, Any]:
    """Run ``child(mode)`` of this script in a new Python process with the package from ``code``; its result."""
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        done = subprocess.run([sys.executable, str(REPO / "bench" / "startup_bench.py"), "--child", mode,
                               "--work", tmp, *extra], cwd=tmp,
                              env={**os.environ, **ENV, "PYTHONPATH": str(code), "STARTUP_BENCH_CODE": str(code)},
                              check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.0f} ms ({', '.join(f'{v * 1000:.0f}' for v in values)})"


def _ratios(values: list[float]) -> str:
    return f"{statistics.median(values):.3f}x ({', '.join(f'{r:.3f}' for r in values)})"


#: Student's t, two-sided 95%, by degrees of freedom (1-30; beyond, the normal's 1.96 is close enough).
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)


def interval(ratios: list[float]) -> tuple[float, float, float]:
    """The rounds' geometric mean ratio and its 95% confidence interval (Student's t over the
    logarithms: a round's ratio is as likely 10% over as 1/1.1 under).

    >>> mean, low, high = interval([1.0, 1.1, 1.2])
    >>> round(mean, 3), round(low, 3), round(high, 3)
    (1.097, 0.875, 1.376)
    >>> interval([1.05])
    (1.05, 0.0, inf)
    """
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), 0.0, math.inf
    t = _T95[len(logs) - 2] if len(logs) - 1 <= len(_T95) else 1.96
    half = t * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def verdict(ratios: list[float], target: float) -> str:
    """Whether the rounds show the target met, missed, or neither (its interval spans the target).

    >>> verdict([1.01, 1.0, 1.02, 1.01], 1.05)
    '1.010x, 95% interval 0.997-1.023: met (<= 1.05x)'
    >>> verdict([0.95, 1.12], 1.05).split(": ")[1]
    'not shown either way (<= 1.05x)'
    """
    mean, low, high = interval(ratios)
    said = ("met" if high <= target else "missed" if low > target
            else "not shown either way")
    return f"{mean:.3f}x, 95% interval {low:.3f}-{high:.3f}: {said} (<= {target}x)"


#: The targets a verdict is printed for: the whole mixed job from a fresh process, and the steady state.
MIXED_TARGET, STEADY_TARGET = 1.05, 1.02


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--before", type=Path, help="a checkout of the code before a change: measured alongside, "
                    "in alternation (the same load on both)")
    ap.add_argument("--skip-steady", action="store_true")
    ap.add_argument("--source", action="store_true", help="do not byte-compile the package first: each fresh "
                    "process compiles what it imports (as with PYTHONDONTWRITEBYTECODE and no installed .pyc)")
    ap.add_argument("--first-only", action="store_true", help="only the enable() and first-flush rows")
    ap.add_argument("--skip-first", action="store_true", help="without the enable() and first-flush rows")
    ap.add_argument("--steady-warm-ups", type=int, default=3, help="runs with capture before the steady state's "
                    "rounds: the job still gets faster run after run at first")
    ap.add_argument("--steady-rounds", type=int, default=8, help="steady-state rounds, each a run without and one "
                    "with capture, in alternating order")
    ap.add_argument("--child", choices=["first", "on", "off", "steady"])
    ap.add_argument("--work", type=Path)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.work, args.steady_warm_ups, args.steady_rounds)))
        return 0
    from lineage_listener.capture.reading import planreader

    planreader.install_default(background=False)  # build the jar once, outside the timings
    codes = {"after": REPO, "before": args.before} if args.before else {"now": REPO}
    pycache = tempfile.TemporaryDirectory(prefix="startup-bench-pyc-")
    if not args.source:
        byte_compile(list(codes.values()), Path(pycache.name))
    print(f"modules {'compiled on import' if args.source else 'byte-compiled first'}", flush=True)
    firsts: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
    for _ in range(0 if args.skip_first else args.pairs):
        for name, code in codes.items():
            firsts[name].append(fresh("first", code))
    for name, runs in firsts.items() if not args.skip_first else ():
        print(f"[{name}] enable(): {_ms([f['enable'] for f in runs])}, CPU of the calling thread "
              f"{_ms([f['enable_cpu'] for f in runs])}, py4j round trips {[f.get('enable_trips') for f in runs]}; first flush (first query's edges "
              f"stored): {_ms([f['flush1'] for f in runs])}; second flush: {_ms([f['flush2'] for f in runs])}; "
              f"enable() -> first edges: {_ms([f['enable'] + f['flush1'] for f in runs])}; edges stored: "
              f"{[f['edges'] for f in runs]}; load {os.getloadavg()[0]:.1f}", flush=True)
    if args.first_only:
        return 0
    ratios: dict[str, list[float]] = {name: [] for name in codes}
    cpu_ratios: dict[str, list[float]] = {name: [] for name in codes}
    for i in range(args.pairs):
        order = [("off", REPO), *[("on", code) for code in codes.values()]]
        order = order[i % len(order):] + order[:i % len(order)]
        runs = {(mode, code): fresh(mode, code) for mode, code in order}
        off = runs[("off", REPO)]
        for name, code in codes.items():
            ratios[name].append(runs[("on", code)]["wall"] / off["wall"])
            cpu_ratios[name].append(runs[("on", code)]["cpu"] / off["cpu"])
        print(f"round {i + 1}: without {off['wall']:.2f} s (cpu {off['cpu']:.2f} s, Python {off['python']:.2f} s), "
              + ", ".join(f"[{name}] with {run['wall']:.2f} s (cpu {run['cpu']:.2f} s, Python {run['python']:.2f} s; "
                          f"{run['queries']} queries, {run['errors']} capture errors)"
                          for name, run in ((name, runs[("on", code)]) for name, code in codes.items()))
              + f", load {os.getloadavg()[0]:.1f}", flush=True)
    for name in codes if args.pairs else ():
        print(f"[{name}] mixed job, fresh process, one-time costs included: wall {_ratios(ratios[name])}; "
              f"CPU of the Python process + driver JVM {_ratios(cpu_ratios[name])}; wall, all rounds: "
              f"{verdict(ratios[name], MIXED_TARGET)}", flush=True)
    if not args.skip_steady:
        for name, code in codes.items():
            steady = fresh("steady", code, "--steady-warm-ups", str(args.steady_warm_ups),
                           "--steady-rounds", str(args.steady_rounds))
            walls, cpus, python = steady["walls"], steady["cpus"], steady["python"]
            added = (sum(python["on"]) - sum(python["off"])) / len(python["on"])
            print(f"[{name}] steady state (after {args.steady_warm_ups} warm-up runs): {_ratios(steady['ratios'])}; "
                  f"all rounds' wall {sum(walls['on']) / sum(walls['off']):.3f}x (without: "
                  f"{', '.join(f'{w:.2f}' for w in walls['off'])} s); CPU of the Python process + driver JVM "
                  f"{sum(cpus['on']) / sum(cpus['off']):.3f}x (without: {', '.join(f'{c:.2f}' for c in cpus['off'])} s); "
                  f"the Python process's CPU added per job {added * 1000:.0f} ms; load {os.getloadavg()[0]:.1f}", flush=True)
            print(f"[{name}] steady state, all rounds: {verdict(steady['ratios'], STEADY_TARGET)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
