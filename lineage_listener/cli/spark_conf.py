"""``lineage-listener spark-conf --store PATH``: the spark-submit arguments enabling capture.

Use as ``spark-submit $(lineage-listener spark-conf --store PATH) job.py``.
"""
from __future__ import annotations

import argparse
import sys

from lineage_listener.jar import BridgeBuildError
from lineage_listener.bridge.submit import spark_submit_args
from lineage_listener.cli import CliError


def register(p: argparse.ArgumentParser) -> None:
    p.description = ("Print, on one line, the spark-submit arguments that capture lineage of any job: "
                     "spark-submit $(lineage-listener spark-conf --store PATH) job.py")
    p.add_argument("--store", help="path of the DuckDB store to write (required unless --kafka-* is given)")
    p.add_argument("--kafka-bootstrap", metavar="HOST:PORT",
                   help="publish lineage to Kafka through these servers (with --kafka-topic), besides --store "
                        "when it is given; client settings (SASL, SSL) go in --conf spark.lineage.kafka.conf.<key>")
    p.add_argument("--kafka-topic", metavar="TOPIC", help="the Kafka topic lineage is published to")
    p.add_argument("--python", help="Python the capture worker runs with (default: this one, "
                                    "which has lineage-listener installed)")
    p.add_argument("--lines", action="store_true", help="one argument per line instead of one line")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if bool(args.kafka_bootstrap) != bool(args.kafka_topic):
        raise CliError("give both --kafka-bootstrap and --kafka-topic")
    if not args.store and not args.kafka_bootstrap:
        raise CliError("give --store PATH, or --kafka-bootstrap and --kafka-topic (or all three)")
    kafka = (args.kafka_bootstrap, args.kafka_topic) if args.kafka_bootstrap else None
    try:
        argv = spark_submit_args(args.store, python=args.python, kafka=kafka)
    except BridgeBuildError as exc:
        raise CliError(f"cannot build the bridge jar: {exc}") from None
    if any(any(ch.isspace() for ch in a) for a in argv):
        print("lineage-listener: warning: a path contains whitespace, which $(...) splits; "
              "use --lines with mapfile, or a path without spaces", file=sys.stderr)
    print("\n".join(argv) if args.lines else " ".join(argv))
    return 0
