"""``lineage-listener diff --store PATH --app NAME``: what changed in the lineage between two runs of an
application, two time windows, or two stores.

Exit status: 0 when the diff was computed (changes or not); with ``--exit-code``, 1 when it found
changes (as ``git diff --exit-code``); 2 for bad input (an unknown application, run or store,
a bad window), one line naming it and the closest known names.
"""
from __future__ import annotations

import argparse
from typing import Any

from lineage_listener.cli.lineage_format import guard, name, open_for_cli, to_json
from lineage_listener.cli.render import table
from lineage_listener.govern.diff import diff


def register(p: argparse.ArgumentParser) -> None:
    p.description = ("Compare two sides of the lineage: by default the last run of --app against the run "
                     "before it. Lists datasets, columns and edges added or removed, and edges whose "
                     "transform, kind, expression or masking changed.")
    p.add_argument("--store", required=True, help="path of the DuckDB store (the new side with --against)")
    p.add_argument("--app", help="application name (runs.app_name): its last run against the run before, "
                                 "or the scope of --runs, --windows and --against")
    p.add_argument("--runs", nargs=2, metavar=("OLD", "NEW"), help="two run ids to compare")
    p.add_argument("--windows", nargs=2, metavar=("OLD", "NEW"),
                   help="two capture time windows FROM..TO (2025-03-01..2025-03-07, 14d..7d, 2025-03-01T12:00.., "
                        "..7d; a bare date includes its day)")
    p.add_argument("--against", metavar="OTHER_STORE",
                   help="another store as the old side (each side: --app's last run, else all its lineage)")
    p.add_argument("--rows-factor", type=float, metavar="F",
                   help="also list the datasets whose rows written changed by more than F times (F > 1), "
                        "and every write of 0 rows where the other side wrote some")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--exit-code", action="store_true", help="exit 1 when something changed, 0 when nothing did")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_for_cli(args.store)
    against = open_for_cli(args.against) if args.against else None
    d = guard(diff, store, app=args.app, runs=args.runs, windows=args.windows, against=against,
              rows_factor=args.rows_factor)
    print(to_json(d.data()) if args.format == "json" else diff_text(d.data()))
    return 1 if args.exit_code and not d.empty else 0


def _end(end: dict[str, Any]) -> str:
    if end["dataset"] is None:
        return "driver (read)"
    return end["dataset"] if end["column"] is None else name((end["dataset"], end["column"]))


def _record(r: dict[str, Any]) -> str:
    return f"{r['transform']} {r['kind']}" + (f" {r['expression']}" if r["expression"] else "") + (
        " [masked]" if r["masking"] else "")


def _rows(change: str, items: list[dict[str, Any]]) -> list[tuple]:
    rows = []
    for i in items:
        if i["item"] == "dataset":
            rows.append((change, "dataset", i["dataset"], "", "", ""))
        elif i["item"] == "column":
            rows.append((change, "column", name((i["dataset"], i["column"])), "", "", ""))
        elif "before" in i:
            what = "; ".join(_record(r) for r in i["before"]) + "  ->  " + "; ".join(_record(r) for r in i["after"])
            rows.append((change, "edge", _end(i["target"]), _end(i["source"]), ",".join(i["fields"]), what))
        else:
            rows.append((change, "edge", _end(i["target"]), _end(i["source"]), "", _record(i)))
    return rows


def diff_text(data: dict[str, Any]) -> str:
    """A diff (``Diff.data()``) as text: what was compared, then one table of every change."""
    head = f"Lineage diff: {data['old']['label']} -> {data['new']['label']}"
    rows = _row_counts(data.get("rows") or [])
    if not (data["added"] or data["removed"] or data["changed"] or data["labels"]):
        return (f"{head}\nNo {'lineage ' if rows else ''}changes: the same {data['new']['edges']} edge"
                f"{'s' if data['new']['edges'] != 1 else ''} on both sides." + rows)
    counts = ", ".join(f"{len(data[k])} {k}" for k in ("added", "removed", "changed"))
    out = [head, f"{counts} (datasets, columns and edges)", "",
           table(["change", "item", "target", "source", "fields", "edge"],
                 _rows("added", data["added"]) + _rows("removed", data["removed"])
                 + _rows("changed", data["changed"]))]
    if data["labels"]:
        out += ["", "Labels newly reaching a column:",
                table(["label", "column", "from"],
                      [(lab["label"], name((lab["dataset"], lab["column"])),
                        name((lab["from"]["dataset"], lab["from"]["column"]))) for lab in data["labels"]])]
    return "\n".join(out) + rows


def _row_counts(moved: list[dict[str, Any]]) -> str:
    """The datasets whose rows written changed by more than the factor asked, as a table after a blank line."""
    if not moved:
        return ""
    return "\n\nRows written changed:\n" + table(
        ["dataset", "old rows", "new rows", "ratio"],
        [(m["dataset"], f"{m['old_rows']:,}", f"{m['new_rows']:,}",
          "-" if m["ratio"] is None else f"{m['ratio']:.3g}x") for m in moved])

