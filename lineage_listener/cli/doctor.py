"""``lineage-listener doctor --store PATH``: check a store, write what waits for it, say what is left."""
from __future__ import annotations

import argparse

from lineage_listener.cli import kafka_options
from lineage_listener.store import doctor


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="path of the DuckDB store")
    p.add_argument("--check", action="store_true", help="only report; change nothing")
    p.add_argument("--move-corrupt", action="store_true",
                   help="move an unreadable store aside (kept as <store>.corrupt-<time>) so capture starts anew")
    p.add_argument("--wait", type=float, default=10.0, help="seconds to wait for a busy store (default 10)")
    kafka_options.add(p, consumer=False)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = (doctor.examine(args.store) if args.check
              else doctor.repair(args.store, move_corrupt=args.move_corrupt, wait=args.wait))
    _kafka(args, report)
    print(f"store {report.store}")
    for line in report.lines():
        print(f"  {line}")
    return 0 if report.healthy else 1


def _kafka(args: argparse.Namespace, report: doctor.Report) -> None:
    """Lineage spooled here for a topic (sent when ``--kafka-*`` names it and not ``--check``), the consumer
    group's lag per partition, and what the store records it holds of the topic."""
    settings = kafka_options.settings(args)
    try:
        from lineage_listener.kafka import health, offsets
    except ImportError:
        return
    if settings is not None and not args.check:
        sent, left = health.send_spooled(settings, wait=args.wait)
        if sent:
            report.add("fixed", f"sent {sent} spooled batches to Kafka topic {settings.topic}")
        if left:
            report.add("note", f"Kafka {settings.describe()} did not take {left} spooled batches yet")
    for level, text in health.spool_findings():
        report.add(level, text)
    if settings is None:
        return
    try:
        lag = health.group_lag(settings, args.kafka_group)
    except Exception as exc:  # noqa: BLE001 - a broker that is down is a finding, not a crash
        report.add("action", f"Kafka {settings.describe()}: cannot read group {args.kafka_group} ({exc})")
        return
    held = {}
    if report.store.exists():
        import duckdb

        try:
            with duckdb.connect(str(report.store), read_only=True) as con:
                held = offsets.read(con, settings.topic)
        except duckdb.Error as exc:
            report.add("note", f"kafka_offsets not read ({str(exc).splitlines()[0][:120]})")
    for p in lag:
        text = (f"Kafka {settings.topic}[{p['partition']}]: last offset {p['last_offset']}, group "
                f"{args.kafka_group} committed {p['committed']}, lag {p['lag']}, the store holds up to "
                f"{held[p['partition']] - 1 if p['partition'] in held else 'none'}")
        report.add("ok" if p["lag"] == 0 else "note", text)
