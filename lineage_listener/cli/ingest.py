"""``lineage-listener ingest openlineage --store PATH FILE|-``: any producer's events into the store."""
from __future__ import annotations

import argparse
import sys

from lineage_listener.cli import CliError


def register(p: argparse.ArgumentParser) -> None:
    formats = p.add_subparsers(dest="format", metavar="FORMAT", required=True)
    ol = formats.add_parser("openlineage", help="OpenLineage RunEvents (NDJSON, a JSON array or one object)")
    ol.add_argument("--store", required=True, help="path of the DuckDB store (created if missing)")
    ol.add_argument("file", help="events file, or - for stdin")
    ol.add_argument("--table-namespace", help="the namespace the producer used for catalog tables")
    ol.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lineage_listener.openlineage.ingest import ingest

    try:
        if args.file == "-":
            counts = ingest(args.store, sys.stdin, args.table_namespace)
        else:
            with open(args.file, encoding="utf-8") as f:
                counts = ingest(args.store, f, args.table_namespace)
    except (OSError, ValueError, KeyError) as exc:
        raise CliError(f"cannot ingest {args.file}: {exc}") from None
    print(f"read {counts['events']} events: {counts['queries']} queries, {counts['edges']} edges "
          + (f"written ({counts['new_edges']} new to the store)" if counts["written"]
             else "spooled (the store is busy; doctor writes them)"), file=sys.stderr)
    return 0 if counts["written"] else 1
