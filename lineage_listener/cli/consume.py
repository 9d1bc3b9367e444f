"""``lineage-listener consume --store PATH --kafka-bootstrap B --kafka-topic T``: a topic into a store, no HTTP.

Runs until SIGTERM or Ctrl-C (or, with ``--until-idle N``, until the topic has been drained for N
seconds), then finishes what it is writing, commits its offsets and prints what it did.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from lineage_listener.cli import CliError, kafka_options
from lineage_listener.store.group_writer import GroupWriter, Settings


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="path of the DuckDB store (this process is its writer)")
    kafka_options.add(p)
    p.add_argument("--until-idle", type=float, metavar="SECONDS",
                   help="exit once every partition is written and committed and nothing came for SECONDS")
    p.add_argument("--group-rows", type=int, default=Settings.group_rows, metavar="N",
                   help="rows at most in one store commit (default %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.kafka_bootstrap or not args.kafka_topic:
        raise CliError("consume needs --kafka-bootstrap and --kafka-topic")
    writer = GroupWriter(Path(args.store).expanduser().absolute(),
                         Settings(group_rows=args.group_rows, queue_rows=max(50_000, 4 * args.group_rows)))
    ingest = kafka_options.ingest(args, writer)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        if args.until_idle is not None:
            threading.Thread(target=lambda: ingest.wait_idle(args.until_idle) and stop.set(), daemon=True).start()
        while not stop.wait(0.5):
            if ingest.state == "failed":
                break
    finally:
        ingest.stop()
        writer.close()
    stats = ingest.stats()
    print(json.dumps({k: stats[k] for k in ("state", "messages", "events", "edges", "skipped", "dead_letters",
                                             "foreign_events", "lag", "partitions")}), file=sys.stderr)
    if stats["state"] == "failed":
        raise CliError(f"Kafka consumer failed: {stats['error']}")
    return 0
