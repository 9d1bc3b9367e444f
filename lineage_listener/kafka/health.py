"""What ``doctor`` says about Kafka: lineage spooled on this machine for a topic, and a consumer group's lag.

>>> [f for f in spool_findings(Path("/nonexistent"))]
[]
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lineage_listener.kafka.settings import KafkaSettings
from lineage_listener.store import spool
from lineage_listener.store.batch import Batch


def spool_root() -> Path:
    """Where capture on this machine spools batches a broker did not take (one folder per servers and topic)."""
    return Path(tempfile.gettempdir()) / "lineage-listener-kafka"


def spool_findings(root: Path | None = None) -> Iterator[tuple[str, str]]:
    """(level, text) for each topic with batches waiting here."""
    root = spool_root() if root is None else root
    if not root.is_dir():
        return
    anchors = {p.with_name(p.name[:-len(".spool")]) for d in root.iterdir() if d.is_dir()
               for p in d.iterdir() if p.name.endswith(".spool")}
    for anchor in sorted(anchors):
        files = spool.pending(anchor)
        bad = spool.set_aside(anchor)
        if files:
            yield ("note", f"{len(files)} batches ({spool.rows(files)} rows) captured here wait for Kafka topic "
                           f"{anchor.name} in {files[0].parent}: the next capture to that topic sends them, or "
                           f"`doctor --store ... --kafka-bootstrap ... --kafka-topic {anchor.name}`")
        if bad:
            yield ("action", f"{len(bad)} batches for Kafka topic {anchor.name} were refused by the broker and kept "
                             f"as *.bad in {bad[0].parent}")


def send_spooled(settings: KafkaSettings, wait: float = 10.0) -> tuple[int, int]:
    """Replay what waits here for ``settings``' topic: (sent, left)."""
    from lineage_listener.kafka.publish import KafkaWriter

    writer = KafkaWriter(settings, lock_timeout=wait)
    before = len(writer.spooled())
    writer.write(Batch())
    left = len(writer.spooled())
    return before - left, left


def group_lag(settings: KafkaSettings, group: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """Per partition of the topic: the group's committed offset, the last offset and the lag."""
    from confluent_kafka import Consumer, TopicPartition

    from lineage_listener.kafka.publish import quiet_logger

    consumer = Consumer(settings.client({"group.id": group, "enable.auto.commit": False,
                                         "client.id": "lineage-listener-doctor", "logger": quiet_logger()}))
    try:
        meta = consumer.list_topics(settings.topic, timeout=timeout).topics.get(settings.topic)
        if meta is None or meta.error is not None:
            raise LookupError(f"topic {settings.topic} not found" + (f" ({meta.error})" if meta else ""))
        parts = [TopicPartition(settings.topic, p) for p in sorted(meta.partitions)]
        committed = {tp.partition: tp.offset for tp in consumer.committed(parts, timeout=timeout)}
        out = []
        for tp in parts:
            _low, high = consumer.get_watermark_offsets(tp, timeout=timeout)
            done = committed.get(tp.partition, -1)
            out.append({"partition": tp.partition, "committed": done if done >= 0 else None,
                        "last_offset": high - 1 if high > 0 else None, "lag": high - max(done, 0)})
        return out
    finally:
        consumer.close()
