"""Ingest other producers' OpenLineage events, one file at a time, and report what went wrong.

Every ``*.json``, ``*.ndjson`` and ``*.jsonl`` file under DIR (any depth) is read as one
ingest would read it (NDJSON, a JSON array, or one object) and written into a fresh store.
Per file the probe reports:

- ``exception``: ingest raised something other than a rejection (a bug: ingest must
  never fail on a valid event);
- ``rejected``: ingest refused the file, with the reason it gave (right for invalid input,
  a bug for a valid event);
- ``no-edges``: events were accepted with ``columnLineage`` facets but no edge was stored;
- ``lost-edges``: fewer distinct edges stored than the facets name (an input field that
  names no transformation counts once);
- ``naming``: a dataset whose (namespace, name) does not come back unchanged through
  the store's name (``naming.to_openlineage(naming.from_openlineage(...))``), or whose name
  breaks the naming spec (a path namespace with a relative name, a table name with a slash);
- ``unknown-sources``: edges whose source dataset has no ``datasets`` row;
- ``unended``: runs still ``running`` after the file (no COMPLETE/FAIL/ABORT in it);
- ``static``: DatasetEvents and JobEvents (no run), which record no query.

Files whose values are test-matcher placeholders (``${json-unit.any-string}``,
``{{ is_datetime(result) }}``) are probed after replacing placeholder date-times with a
fixed one, and are marked ``template``. Expected-event files of producers' own tests often
leave out what their matcher ignores (``run.runId``); with ``--complete`` a RunEvent-shaped
event (one with ``eventType``) without a ``run`` gets one, a ``run`` without ``runId`` and a
``job`` without ``namespace`` or ``name`` get fixed ones, so the lineage in them is probed too (marked ``completed``).

    python bench/openlineage_probe.py DIR [--show 3] [--complete]

Prints one line per file with a finding, then counts per category; exit code 1 when a
file raised an exception.
"""
from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

import duckdb

from lineage_listener.openlineage import ingest, naming, validate

_MATCHER = r'(\$\{json-unit[^}]*\}|\{\{[^}]*\}\})'
_PLACEHOLDER = re.compile(f'"{_MATCHER}"')
_TIME_KEYS = re.compile(r'("(?:eventTime|nominalStartTime|nominalEndTime)"\s*:\s*)' + f'"{_MATCHER}"')


def _untemplate(text: str) -> tuple[str, bool]:
    """Text with placeholder event times replaced by a fixed time; whether it had placeholders."""
    if not _PLACEHOLDER.search(text):
        return text, False
    return _TIME_KEYS.sub(r'\1"2025-06-01T09:00:00Z"', text), True


def _expected_edges(events: list[dict]) -> set[tuple]:
    """(target dataset, target column, source namespace, source name, field) the facets name."""
    out = set()
    for ev in events:
        for ds in ev.get("outputs") or [] if isinstance(ev, dict) else []:
            lineage = (ds.get("facets") or {}).get("columnLineage") or {}
            for target, spec in (lineage.get("fields") or {}).items():
                for f in spec.get("inputFields") or []:
                    out.add((ds.get("namespace"), ds.get("name"), target, f.get("namespace"), f.get("name"),
                             f.get("field")))
            for f in lineage.get("dataset") or []:
                out.add((ds.get("namespace"), ds.get("name"), None, f.get("namespace"), f.get("name"), f.get("field")))
    return out


def _naming_problems(events: list[dict]) -> list[str]:
    problems = []
    for ev in events:
        if not isinstance(ev, dict):
            continue
        for ds in (ev.get("inputs") or []) + (ev.get("outputs") or []) + ([ev["dataset"]] if "dataset" in ev else []):
            ns, name = ds.get("namespace"), ds.get("name")
            if not isinstance(ns, str) or not isinstance(name, str):
                continue
            back = naming.to_openlineage(naming.from_openlineage(ns, name))
            if back != (ns, name):
                problems.append(f"{ns!r} {name!r} -> {naming.from_openlineage(ns, name)!r} -> {back}")
            if naming.kind_of(ns) == "path" and ns.partition("://")[0] in ("file", "hdfs", "dbfs") \
                    and not name.startswith("/"):
                problems.append(f"{ns!r} {name!r}: a path namespace with a relative name")
    return problems


