"""Where lineage goes on Kafka: bootstrap servers, topic and client settings passed through.

From Spark conf (``spark.lineage.kafka.bootstrap``, ``spark.lineage.kafka.topic``,
``spark.lineage.kafka.conf.<key>``), from ``enable(spark, kafka={...})`` or from the bridge
worker's environment (``LINEAGE_KAFKA``: the same keys as JSON). Client settings (SASL, SSL)
go to librdkafka as given; :meth:`KafkaSettings.describe` never shows their values.

>>> s = KafkaSettings.from_conf({"spark.lineage.kafka.bootstrap": "b:9092", "spark.lineage.kafka.topic": "lineage",
...                              "spark.lineage.kafka.conf.sasl.password": "pw"})
>>> s.describe()
'topic lineage on b:9092 (client settings: sasl.password)'
>>> s.client({"acks": "all"})["sasl.password"], s.client()["bootstrap.servers"]
('pw', 'b:9092')
>>> "pw" in repr(s)
False
>>> KafkaSettings.from_option({"bootstrap": "b:9092"})
Traceback (most recent call last):
...
ValueError: Kafka needs both a bootstrap (spark.lineage.kafka.bootstrap) and a topic (spark.lineage.kafka.topic)
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PREFIX = "spark.lineage.kafka."
BOOTSTRAP_CONF = PREFIX + "bootstrap"
TOPIC_CONF = PREFIX + "topic"
CLIENT_CONF = PREFIX + "conf."
#: The bridge passes every ``spark.lineage.kafka.*`` key to its worker as JSON in this variable.
ENV = "LINEAGE_KAFKA"

#: What a missing client library says (the CLI maps the module to its extra too).
INSTALL = "pip install 'lineage-listener[kafka]'"


@dataclass(frozen=True)
class KafkaSettings:
    """A topic on a Kafka cluster, and the client settings to reach it."""

    bootstrap: str
    topic: str
    conf: Mapping[str, str] = field(default_factory=dict)

    def client(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """librdkafka settings: ours (``overrides``), then the user's, which win."""
        return {**(overrides or {}), "bootstrap.servers": self.bootstrap, **self.conf}

    def __repr__(self) -> str:  # a traceback or a log of the object shows no secret either
        return f"KafkaSettings({self.describe()})"

    def describe(self) -> str:
        """For logs: topic and servers, the names of client settings only (never their values)."""
        extra = f" (client settings: {', '.join(sorted(self.conf))})" if self.conf else ""
        return f"topic {self.topic} on {self.bootstrap}{extra}"

    @classmethod
    def from_conf(cls, conf: Mapping[str, str]) -> "KafkaSettings | None":
        """From ``spark.lineage.kafka.*`` keys (other keys ignored); None when none is set."""
        keys = {k[len(PREFIX):]: v for k, v in conf.items() if k.startswith(PREFIX)}
        return cls.from_option(keys) if keys else None

    @classmethod
    def from_option(cls, option: "KafkaSettings | Mapping[str, Any]") -> "KafkaSettings":
        """From ``enable(kafka={"bootstrap": ..., "topic": ..., "conf": {...}})``; ``conf.<key>`` keys
        (the conf keys without their prefix) are taken too."""
        if isinstance(option, KafkaSettings):
            return option
        conf = {str(k): str(v) for k, v in dict(option.get("conf") or {}).items()}
        conf.update({k[len("conf."):]: str(v) for k, v in option.items() if k.startswith("conf.")})
        bootstrap, topic = str(option.get("bootstrap") or "").strip(), str(option.get("topic") or "").strip()
        if not bootstrap or not topic:
            raise ValueError(f"Kafka needs both a bootstrap ({BOOTSTRAP_CONF}) and a topic ({TOPIC_CONF})")
        return cls(bootstrap, topic, conf)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> "KafkaSettings | None":
        """From ``LINEAGE_KAFKA`` (None when unset). A bad value raises ValueError.

        >>> KafkaSettings.from_env({ENV: '{"bootstrap": "b:1", "topic": "t", "conf.client.id": "x"}'}).conf
        {'client.id': 'x'}
        """
        text = env.get(ENV)
        if not text:
            return None
        try:
            return cls.from_option(json.loads(text))
        except (json.JSONDecodeError, AttributeError) as exc:
            raise ValueError(f"{ENV} is not a JSON object: {exc}") from None


def client_class(name: str) -> Any:
    """confluent-kafka's ``Producer`` or ``Consumer``; ImportError naming the extra when it is not installed."""
    try:
        import confluent_kafka
    except ImportError as exc:
        raise ImportError(f"Kafka support is not installed ({exc}): {INSTALL}", name="confluent_kafka") from None
    return getattr(confluent_kafka, name)
