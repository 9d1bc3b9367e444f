"""``lineage-listener provenance --store PATH DATASET COLUMN``: the origin columns of a column
and the operations applied on the way, per contributing run."""
from __future__ import annotations

import argparse

from lineage_listener.cli.lineage_format import add_common, guard, open_for_cli, provenance_text, to_json
from lineage_listener.query.reports import provenance


def register(p: argparse.ArgumentParser) -> None:
    add_common(p)
    p.add_argument("--include-indirect", action="store_true",
                   help="also follow filter/join/group keys (default: only where values came from)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_for_cli(args.store)
    report = guard(provenance, store, args.dataset, args.column, direct_only=not args.include_indirect,
                   include_failed=args.include_failed)
    print(to_json(report) if args.format == "json" else provenance_text(report))
    return 0
