"""Kafka topics, named ``kafka://<bootstrap servers>/<topic>`` (``docs/reference/datasets.md``):
a batch read of topics (``KafkaRelation``), and the options of a batch or stream read or write."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lineage_listener.capture.jvm import private_field, scala_map
from lineage_listener.capture.reading.readers.registry import RELATIONS, reads
from lineage_listener.lineage.datasets import RelationFact


def kafka_names(options: Mapping[str, str], reading: bool) -> list[str]:
    """``kafka://<bootstrap servers>/<topic>`` for each topic named in ``options``.

    >>> kafka_names({"kafka.bootstrap.servers": "b1:9092,b2:9092", "subscribe": "a, b"}, True)
    ['kafka://b1:9092,b2:9092/a', 'kafka://b1:9092,b2:9092/b']
    >>> kafka_names({"kafka.bootstrap.servers": "b:9092", "subscribePattern": "ev.*"}, True)
    ['kafka://b:9092/ev.*']
    """
    lower = {k.lower(): v for k, v in options.items()}
    servers = lower.get("kafka.bootstrap.servers", "?")
    topics: list[str] = []
    if reading:
        if lower.get("subscribe"):
            topics = [t.strip() for t in lower["subscribe"].split(",") if t.strip()]
        elif lower.get("subscribepattern"):
            topics = [lower["subscribepattern"]]
        elif lower.get("assign"):
            try:
                topics = sorted(json.loads(lower["assign"]))
            except ValueError:
                topics = [lower["assign"]]
    elif lower.get("topic"):
        topics = [lower["topic"]]
    return [f"kafka://{servers}/{t}" for t in topics or ["*"]]


def topics(options: Mapping[str, str], reading: bool) -> RelationFact:
    """The fact of the topics a Kafka read or write with ``options`` names.

    >>> topics({"kafka.bootstrap.servers": "b:9092", "topic": "out"}, reading=False)["kafka"]
    ['kafka://b:9092/out']
    """
    return {"kafka": kafka_names(options, reading), "format": "kafka", "options": dict(options)}


@reads(RELATIONS, "KafkaRelation")
def kafka_relation(rel: Any, fact: RelationFact) -> None:
    """A batch read of topics: named as a stream of them is (its options live in a private field)."""
    fact.update(topics(scala_map(private_field(rel, "sourceOptions")), reading=True))
