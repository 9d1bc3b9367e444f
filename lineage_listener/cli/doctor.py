"""``lineage-listener doctor --store PATH``: check a store, write what waits for it, say what is left."""
from __future__ import annotations

import argparse

from lineage_listener.store import doctor


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("doctor", help="check a store, ingest spooled lineage, report what waits and why")
    p.add_argument("--store", required=True, help="path of the DuckDB store")
    p.add_argument("--check", action="store_true", help="only report; change nothing")
    p.add_argument("--move-corrupt", action="store_true",
                   help="move an unreadable store aside (kept as <store>.corrupt-<time>) so capture starts anew")
    p.add_argument("--wait", type=float, default=10.0, help="seconds to wait for a busy store (default 10)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = (doctor.examine(args.store) if args.check
              else doctor.repair(args.store, move_corrupt=args.move_corrupt, wait=args.wait))
    print(f"store {report.store}")
    for line in report.lines():
        print(f"  {line}")
    return 0 if report.healthy else 1
