"""How a captured query travels through the package: the modules its trips enter.

For one real CTAS with a join and an aggregate, captured in process, every Python call made under
``Reader.read``, ``Recorder.record`` (the nested write) and ``Recorder.fold`` (the CTAS wrapper
folding into it) is followed (``sys.setprofile`` on the capture thread) and
reduced to the package modules it runs in. Printed per trip and per depth (2: the method's callees and
theirs; 3: one level more): the stays (consecutive calls in one module count once), the modules
entered, and the returns (entering a module the trip had left).

    python bench/trips.py [DEPTH ...]     (default: 2 3)
"""
from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

from pyspark.sql import SparkSession

import lineage_listener
from lineage_listener.capture import queryreader, records

PACKAGE = str(Path(lineage_listener.__file__).resolve().parent) + "/"
#: Per trip, per call of the traced method: the package modules entered, with the call depth.
TRIPS: dict[str, list[list[tuple[str, int]]]] = {"Reader.read": [], "Recorder.record": [], "Recorder.fold": []}
#: Depths reported: 2 follows the traced method's callees and theirs (the route, not every leaf helper).
DEPTHS = [int(a) for a in sys.argv[1:]] or [2, 3]


def module_of(filename: str) -> str | None:
    return filename[len(PACKAGE):-3] if filename.startswith(PACKAGE) and filename.endswith(".py") else None


def traced(name: str, fn):
    def wrapper(*args, **kwargs):
        seen: list[tuple[str, int]] = []
        depth = [0]

        def profile(frame, event, arg):  # noqa: ARG001
            if event == "call":
                depth[0] += 1
                m = module_of(frame.f_code.co_filename)
                if m and depth[0] <= max(DEPTHS):
                    seen.append((m, depth[0]))
            elif event == "return":
                depth[0] -= 1
        old = sys.getprofile()
        sys.setprofile(profile)
        try:
            return fn(*args, **kwargs)
        finally:
            sys.setprofile(old)
            TRIPS[name].append(seen)
    return wrapper


def stays(calls: list[tuple[str, int]], depth: int) -> list[str]:
    """The modules of ``calls`` up to ``depth``, consecutive calls in one module counted once."""
    out: list[str] = []
    for module, d in calls:
        if d <= depth and (not out or out[-1] != module):
            out.append(module)
    return out


def summary(stays: list[str]) -> tuple[int, int, int]:
    """(stays, modules entered, returns to a module left earlier)"""
    left: set[str] = set()
    returns = 0
    for before, now in zip(stays, stays[1:]):
        left.add(before)
        returns += now in left
    return len(stays), len(set(stays)), returns


def main() -> None:
    queryreader.Reader.read = traced("Reader.read", queryreader.Reader.read)
    records.Recorder.record = traced("Recorder.record", records.Recorder.record)
    records.Recorder.fold = traced("Recorder.fold", records.Recorder.fold)
    work = Path(tempfile.mkdtemp())
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false") \
        .config("spark.sql.warehouse.dir", str(work / "wh")).getOrCreate()
    spark.range(10).selectExpr("id", "id % 3 AS k", "id * 2 AS v").createOrReplaceTempView("facts")
    spark.range(3).selectExpr("id AS k", "concat('n', id) AS name").createOrReplaceTempView("dims")
    handle = lineage_listener.enable(spark, store=str(work / "lineage.duckdb"))
    spark.sql("CREATE TABLE summary USING parquet AS SELECT d.name, sum(f.v) AS total "
              "FROM facts f JOIN dims d ON f.k = d.k GROUP BY d.name")
    handle.flush(60)
    lineage_listener.disable(spark)
    spark.stop()
    for depth in DEPTHS:
        for name, trips in TRIPS.items():
            if not trips:
                print(f"depth {depth}: {name}: not called")
                continue
            longest = max((stays(t, depth) for t in trips), key=len)
            s, m, r = summary(longest)
            print(f"depth {depth}: {name}: {len(trips)} calls; the longest: {s} stays in {m} modules, {r} returns")
            print("   " + " -> ".join(longest))


if __name__ == "__main__":
    main()
