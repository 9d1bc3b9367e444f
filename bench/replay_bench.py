"""The capture thread's Python work on recorded plans, without Spark: decode, tree, walk and rows.

    python bench/capture_bench.py --workload tpcds --readers compact --job-only --save-envelopes FILE
    python bench/replay_bench.py FILE [--passes 5]

``capture_bench.py --save-envelopes`` keeps each distinct compact plan the recorder was given, with
its leaves' and target's facts (JSON lines). This script replays them as the capture thread does
after the JVM read: ``compact.load`` and ``tree.from_compact`` (or the items, where the JVM wrote a
field as null), then ``Recorder.record``; it prints the process CPU per plan of each part and the
garbage collector's collections and time (``gc.callbacks``), after one warm-up pass.

With no JVM, no py4j and no store, what it measures depends only on this Python code: run under
``valgrind --tool=callgrind``, the instructions of ``--passes 1`` minus those of ``--passes 0``
are one pass's, the same count on a busy machine as on a quiet one, so two checkouts compare
exactly (``PYTHONPATH=<checkout>``). Plans recorded by an older encoding are rewritten into the
current one when it only moved the facts (version 2: the facts as a JSON text in a string).
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from lineage_listener.capture.recording import records
from lineage_listener.capture.reading.queryreader import Envelope
from lineage_listener.plan import compact
from lineage_listener.plan.tree import Plan, from_compact

#: Envelope fields kept in the file (the plan's text, its facts, what the rows are made of).
KEPT = ("func_name", "captured_at", "run", "qe_id", "root", "plan_json", "sql_text", "duration_ms", "leaves",
        "target")


def keep_envelopes(path: Path) -> Callable[[], int]:
    """Record every distinct compact plan ``Recorder.record`` is given from now on; the returned
    function writes them to ``path`` (JSON lines) and says how many."""
    kept: dict[str, dict[str, Any]] = {}
    record = records.Recorder.record

    def keeping(self: records.Recorder, env: Envelope) -> list[records.Row]:
        if env.plan_json and compact.is_compact(env.plan_json) and env.plan_json not in kept:
            kept[env.plan_json] = {k: getattr(env, k) for k in KEPT}
        return record(self, env)

    records.Recorder.record = keeping  # type: ignore[method-assign]

    def write() -> int:
        records.Recorder.record = record  # type: ignore[method-assign]
        with path.open("w", encoding="utf-8") as f:
            for env in kept.values():
                f.write(json.dumps({**env, "captured_at": env["captured_at"].isoformat(),
                                    "leaves": [[k, v] for k, v in env["leaves"].items()]}) + "\n")
        return len(kept)

    return write


def current(text: str) -> str:
    """``text`` in the current compact encoding (version 2 carried the facts as a JSON text)."""
    raw = json.loads(text)
    if raw.get("v") == 2 and compact.VERSION == 3:
        facts = json.loads(raw["facts"]) if raw.get("facts") else None
        raw = {"v": 3, "attrs": raw["attrs"], **({"facts": facts} if facts is not None else {}), "plan": raw["plan"]}
        return json.dumps(raw, separators=(",", ":"), ensure_ascii=False)
    return text


def load(path: Path) -> list[dict[str, Any]]:
    names = {f.name for f in fields(Envelope)}
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        env = json.loads(line)
        env["captured_at"] = datetime.fromisoformat(env["captured_at"])
        env["leaves"] = {int(k): v for k, v in env["leaves"]}
        env["plan_json"] = current(env["plan_json"])
        out.append({k: v for k, v in env.items() if k in names})
    return out


def replay(envelopes: list[dict[str, Any]], recorder: records.Recorder, times: list[float]) -> None:
    """One pass: each plan read as the capture thread reads it, then recorded."""
    clock = time.process_time
    for env in envelopes:
        start = clock()
        text = env["plan_json"]
        raw, facts = compact.load(text)
        plan = Plan(text, items=compact.expand(raw)) if facts.get("nulls") else Plan(text, root=from_compact(raw))
        read = clock()
        recorder.record(Envelope(**env, plan=plan))
        times[0] += read - start
        times[1] += clock() - read


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("envelopes", type=Path, help="written by capture_bench.py --save-envelopes")
    ap.add_argument("--passes", type=int, default=5, help="measured passes after the warm-up (0: the warm-up alone)")
    args = ap.parse_args()
    envelopes = load(args.envelopes)
    recorder = records.Recorder()
    replay(envelopes, recorder, [0.0, 0.0])  # warm-up: imports, caches, the first renders
    collections: list[tuple[str, float]] = []
    gc.callbacks.append(lambda phase, info: collections.append((phase, time.perf_counter())))
    times = [0.0, 0.0]
    for _ in range(args.passes):
        replay(envelopes, recorder, times)
    if not args.passes:
        return 0
    n = len(envelopes) * args.passes
    starts = [t for p, t in collections if p == "start"]
    stops = [t for p, t in collections if p == "stop"]
    in_gc = sum(b - a for a, b in zip(starts, stops))
    print(f"{len(envelopes)} plans x {args.passes} passes: read (decode + tree) {times[0] * 1000 / n:.3f}, "
          f"record (walk, render, rows) {times[1] * 1000 / n:.3f} ms/plan of process CPU; garbage collector "
          f"{len(starts) / n:.2f} collections, {in_gc * 1000 / n:.3f} ms/plan (wall, inside those)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
