"""``lineage-listener preview --store PATH FILE.sql``: the lineage of Spark SQL statements before they run.

Spark's analyzer in a throwaway local session, inputs defined empty from the schemas the store
recorded, plans walked as capture walks them. ``--diff`` compares the result with how the store
last saw the same targets written; ``--policy`` checks it against a policy.

Exit status: 0 when the preview was made; with ``--exit-code``, 1 when ``--diff`` found changes
or a policy is violated; 2 for bad input (an unknown table, bad DDL, an empty file...), one line
naming the statement and its line.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lineage_listener.cli import CliError
from lineage_listener.cli.diff import diff_text
from lineage_listener.cli.check import text as check_text, warn
from lineage_listener.cli.lineage_format import guard, name, open_for_cli, to_json
from lineage_listener.cli.render import table
from lineage_listener.govern import checks, policy as policies
from lineage_listener.govern.diff import against_capture
from lineage_listener.preview.analyze import Preview, edge_data, preview
from lineage_listener.preview.session import SessionError
from lineage_listener.preview.sqltext import keeping


def register(p: argparse.ArgumentParser) -> None:
    p.description = ("Analyze the statements of FILE with Spark in a throwaway local session (nothing runs "
                     "against real data) and walk them as capture does: the edges they would write.")
    p.add_argument("--store", required=True, help="path of the DuckDB store whose recorded schemas define the inputs")
    p.add_argument("file", help="a file of Spark SQL statements separated by ';'")
    p.add_argument("--schema", metavar="DDL.sql",
                   help="Spark DDL run first, for tables the store does not know (CREATE TABLE, CREATE "
                        "TEMPORARY VIEW ... USING ...)")
    p.add_argument("--app", help="the application name the SQL runs under: in-memory data (VALUES) is named "
                                 "after it, and --diff compares with this application's writes")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark SQL setting of the job (e.g. spark.sql.ansi.enabled=false); repeatable")
    p.add_argument("--diff", action="store_true", help="compare with how the store last saw the same targets written")
    p.add_argument("--policy", metavar="FILE", help="check the lineage against the policy in FILE, on the data as "
                                                    "it would be after these statements")
    p.add_argument("--sql-text", choices=("full", "masked", "none"), default="full",
                   help="what to show of SQL text, as spark.lineage.sqlText keeps it at capture: masked shows "
                        "literal values as ?, none no statement text (default %(default)s; a job captured "
                        "masked compares with --diff edge for edge only when previewed masked)")
    p.add_argument("--history", action="store_true",
                   help="with --policy: judge every path ever captured, also those a replacing write made history")
    p.add_argument("--strict", action="store_true",
                   help="with --policy: a rule pattern that matches no dataset, or a label declared on no column, "
                        "is an error (exit 2) rather than a warning")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--exit-code", action="store_true",
                   help="exit 1 when --diff finds changes or the policy is violated")
    p.set_defaults(func=run)


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {what} {path}: {exc.strerror if isinstance(exc, OSError) else exc}") from None


def _conf(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--conf {pair!r}: write it KEY=VALUE")
        out[key.strip()] = value
    return out


def run(args: argparse.Namespace) -> int:
    store = open_for_cli(args.store)
    sql = _read(args.file, "SQL file")
    schema = _read(args.schema, "--schema file") if args.schema else None
    policy = guard(policies.load, args.policy) if args.policy else None  # a bad file fails before any work
    try:
        result = guard(preview, store, sql, schema=schema, app=args.app, conf=_conf(args.conf), source=args.file)
    except SessionError as exc:  # not the input's fault: no Java, no room for the session...
        print(f"lineage-listener: {exc}", file=sys.stderr)
        return 1
    result = keeping(result, args.sql_text)
    modes = result.write_modes()
    edges = [edge_data(i, e, modes.get(i)) for i, e in result.edges()]
    d = against_capture(store, [e for _, e in result.edges()], f"preview of {args.file}", args.app) \
        if args.diff else None
    try:
        report = checks.check_edges(store, policy, edges, application=args.app or "preview", history=args.history,
                                    strict=args.strict) if policy is not None else None
    except policies.PolicyError as exc:
        raise CliError(str(exc)) from None
    if report is not None:
        warn(report)
    found = report["violations"] if report is not None else []
    if args.format == "json":
        print(to_json({"edges": edges, "diff": d.data() if d else None, "violations": found,
                       "statements": [s.data() for s in result.statements], "defined": list(result.defined),
                       "seconds": dict(result.seconds)}))
    else:
        print(preview_text(result, edges))
        if d is not None:
            print("\n" + diff_text(d.data()))
        if report is not None:
            print("\n" + check_text(report, policy))
    return 1 if args.exit_code and ((d is not None and not d.empty) or found) else 0


def preview_text(result: Preview, edges: list[dict]) -> str:
    """Each statement with its status and target, then every edge."""
    stats = result.statements
    previewed = sum(s.status == "lineage" for s in stats)
    out = [f"Preview of {result.source}: {len(stats)} statements, {previewed} with lineage, {len(edges)} edges "
           f"(Spark session {result.seconds.get('spark_start', 0):.1f} s, analysis "
           f"{result.seconds.get('analysis', 0):.1f} s)", "",
           table(["#", "line", "status", "command", "target", "edges", "note"],
                 [(s.index, s.line, s.status, s.command, s.target or ("driver (read)" if s.status == "lineage" else ""),
                   len(s.edges), s.note or "") for s in stats])]
    stood_in = [d["dataset"] for d in result.defined if d["from"] == "store"]
    if stood_in:
        out += ["", "Inputs defined from the store's recorded schemas: " + ", ".join(stood_in)]
    if edges:
        out += ["", table(["#", "target", "source", "transform", "kind", "expression"],
                          [(e["statement"],
                            name((e["target_dataset"], e["target_column"] or "*")) if e["target_dataset"]
                            else f"driver [{e['target_column']}]",
                            name((e["source_dataset"], e["source_column"])), e["transform"], e["kind"],
                            (e["expression"] or "") + (" [masked]" if e["masking"] else "")) for e in edges])]
    return "\n".join(out)
