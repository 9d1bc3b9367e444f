"""A year of history: daily jobs captured again every day, written through the store's write path.

    python bench/history_bench.py --days 365 --jobs 300 --edges 1000 --out /tmp/lineage-year.duckdb

The world: ``--jobs`` jobs in pipelines of ``--layers`` layers (layer 0: raw files read
by path; each job writes one table of layer L from a table of layer L-1, a third of
them joining a second table of a lower layer), so depth-10 questions walk 10 real
hops. Each job writes ~``--edges`` ``column_lineage`` rows per run: key columns copied,
columns copied, derived from two inputs, aggregated, or conditional on a key, plus
dataset-level indirect edges (filter and join keys, ``target_column`` null) as capture
writes them. Every day every job runs once: a new Spark application (``run_id``), a new
``query_id``, one batch (runs, queries, datasets, dataset_columns, column_lineage rows)
written with ``write_batch`` as a capture would. From one day to the next 95% of jobs
are unchanged; 5% change some columns (another expression, another source column, a
new column); ``--new-per-week`` new jobs start each week (reading existing tables) and
as many leaf jobs retire. Day ``--days`` is today, so ``since 7d`` means the last week.

Measured (``--measure-at``, default day 30 and the last day): store size, write
throughput, and ``upstream``/``downstream`` at depth 10 (p50/p95) through the Python API
(``open_store(...)``) and the REST API of a real ``lineage-listener serve`` process,
over all time and over the last 7 days, from columns with a long history (jobs running
since day 1) and a short one (a job started in the last weeks). An exact time-window
check: one edge is captured on day 3 and day 30 only, and must be absent from a days
10-20 window (PASS/FAIL). ``--before CHECKOUT``: the Python API's questions go to this
checkout's package and that one's in turn (``bench/versions.py``), each timed (wall and CPU) and
every answer compared column for column; with ``--remeasure``, an A/B of the code on a store
built once.

Resumable: progress is kept beside the store (``<out>.progress.json``); running the
same command again continues after the last finished day (a day cut half-way is
written again: writes are idempotent). Deterministic for a given ``--seed``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.versions import Versions  # noqa: E402
from lineage_listener.query import open_store  # noqa: E402
from lineage_listener.store.batch import Batch  # noqa: E402
from lineage_listener.store.rows import row_of  # noqa: E402
from lineage_listener.store.connection import open_writable  # noqa: E402
from lineage_listener.store.upsert import commit_batch  # noqa: E402

LAYER_DBS = ("raw", "bronze", "staging", "clean", "conformed", "enriched", "silver", "joined", "agg", "gold",
             "marts", "reports", "exports", "serving", "extracts", "feeds")
KEYS = ("k0", "k1", "k2", "k3")
#: Columns a daily change never touches (the long-history and time-window probes use them).
STABLE = 6
#: The time-window probe: on these days only, column c2 of the probe job is copied from c5.
FLIP_DAYS = (3, 30)
TARGET_P95_MS = 300.0
TARGET_RATIO = 1.5


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


# -- the world -----------------------------------------------------------------------------


@dataclass
class Column:
    """One output column: how it is made (``shape``) and from which input column (``src``)."""

    name: str
    shape: str        # identity | derived | aggregate | conditional
    src: int          # index into the primary input's non-key columns
    variant: int = 0  # bumped when a daily change rewrites the expression


@dataclass
class Job:
    jid: int
    layer: int
    target: str
    primary: str
    secondary: str | None
    born: int                                   # first day it runs (1: since the start)
    columns: list[Column] = field(default_factory=list)
    retired: int | None = None                  # first day it no longer runs
    _rows: list[tuple] | None = None            # edge rows without query/run/time, cached

    def runs_on(self, day: int) -> bool:
        return self.born <= day and (self.retired is None or day < self.retired)


def columns_for(edges: int) -> int:
    """Non-key columns per table so that a job's run writes about ``edges`` edges.

    Shapes cycle identity, derived, identity, aggregate, conditional, derived, identity,
    conditional, identity, derived: 17 edges per 10 columns (see :func:`column_edges`);
    keys add 4 and dataset-level edges (filter, group by, join keys) about 3.

    >>> columns_for(1000)
    584
    """
    return max(STABLE + 4, round((edges - 7) / 1.7))


SHAPES = ("identity", "derived", "identity", "aggregate", "conditional", "derived", "identity", "conditional",
          "identity", "derived")


def evolve(columns: list[Column], rng: random.Random, change_rate: float = 0.05) -> str | None:
    """One day in the life of a job's columns: unchanged (``None``) with probability ``1 - change_rate``,
    else rewrite a few columns' expressions or sources, or add columns at the end (what happened).

    Columns below :data:`STABLE` never change and none is ever dropped (other jobs read them).

    >>> cols = [Column(f"c{i}", SHAPES[i % 10], i) for i in range(20)]
    >>> rng = random.Random(1)
    >>> days = [evolve(cols, rng) for _ in range(1000)]
    >>> unchanged = days.count(None); 930 < unchanged < 970   # about 95% of days
    True
    >>> sorted({d.split()[0] for d in days if d})
    ['added', 'rewrote']
    >>> all(c.variant == 0 and c.src == i for i, c in enumerate(cols[:STABLE]))
    True
    >>> len(cols) > 20 and [c.name for c in cols[:3]] == ["c0", "c1", "c2"]
    True
    """
    if rng.random() >= change_rate:
        return None
    if rng.random() < 0.3:
        n = rng.randint(1, 5)
        start = len(columns)
        for i in range(start, start + n):
            columns.append(Column(f"c{i}", SHAPES[i % len(SHAPES)], rng.randrange(0, start)))
        return f"added {n} columns"
    n = rng.randint(1, 10)
    for c in rng.sample(columns[STABLE:], min(n, len(columns) - STABLE)):
        if rng.random() < 0.5:
            c.variant += 1
        else:
            c.src += 1
    return f"rewrote {n} columns"


def column_edges(job: Job, c: Column, width: dict[str, int], flip: bool) -> list[tuple]:
    """The direct edges of one output column: (target column, source dataset, source column,
    transform, kind, expression, masking)."""
    p, s = job.primary, job.secondary or job.primary
    src = f"c{c.src % width[job.primary]}"
    other = f"c{c.src % width[s]}"
    v = f", {c.variant}" if c.variant else ""
    if flip:
        return [(c.name, p, "c5", "rename", "direct", "c5", False)]
    if c.shape == "identity":
        return [(c.name, p, src, "identity" if src == c.name else "rename", "direct", src, False)]
    if c.shape == "derived":
        masked = c.src % 50 == 7
        expr = f"sha2(concat({src}, {other}){v or ', 256'})" if masked else f"concat_ws('-', {src}, {other}{v})"
        return [(c.name, p, src, "derived", "direct", expr, masked), (c.name, s, other, "derived", "direct", expr,
                                                                       masked)]
    if c.shape == "aggregate":
        return [(c.name, p, src, "aggregate", "direct", f"sum({src}{v})" if not v else f"max({src})", False)]
    expr = f"CASE WHEN k2 > {c.variant} THEN {src} ELSE k3 END"
    return [(c.name, p, src, "conditional", "direct", expr, False), (c.name, p, "k2", "conditional", "direct",
                                                                     expr, False),
            (c.name, p, "k3", "conditional", "direct", expr, False)]


def job_rows(job: Job, width: dict[str, int], day: int, probe: int) -> list[tuple]:
    """Every edge row of one run of ``job`` (without query, run and time): cached until it changes."""
    flip = job.jid == probe and day in FLIP_DAYS
    if job._rows is not None and not flip and job.jid != probe:
        return job._rows
    t, p, s = job.target, job.primary, job.secondary
    rows = [(t, k, p, k, "identity", "direct", k, False) for k in KEYS]
    for c in job.columns:
        rows += [(t, *e) for e in column_edges(job, c, width, flip and c.name == "c2")]
    rows.append((t, None, p, "k0", "filter", "indirect", "k0 IS NOT NULL", False))
    if any(c.shape == "aggregate" for c in job.columns):
        rows.append((t, None, p, "k0", "group_by", "indirect", "k0", False))
    if s is not None:
        rows += [(t, None, p, "k1", "join", "indirect", "p.k1 = s.k1", False),
                 (t, None, s, "k1", "join", "indirect", "p.k1 = s.k1", False)]
    if job.jid != probe:
        job._rows = rows
    return rows


class World:
    """Jobs, tables and their widths on a given day; :meth:`advance` moves to the next day."""

    def __init__(self, jobs: int, edges: int, layers: int, seed: int, change_rate: float,
                 new_per_week: int) -> None:
        self.seed, self.change_rate, self.new_per_week, self.layers = seed, change_rate, new_per_week, layers
        rng = random.Random(f"{seed}:world")
        ncols = columns_for(edges)
        self.raw = [f"s3a://landing/feed{i:03d}" for i in range(max(2, jobs // layers))]
        self.width: dict[str, int] = {r: ncols for r in self.raw}
        self.by_layer: dict[int, list[str]] = {0: list(self.raw)}
        self.jobs: list[Job] = []
        # every table below the top layer is some job's primary input: pipelines 12 layers deep
        per_layer: dict[int, list[int]] = {}
        for jid in range(jobs):
            per_layer.setdefault(1 + jid % layers, []).append(jid)
        for layer in range(1, layers + 1):
            below = list(self.by_layer[layer - 1])
            rng.shuffle(below)
            for k, jid in enumerate(per_layer.get(layer, [])):
                self._add_job(rng, jid, layer, born=1, ncols=ncols, primary=below[k % len(below)])
        self.day = 0
        # probes: the window flip on a mid-pipeline job; long-history starts are original jobs
        self.probe = next(j.jid for j in self.jobs if j.layer == max(1, layers // 2))
        self.ncols = ncols

    def _add_job(self, rng: random.Random, jid: int, layer: int, born: int, ncols: int,
                 primary: str | None = None) -> Job:
        db = LAYER_DBS[layer % len(LAYER_DBS)] + (f"{layer // len(LAYER_DBS)}" if layer >= len(LAYER_DBS) else "")
        target = f"spark_catalog.{db}.t{jid:04d}"
        primary = primary or rng.choice(self.by_layer[layer - 1])
        secondary = None
        if rng.random() < 0.35:
            lower = rng.randint(max(0, layer - 3), layer - 1)
            secondary = rng.choice(self.by_layer[lower])
        job = Job(jid, layer, target, primary, secondary, born,
                  [Column(f"c{i}", SHAPES[i % len(SHAPES)], i) for i in range(ncols)])
        self.jobs.append(job)
        self.by_layer.setdefault(layer, []).append(target)
        self.width[target] = ncols
        return job

    def advance(self) -> list[str]:
        """Move to the next day: changes, new and retired jobs. What happened, for the log."""
        self.day += 1
        day, notes = self.day, []
        if day == 1:
            return notes
        rng = random.Random(f"{self.seed}:day:{day}")
        for job in self.jobs:
            if job.runs_on(day) and job.jid != self.probe:
                if evolve(job.columns, rng, self.change_rate):
                    job._rows = None
                    self.width[job.target] = len(job.columns)
        # new jobs on a few days of the week, deep in the pipeline (reading existing tables)
        starts = [d for d in range(7) if d < self.new_per_week] if self.new_per_week <= 7 else list(range(7))
        if (day % 7) in starts:
            for _ in range(max(1, self.new_per_week // 7)):
                layer = rng.randint(max(1, self.layers // 2), self.layers)
                job = self._add_job(rng, len(self.jobs), layer, born=day, ncols=self.ncols)
                notes.append(f"new job {job.target}")
                # half the time a job of the layer above starts joining the new table
                above = [j for j in self.jobs if j.runs_on(day) and j.layer == layer + 1 and j.jid != self.probe]
                if above and rng.random() < 0.5:
                    reader = rng.choice(above)
                    reader.secondary, reader._rows = job.target, None
                    notes.append(f"{reader.target} joins it")
                readers = {j.primary for j in self.jobs if j.runs_on(day)} | {
                    j.secondary for j in self.jobs if j.runs_on(day)}
                leaves = [j for j in self.jobs if j.born == 1 and j.runs_on(day) and j.target not in readers
                          and j.jid != self.probe and j.layer < self.layers - 1]
                if leaves:
                    old = rng.choice(leaves)
                    old.retired = day
                    notes.append(f"retired {old.target}")
        return notes

    def running(self) -> list[Job]:
        return [j for j in self.jobs if j.runs_on(self.day)]


#: Day ``--days`` (kept in the progress file, so that a resumed run keeps its dates).
TODAY = datetime.now(timezone.utc).replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)


def day_start(day: int, days: int) -> datetime:
    """Midnight (UTC, naive as the store keeps it) of ``day``; day ``days`` is :data:`TODAY`."""
    return TODAY - timedelta(days=days - day)


def iso(t: datetime) -> str:
    return t.isoformat(sep=" ")


def job_batch(world: World, job: Job, day: int, days: int) -> Batch:
    """One run of ``job`` on ``day`` as capture writes it: a batch of runs, queries, datasets,
    dataset_columns and column_lineage rows."""
    at = day_start(day, days) + timedelta(hours=1, seconds=10 * job.jid)
    now = iso(at)
    app = f"application_1700000000000_{day:03d}{job.jid:05d}"
    qid = f"{app}:3:{(hash((world.seed, day, job.jid)) & 0xffffffff):08x}"
    rows = []
    rows.append(row_of("runs", (app, app, f"etl_{job.target.rsplit('.', 1)[-1]}", "4.1.0", "etl", "yarn",
                   iso(at - timedelta(minutes=5)), iso(at + timedelta(minutes=1)))))
    rows.append(row_of("queries", (qid, app, "command", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None, 240_000,
                      now, job.target)))
    for ds in (job.primary, job.secondary, job.target):
        if ds is None:
            continue
        raw = ds.startswith("s3a:")
        rows.append(row_of("datasets", (ds, "path" if raw else "table", "csv" if raw else "parquet",
                           ds if raw else "s3a://warehouse/" + ds.split(".", 1)[1].replace(".", ".db/"), "{}",
                           now, now)))
    for ds in (job.primary, job.secondary):
        if ds is not None:
            for i, k in enumerate(KEYS):
                rows.append(row_of("dataset_columns", (ds, k, "bigint", False, now, now, i + 1)))
            for i in range(world.width[ds]):
                rows.append(row_of("dataset_columns", (ds, f"c{i}", "string", True, now, now, len(KEYS) + i + 1)))
    for i, k in enumerate(KEYS):
        rows.append(row_of("dataset_columns", (job.target, k, "bigint", False, now, now, i + 1)))
    for i, c in enumerate(job.columns):
        rows.append(row_of("dataset_columns", (job.target, c.name, "string", True, now, now, len(KEYS) + i + 1)))
    for r in job_rows(job, world.width, day, world.probe):
        rows.append(row_of("column_lineage", (qid, app, *r, now)))
    b = Batch()
    b.add_all(rows)  # redacted once per distinct text
    return b


# -- measuring ---------------------------------------------------------------------------


def store_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(str(path) + ".wal")) if p.exists())


def start_points(world: World, n: int, seed: int) -> dict[str, list[tuple[str, str, str]]]:
    """(direction, dataset, column) starts: ``long`` from jobs running since day 1 (deep
    upstream from the last layers, deep downstream from the first), ``short`` from jobs
    started in the last four weeks (their columns' history is that short)."""
    rng = random.Random(f"{seed}:starts:{world.day}")
    running = world.running()
    deep = [j for j in running if j.born == 1 and j.layer >= world.layers - 1 and j.jid != world.probe]
    shallow = [j for j in running if j.born == 1 and j.layer <= 2 and j.jid != world.probe]
    young = [j for j in running if 1 < j.born and world.day - j.born <= 28]
    young_shallow = [j for j in running if j.born > 1]
    out: dict[str, list[tuple[str, str, str]]] = {"long": [], "short": []}
    for k in range(n):
        col = f"c{rng.randrange(1, STABLE)}" if k % 2 else f"c{rng.randrange(STABLE, world.ncols)}"
        out["long"].append(("upstream", rng.choice(deep).target, col))
        out["long"].append(("downstream", rng.choice(shallow).target, col))
        if young:
            out["short"].append(("upstream", rng.choice(young).target, col))
            read = {j.primary for j in running} | {j.secondary for j in running}
            out["short"].append(("downstream", rng.choice([j for j in young if j.target in read] or young).target,
                                 col))
        elif young_shallow:
            out["short"].append(("upstream", rng.choice(young_shallow).target, col))
    return out


def rest_lineage(url: str, direction: str, dataset: str, column: str, depth: int, since: str | None,
                 until: str | None = None) -> dict:
    q = {"maxLevels": depth, "direction": "backward" if direction == "upstream" else "forward"}
    if since:
        q["start"] = since
    if until:
        q["end"] = until
    full = (f"{url}/v3/namespaces/default/datasets/{urllib.parse.quote(dataset, safe='')}/columns/"
            f"{urllib.parse.quote(column, safe='')}/lineage?{urllib.parse.urlencode(q)}")
    with urllib.request.urlopen(full, timeout=600) as r:
        return json.loads(r.read())


def window_check(world: World, days: int, store, url: str) -> dict[str, str]:
    """The edge (p.c5 -> t.c2) of the probe job exists on days 3 and 30 only: a days 10-20 window
    must not have it, windows around day 3 and day 30 must (Python API and REST)."""
    job = next(j for j in world.jobs if j.jid == world.probe)
    src, tgt = (job.primary, "c5"), (job.target, "c2")

    def bound(day: int, end: bool = False) -> str:
        t = day_start(day, days) + (timedelta(days=1, microseconds=-1) if end else timedelta())
        return t.isoformat()

    cases = {"days 10-20 (absent)": (10, 20, False), "days 1-5 (present)": (1, 5, True),
             "days 25-35 (present)": (25, 35, True), "days 4-29 (absent)": (4, 29, False)}
    out = {}
    for name, (lo, hi, want) in cases.items():
        g = store.upstream(tgt[0], tgt[1], depth=1, since=bound(lo), until=bound(hi, True))
        py = g.has_edge(src, tgt)
        body = rest_lineage(url, "upstream", tgt[0], tgt[1], 1, bound(lo), bound(hi, True))
        rest = any((e["source"]["dataset"], e["source"]["column"]) == src and
                   (e["target"]["dataset"], e["target"]["column"]) == tgt for e in body["edges"])
        out[name] = "PASS" if py == want and rest == want else f"FAIL (python {py}, rest {rest}, want {want})"
    return out


def measure(path: Path, world: World, days: int, samples: int, depth: int, seed: int,
            before: Path | None = None) -> dict:
    """p50/p95 of depth-``depth`` questions (Python API and REST), all time and last 7 days; with
    ``before``, the Python API's also of that checkout's code, in turn (``res["before"]``)."""
    from tests.server_helpers import Server  # the benches share the test suite's server launcher

    day = world.day
    since = day_start(day - 6, days).isoformat()  # the last 7 days (at the last day: `--since 7d`)
    starts = start_points(world, samples, seed)
    store = open_store(path)
    srv = Server(path, token=None).start(timeout=600)
    res: dict = {"day": day, "bytes": store_bytes(path), "since_7d": since, "series": {}}
    versions = Versions(path, before) if before is not None else None
    if versions is not None:
        res["before"] = {}
    try:
        for history, points in starts.items():
            for direction in ("upstream", "downstream"):
                pts = [p for p in points if p[0] == direction]
                if not pts:
                    continue
                for window in ("all", "7d"):
                    s = since if window == "7d" else None
                    for api in ("python", "rest"):
                        key = f"{history} {direction} {window} {api}"
                        if api == "python" and versions is not None:
                            ab(versions, res, key, [{"ask": direction, "dataset": dataset, "column": column,
                                                     "depth": depth, "since": s} for _, dataset, column in pts])
                            continue
                        times, sizes = [], []
                        for _, dataset, column in pts:
                            t0 = time.perf_counter()
                            if api == "python":
                                g = getattr(store, direction)(dataset, column, depth=depth, since=s)
                                n = g.number_of_edges()
                            else:
                                n = len(rest_lineage(srv.url, direction, dataset, column, depth, s)["edges"])
                            times.append((time.perf_counter() - t0) * 1000)
                            sizes.append(n)
                        res["series"][key] = {"p50": statistics.median(times), "p95": p95(times),
                                              "n": len(times), "edges_median": statistics.median(sizes),
                                              "edges_max": max(sizes)}
                        r = res["series"][key]
                        print(f"  day {day:3d} {key:34s} p50 {r['p50']:8.1f} ms  p95 {r['p95']:8.1f} ms  "
                              f"(graph edges median {r['edges_median']:.0f}, max {r['edges_max']}; n={r['n']})",
                              flush=True)
        if day >= max(FLIP_DAYS):
            res["window"] = window_check(world, days, store, srv.url)
            for name, verdict in res["window"].items():
                print(f"  day {day:3d} exact window {name}: {verdict}", flush=True)
        if versions is not None:
            res["verdict"] = versions.verdict()
            print(f"  day {day:3d} {res['verdict']}", flush=True)
    finally:
        if versions is not None:
            versions.close()
        srv.stop()
        store.close()
    return res


def ab(versions: Versions, res: dict, key: str, questions: list[dict]) -> None:
    """One series asked of each version in turn: this checkout's in ``res["series"]``, the other's in
    ``res["before"]`` (wall and CPU p50/p95)."""
    ms: dict[str, list[float]] = {n: [] for n in versions.names}
    cpu: dict[str, list[float]] = {n: [] for n in versions.names}
    sizes = []
    for q in questions:
        replies = versions.ask(q)
        for name, r in replies.items():
            ms[name].append(r["ms"])
            cpu[name].append(r["cpu_ms"])
        sizes.append(len(replies["now"]["answer"]["edges"]))
    for name in versions.names:
        into = res["series"] if name == "now" else res["before"]
        into[key] = {"p50": statistics.median(ms[name]), "p95": p95(ms[name]), "cpu_p50": statistics.median(cpu[name]),
                     "cpu_p95": p95(cpu[name]), "n": len(ms[name]), "edges_median": statistics.median(sizes),
                     "edges_max": max(sizes)}
        r = into[key]
        print(f"  day {res['day']:3d} {key:34s} {name:6s} p50 {r['p50']:8.1f} ms  p95 {r['p95']:8.1f} ms  "
              f"(CPU p50 {r['cpu_p50']:7.1f}, p95 {r['cpu_p95']:7.1f} ms; graph edges median "
              f"{r['edges_median']:.0f}, max {r['edges_max']}; n={r['n']})", flush=True)


# -- driving -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--jobs", type=int, default=300, help="daily jobs")
    ap.add_argument("--edges", type=int, default=1000, help="edges per job run (about)")
    ap.add_argument("--layers", type=int, default=12, help="pipeline layers above the raw files")
    ap.add_argument("--change-rate", type=float, default=0.05, help="share of jobs changing columns each day")
    ap.add_argument("--new-per-week", type=int, default=3, help="new jobs a week (as many leaf jobs retire)")
    ap.add_argument("--measure-at", default="30,last", help="days to measure at (comma separated; 'last')")
    ap.add_argument("--stop-after", type=int, default=None,
                    help="generate up to this day only (then resume with the same command)")
    ap.add_argument("--group", type=int, default=1,
                    help="job runs per write_batch (1: one batch per query, as capture writes; more: as a "
                         "server grouping commits would)")
    ap.add_argument("--samples", type=int, default=10, help="start columns per series")
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=Path("/tmp/lineage-year.duckdb"))
    ap.add_argument("--fresh", action="store_true", help="start over even if progress exists")
    ap.add_argument("--before", type=Path, help="a checkout of the code before a change: its Python API timed in "
                                                "turn with this one's, every answer compared")
    ap.add_argument("--remeasure", action="store_true",
                    help="write nothing: measure the store again at its last finished day (this checkout's code, "
                         "the machine's load now) and report")
    args = ap.parse_args(argv)
    path: Path = args.out.expanduser().absolute()
    params = {k: getattr(args, k) for k in ("days", "jobs", "edges", "layers", "change_rate", "new_per_week",
                                            "seed")}
    progress_file = Path(str(path) + ".progress.json")
    progress = json.loads(progress_file.read_text()) if progress_file.exists() and not args.fresh else None
    if progress is not None and progress["params"] != params:
        print(f"{progress_file} was made with other parameters {progress['params']}: use --fresh", file=sys.stderr)
        return 2
    global TODAY
    if progress is None:
        for p in (path, Path(str(path) + ".wal")):
            p.unlink(missing_ok=True)
        progress = {"params": params, "today": TODAY.isoformat(), "days_done": 0, "rows": 0, "write_seconds": 0.0,
                    "per_day": [], "measures": {}}
    TODAY = datetime.fromisoformat(progress["today"])
    measure_at = sorted({args.days if m.strip() == "last" else int(m) for m in args.measure_at.split(",")})
    stop = min(args.days, args.stop_after or args.days)

    world = World(args.jobs, args.edges, args.layers, args.seed, args.change_rate, args.new_per_week)
    t_replay = time.perf_counter()
    while world.day < progress["days_done"]:
        world.advance()
    if progress["days_done"]:
        print(f"resuming {path} after day {world.day} ({progress['rows']:,} edge rows written; world replayed "
              f"in {time.perf_counter() - t_replay:.1f} s)", flush=True)
    print(f"{sum(j.born == 1 for j in world.jobs)} jobs, {world.ncols + len(KEYS)} columns a table, "
          f"{args.layers} layers; writing to {path}", flush=True)

    if args.remeasure:
        progress["measures"][str(world.day)] = measure(path, world, args.days, args.samples, args.depth, args.seed,
                                                    args.before)
        progress_file.write_text(json.dumps(progress))
        report(progress, path)
        return 0
    con = None
    try:
        while world.day < stop:
            notes = world.advance()
            day = world.day
            if con is None:
                con = open_writable(path)
            rows, built, t0 = 0, 0.0, time.perf_counter()
            running = world.running()
            for i in range(0, len(running), args.group):
                t1 = time.perf_counter()
                batch = Batch()
                for job in running[i:i + args.group]:
                    batch.extend(job_batch(world, job, day, args.days))
                built += time.perf_counter() - t1
                rows += len(batch.rows["column_lineage"])
                commit_batch(con, batch)
            spent = time.perf_counter() - t0
            progress["build_seconds"] = progress.get("build_seconds", 0.0) + built
            progress["days_done"], progress["rows"] = day, progress["rows"] + rows
            progress["write_seconds"] += spent
            progress["per_day"].append([day, rows, spent, args.group])
            progress_file.write_text(json.dumps(progress))
            print(f"day {day:3d}: {rows:,} edge rows in {spent:.1f} s ({rows / spent:,.0f} rows/s, "
                  f"{100 * built / spent:.0f}% of it building batches); total "
                  f"{progress['rows']:,} rows, {progress['rows'] / progress['write_seconds']:,.0f} rows/s "
                  f"overall; {store_bytes(path) / 1e6:,.0f} MB" + (f"; {', '.join(notes)}" if notes else ""),
                  flush=True)
            if day in measure_at and str(day) not in progress["measures"]:
                con.close()
                con = None
                progress["measures"][str(day)] = measure(path, world, args.days, args.samples, args.depth,
                                                         args.seed, args.before)
                progress_file.write_text(json.dumps(progress))
    finally:
        if con is not None:
            con.close()
    report(progress, path)
    return 0


