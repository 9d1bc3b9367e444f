"""``lineage-listener prune --store PATH --keep 400d``: drop per-run records older than that."""
from __future__ import annotations

import argparse

from lineage_listener.cli import CliError
from lineage_listener.store.prune import KEEP_AUDIT, parse_keep, prune_store


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="path of the DuckDB store")
    p.add_argument("--keep", required=True, help="history to keep, as an age: 400d, 52w, 36h")
    p.add_argument("--keep-audit", metavar="AGE", help=f"a lineage server's audit to keep (default "
                                                      f"{KEEP_AUDIT.days}d)")
    p.add_argument("--dry-run", action="store_true", help="count what would go; change nothing")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        keep = parse_keep(args.keep)
        keep_audit = parse_keep(args.keep_audit) if args.keep_audit else KEEP_AUDIT
    except ValueError as exc:
        raise CliError(str(exc)) from None
    done = prune_store(args.store, keep, dry_run=args.dry_run, keep_audit=keep_audit)
    verb = "would drop" if args.dry_run else "dropped"
    print(f"{verb} {done.queries} queries, {done.captures} capture records, {done.runs} runs and "
          f"{done.capture_errors} capture errors older than {args.keep}; "
          f"{done.orphan_sets} unused edge sets and {done.orphan_edges} unused edges; "
          f"{done.audit} audit records older than {args.keep_audit or f'{KEEP_AUDIT.days}d'}")
    return 0