def _complete(events: list[dict]) -> bool:
    """Add the run (id) a matcher file left out; whether anything was added."""
    added = False
    for ev in events:
        if "eventType" in ev and "run" not in ev and "job" in ev:
            ev["run"], added = {}, True
        if isinstance(ev.get("run"), dict) and "runId" not in ev["run"]:
            ev["run"]["runId"], added = "00000000-0000-4000-8000-000000000001", True
        job = ev.get("job")
        if "run" in ev and isinstance(job, dict):
            for key in ("namespace", "name"):
                if key not in job:
                    job[key], added = f"probe-{key}", True
    return added


def probe(path: Path, complete: bool = False) -> dict:
    """Findings of one file: {category: [details]}."""
    found: dict[str, list[str]] = {}
    text, template = _untemplate(path.read_text())
    if template:
        found["template"] = [""]
    try:
        events = list(ingest.read_events(io.StringIO(text)))
    except (ValueError, json.JSONDecodeError) as exc:
        return {"rejected": [f"not JSON: {exc}"]}
    if not all(isinstance(e, dict) for e in events):
        # a file of something else (expected-event lists nested in objects, configs)
        return {"rejected": ["not a list of event objects"]}
    if complete and _complete(events):
        found["completed"] = [""]
        text = "\n".join(json.dumps(e) for e in events)
    static = sum(1 for e in events if "run" not in e)
    if static:
        found["static"] = [f"{static} DatasetEvent/JobEvent"]
    if problems := _naming_problems(events):
        found["naming"] = sorted(set(problems))
    with tempfile.TemporaryDirectory() as tmp:
        store = f"{tmp}/probe.duckdb"
        try:
            result = ingest.ingest(store, io.StringIO(text))
        except validate.BadEvent as exc:
            found["rejected"] = [str(exc)]
            return found
        except Exception as exc:  # noqa: BLE001 - the probe reports every failure
            found["exception"] = [f"{type(exc).__name__}: {exc}"]
            return found
        if not result["written"]:
            found["exception"] = ["the store write failed"]
            return found
        con = duckdb.connect(store, read_only=True)
        try:
            stored = con.execute("SELECT count(*) FROM (SELECT DISTINCT target_dataset, target_column, "
                                 "source_dataset, source_column FROM column_lineage)").fetchone()[0]
            unended = con.execute("SELECT count(*) FROM queries WHERE status = 'running'").fetchone()[0]
            unknown = con.execute("SELECT DISTINCT source_dataset FROM column_lineage WHERE source_dataset "
                                  "NOT IN (SELECT dataset FROM datasets) ORDER BY 1").fetchall()
        finally:
            con.close()
    expected = _expected_edges(events)
    if expected and stored == 0:
        found["no-edges"] = [f"{len(expected)} facet edges, none stored"]
    elif stored < len(expected):
        found["lost-edges"] = [f"{len(expected)} facet edges, {stored} stored"]
    if unknown:
        found["unknown-sources"] = [f"edge sources not in datasets: {', '.join(u for u, in unknown)}"]
    if unended:
        found["unended"] = [f"{unended} runs without COMPLETE/FAIL/ABORT"]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--show", type=int, default=3, help="details shown per file and category")
    parser.add_argument("--complete", action="store_true", help="add the run ids matcher files leave out")
    args = parser.parse_args(argv)
    files = sorted(p for p in args.dir.rglob("*") if p.suffix in (".json", ".ndjson", ".jsonl"))
    counts: Counter[str] = Counter()
    for p in files:
        found = probe(p, args.complete)
        for category, details in found.items():
            counts[category] += 1
            if category in ("template", "static", "completed"):
                continue
            for d in details[:args.show]:
                print(f"{category:10} {p.relative_to(args.dir)}: {d}")
    print(f"\n{len(files)} files")
    for category, n in counts.most_common():
        print(f"  {category:10} {n}")
    return 1 if counts["exception"] else 0


if __name__ == "__main__":
    sys.exit(main())