def report(progress: dict, path: Path) -> None:
    """The summary: size, throughput, latencies per measured day, ratios, window checks."""
    per_day = progress["per_day"]
    print(f"\n== a year of history: {progress['params']}")
    print(f"written: {progress['days_done']} days, {progress['rows']:,} edge rows in "
          f"{progress['write_seconds']:,.0f} s = {progress['rows'] / max(progress['write_seconds'], 1e-9):,.0f} "
          f"rows/s; store {store_bytes(path) / 1e6:,.0f} MB ({store_bytes(path) / max(progress['rows'], 1):.1f} "
          f"bytes per edge row); {100 * progress.get('build_seconds', 0) / max(progress['write_seconds'], 1e-9):.0f}% "
          f"of the time building batches (Python rows, redaction), the rest in write_batch")
    if len(per_day) >= 2:
        k = min(10, len(per_day) // 2)
        def rate(days: list) -> str:
            groups = sorted({d[3] if len(d) > 3 else 1 for d in days})
            return (f"days {days[0][0]}-{days[-1][0]} {sum(d[1] for d in days) / sum(d[2] for d in days):,.0f} "
                    f"rows/s ({'/'.join(map(str, groups))} runs a batch)")
        print(f"write throughput: {rate(per_day[:k])}, {rate(per_day[-k:])}")
    measures = progress["measures"]
    days = sorted(int(d) for d in measures)
    for d in days:
        m = measures[str(d)]
        worst = max(s["p95"] for s in m["series"].values())
        print(f"day {d}: store {m['bytes'] / 1e6:,.0f} MB; worst p95 {worst:,.0f} ms "
              f"({'meets' if worst < TARGET_P95_MS else 'misses'} the {TARGET_P95_MS:.0f} ms target)")
        if m.get("before"):
            print(f"day {d}: before (--before, Python API): worst p95 {max(s['p95'] for s in m['before'].values()):,.0f} "
                  f"ms; {m['verdict']}")
        for name, verdict in m.get("window", {}).items():
            print(f"day {d}: exact window {name}: {verdict}")
    if len(days) >= 2:
        base = 30 if 30 in days[:-1] else days[0]  # the target's comparison: day 365 against day 30
        a, b = measures[str(base)], measures[str(days[-1])]
        print(f"day {days[-1]} / day {base} (p95):")
        ratios = []
        for key, s in b["series"].items():
            if key in a["series"]:
                ratio = s["p95"] / max(a["series"][key]["p95"], 1e-9)
                ratios.append(ratio)
                print(f"  {key:34s} {a['series'][key]['p95']:8.1f} -> {s['p95']:8.1f} ms  x{ratio:.2f}")
        if ratios:
            print(f"worst ratio x{max(ratios):.2f} ({'within' if max(ratios) <= TARGET_RATIO else 'beyond'} "
                  f"the {TARGET_RATIO}x target)")


if __name__ == "__main__":
    sys.exit(main())
