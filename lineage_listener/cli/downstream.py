"""``lineage-listener downstream --store PATH DATASET COLUMN``: the columns a column feeds."""
from __future__ import annotations

import argparse

from lineage_listener.cli.lineage_format import add_common, guard, open_for_cli, render_graph

NAME = "downstream"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(NAME, help="columns computed from a column, across jobs (impact)")
    add_options(p)
    p.set_defaults(func=run)


def add_options(p: argparse.ArgumentParser) -> None:
    add_common(p)
    p.add_argument("--depth", type=int, default=None, help="hops to follow (default: all)")
    p.add_argument("--since", help="only edges captured at or after: 2025-03-01, 2025-03-01T12:00, 7d, 24h, 30m")
    p.add_argument("--until", help="only edges captured at or before (same forms; a bare date includes that day)")
    p.add_argument("--direct-only", action="store_true", help="follow direct edges only (no filter/join keys)")
    p.add_argument("--format", choices=("table", "json", "dot", "mermaid"), default="table")


def run(args: argparse.Namespace) -> int:
    store = open_for_cli(args.store)
    g = guard(getattr(store, NAME), args.dataset, args.column, depth=args.depth, since=args.since,
              until=args.until, direct_only=args.direct_only)
    print(render_graph(g, args.format))
    return 0
