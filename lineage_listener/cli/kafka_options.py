"""The ``--kafka-*`` options ``serve``, ``consume`` and ``doctor`` share, and the consumer they start.

Client settings come from ``--kafka-conf KEY=VALUE`` (repeatable) or, for anything secret (SASL
passwords, key passwords), from ``--kafka-conf-file`` (``key=value`` lines): a secret on the command
line shows in ``ps`` and shell history, so those keys are refused there.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lineage_listener.cli import CliError
from lineage_listener.redact import is_secret_key


def add(p: argparse.ArgumentParser, consumer: bool = True) -> None:
    k = p.add_argument_group("kafka", "consume lineage from a Kafka topic (needs lineage-listener[kafka])")
    k.add_argument("--kafka-bootstrap", metavar="HOST:PORT[,...]", help="the Kafka cluster's bootstrap servers")
    k.add_argument("--kafka-topic", metavar="TOPIC", help="the topic capture publishes to")
    k.add_argument("--kafka-group", metavar="GROUP", default="lineage-listener",
                   help="consumer group (default %(default)s): servers of one store share it")
    k.add_argument("--kafka-conf", metavar="KEY=VALUE", action="append", default=[],
                   help="a client setting (librdkafka name), e.g. security.protocol=SASL_SSL; secrets go in "
                        "--kafka-conf-file")
    k.add_argument("--kafka-conf-file", metavar="PATH", help="client settings as key=value lines (for secrets)")
    if consumer:
        k.add_argument("--dead-letter", metavar="PATH",
                       help="file for messages that can never be written (default <store>.dead-letter.ndjson)")
        k.add_argument("--dead-letter-topic", metavar="TOPIC",
                       help="send such messages to this topic instead (the file when it is unreachable)")
        k.add_argument("--no-standby", dest="exclusive", action="store_false",
                       help="do not wait for another process consuming into the same store (one must not)")


def settings(args: argparse.Namespace) -> Any:
    """The KafkaSettings the options name, or None when no ``--kafka-*`` is given."""
    from lineage_listener.kafka.settings import KafkaSettings

    if not args.kafka_bootstrap and not args.kafka_topic:
        return None
    if not args.kafka_bootstrap or not args.kafka_topic:
        raise CliError("give both --kafka-bootstrap and --kafka-topic")
    conf: dict[str, str] = {}
    if args.kafka_conf_file:
        try:
            lines = Path(args.kafka_conf_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise CliError(f"cannot read --kafka-conf-file: {exc}") from None
        for line in lines:
            if line.strip() and not line.lstrip().startswith("#"):
                key, sep, value = line.partition("=")
                if not sep:
                    raise CliError(f"--kafka-conf-file: not key=value: {key.strip()[:40]!r}")
                conf[key.strip()] = value.strip()
    for item in args.kafka_conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise CliError(f"--kafka-conf {item!r}: give KEY=VALUE")
        if is_secret_key(key):
            raise CliError(f"--kafka-conf {key}: a secret on the command line shows in ps and shell history; "
                           f"put it in --kafka-conf-file")
        conf[key.strip()] = value
    return KafkaSettings(args.kafka_bootstrap, args.kafka_topic, conf)


def ingest(args: argparse.Namespace, writer: Any) -> Any:
    """A started :class:`~lineage_listener.kafka.consume.TopicIngest` into ``writer`` (None without Kafka)."""
    kafka = settings(args)
    if kafka is None:
        return None
    from lineage_listener.kafka.consume import TopicIngest
    from lineage_listener.kafka.deadletter import DeadLetter
    from lineage_listener.kafka.settings import client_class

    client_class("Consumer")  # a missing extra: said now, in one line naming it, before anything starts
    path = args.dead_letter or f"{writer.store}.dead-letter.ndjson"
    producer = client_class("Producer")(kafka.client({"client.id": "lineage-listener-dead-letter"})) \
        if args.dead_letter_topic else None
    return TopicIngest(kafka, writer, group=args.kafka_group,
                       dead_letter=DeadLetter(path, producer, args.dead_letter_topic),
                       exclusive=args.exclusive).start()
