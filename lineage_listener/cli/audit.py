"""``lineage-listener audit --store S [--since T] [--user NAME] [--format table|json]``: who asked a lineage
server what, or was refused, and who changed which label (docs/security.md, "The audit")."""
from __future__ import annotations

import argparse

from lineage_listener.cli import CliError
from lineage_listener.cli.lineage_format import open_for_cli, to_json, when
from lineage_listener.cli.render import table


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="path of the DuckDB store")
    p.add_argument("--since", help="from this time or age on: 1d, 24h, 2026-11-01 (default: any time)")
    p.add_argument("--user", metavar="NAME", help="only this identity's records")
    p.add_argument("--limit", type=int, default=1000, help="records at most, newest first (default %(default)s)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lineage_listener.govern.audit import records
    from lineage_listener.timewindow import parse_time

    try:
        since = parse_time(args.since) if args.since else None
        store = open_for_cli(args.store)
        with store.connect() as con:
            rows = records(con, since, args.user, args.limit)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.format == "json":
        print(to_json(rows))
        return 0
    print(table(("at", "identity", "what", "datasets", "status", "withheld"),
                [(when(r["at"]), r["identity"], _what(r), _where(r), r.get("status"), r.get("withheld")) for r in rows]))
    return 0


def _what(r: dict) -> str:
    if r["kind"] == "label":
        return f"label {r['action']} {'!' if r['value'] is False else ''}{r['label']}"
    return f"{r['method']} {r['path']}" + (f" ({r['detail']})" if r["detail"] else "")


def _where(r: dict) -> str:
    if r["kind"] == "label":
        return f"{r['dataset']}.{r['column']}"
    return ", ".join(r["datasets"] or ())
