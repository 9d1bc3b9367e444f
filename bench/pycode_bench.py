"""What reading a Python function costs capture: a 50-line pandas function, read from its pickled
command as the walk reads it (no Spark).

    python bench/pycode_bench.py [--runs 50]

Prints the median and worst time of a first read (nothing kept: the command unpickled, the source
file parsed, the function followed) and of a read of a command read before (kept by its digest,
as a job that runs the same function in every query reads it); and the same for PySpark's own
examples (``tests/pycode_corpus.py``). A first read of the 50-line function is to stay under 20 ms.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402
from pyspark import cloudpickle  # noqa: E402

from lineage_listener import pycode  # noqa: E402
from lineage_listener.pycode import reading, source  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # as a job's functions are


def enrich(batches):  # 50 lines, as a team's mapInPandas step might be
    """Orders with their customer's domain, a size band and a cleaned country, per batch."""
    bands = {"small": 10.0, "medium": 100.0, "large": 1000.0}
    for pdf in batches:
        if pdf.empty:
            continue
        pdf = pdf[pdf["amount"].notna()].copy()
        pdf["email"] = pdf["email"].str.strip().str.lower()
        pdf["domain"] = pdf["email"].str.split("@").str[1]
        pdf["country"] = pdf["country"].fillna("unknown").str.upper()
        band = []
        for value in pdf["amount"]:
            if value < bands["small"]:
                band.append("small")
            elif value < bands["medium"]:
                band.append("medium")
            elif value < bands["large"]:
                band.append("large")
            else:
                band.append("huge")
        pdf["band"] = band
        pdf["net"] = pdf["amount"] - pdf["discount"].fillna(0.0)
        pdf["vat"] = pdf["net"] * 0.2
        pdf["gross"] = pdf["net"] + pdf["vat"]
        totals = pdf.groupby("customer_id")["gross"].sum().rename("customer_total")
        pdf = pdf.merge(totals, left_on="customer_id", right_index=True, how="left")
        pdf["share"] = pdf["gross"] / pdf["customer_total"]
        flagged = pdf["share"] > 0.5
        pdf.loc[flagged, "band"] = "dominant"
        pdf["order_day"] = pd.to_datetime(pdf["ordered_at"]).dt.date
        pdf["weekday"] = pd.to_datetime(pdf["ordered_at"]).dt.day_name()
        pdf["is_weekend"] = pdf["weekday"].isin(["Saturday", "Sunday"])
        pdf["note"] = pdf["note"].fillna("").str.slice(0, 200)
        keep = ["order_id", "customer_id", "domain", "country", "band", "net", "vat", "gross",
                "share", "order_day", "weekday", "is_weekend", "note"]
        out = pdf[keep]
        out = out.rename(columns={"note": "comment"})
        if len(out) == 0:
            continue
        yield out


INPUTS = ("order_id", "customer_id", "email", "country", "amount", "discount", "ordered_at", "note")
OUTPUTS = ("order_id", "customer_id", "domain", "country", "band", "net", "vat", "gross", "share", "order_day",
           "weekday", "is_weekend", "comment")


def timed(fn, runs: int, cold: bool) -> tuple[list[float], list[float]]:
    """``(cpu, wall)`` milliseconds of each run (CPU: this thread's, which the load does not inflate)."""
    cpu, wall = [], []
    for _ in range(runs):
        if cold:
            reading._CACHE.clear()
            source._PARSED.clear()
            source._BY_LINE.clear()
        t, c = time.perf_counter(), time.thread_time()
        fn()
        cpu.append((time.thread_time() - c) * 1000)
        wall.append((time.perf_counter() - t) * 1000)
    return cpu, wall


def line(name: str, times: tuple[list[float], list[float]], per: int = 1) -> str:
    cpu, wall = ([t / per for t in x] for x in times)
    return (f"{name:<44} CPU median {statistics.median(cpu):7.2f} ms, max {max(cpu):7.2f} ms;"
            f" wall median {statistics.median(wall):7.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    command = cloudpickle.dumps((enrich, None))
    shape = pycode.Shape("map", INPUTS, OUTPUTS)
    found = pycode.read(command, shape)
    print(f"enrich: {enrich.__code__.co_firstlineno}..{enrich.__code__.co_firstlineno + 49}, "
          f"{len(command)} bytes pickled, read {found.status}")
    print(line("50-line function, first read", timed(lambda: pycode.read(command, shape), args.runs, True)))
    print(line("50-line function, read before (kept)", timed(lambda: pycode.read(command, shape), args.runs, False)))
    from tests.pycode_corpus import CASES
    pure = [c for c in CASES if c.kind != "rdd"]
    payloads = [(cloudpickle.dumps((c.fn, None)), pycode.Shape(c.kind, tuple(
        i.split(".", 1)[1] if i[:2] in ("k.", "l.", "r.") else i for i in c.inputs), c.outputs, c.frames, c.arrow))
        for c in pure]

    def corpus() -> None:
        for p, s in payloads:
            pycode.read(p, s)
    print(line(f"PySpark's examples ({len(payloads)}), first read, each", timed(corpus, max(args.runs // 5, 3), True),
               len(payloads)))
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
