"""``lineage-listener impact --store PATH DATASET COLUMN --since T --until T``: who read a
sensitive column, the columns holding a copy of it (masked or not, written by which app), and the
columns it only influenced (docs/reference/semantics.md)."""
from __future__ import annotations

import argparse

from lineage_listener.cli.lineage_format import add_common, guard, impact_text, open_for_cli, to_json
from lineage_listener.query.reports import impact


def register(p: argparse.ArgumentParser) -> None:
    add_common(p)
    p.add_argument("--since", help="window start: 2025-03-01, 2025-03-01T12:00, 7d, 24h, 30m (default: any time)")
    p.add_argument("--until", help="window end, same forms (default: now)")
    p.add_argument("--depth", type=int, default=None, help="hops to follow downstream (default: all)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_for_cli(args.store)
    report = guard(impact, store, args.dataset, args.column, since=args.since, until=args.until,
                   depth=args.depth, include_failed=args.include_failed)
    print(to_json(report) if args.format == "json" else impact_text(report))
    return 0
