"""Messages that can never be written: kept aside (a file or a topic) with one ERROR line each.

A file gets one JSON line per message: where it came from, why, and its value (secrets
redacted). A topic gets the message as it came, with headers ``lineage.reason``,
``lineage.topic``, ``lineage.partition`` and ``lineage.offset``; should that topic be unreachable,
the message goes to the file instead. Either way the partition goes on.
"""
from __future__ import annotations

import json
import logging
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lineage_listener import redact
from lineage_listener.store import private

log = logging.getLogger(__name__)


class DeadLetter:
    """Where messages go that can never be written: ``path`` always, ``topic`` first when given."""

    def __init__(self, path: str | Path, producer: Any = None, topic: str | None = None) -> None:
        self.path = Path(path)
        self.topic = topic
        self._producer = producer
        self._lock = threading.Lock()
        self.count = 0

    def keep(self, source_topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
             reason: str) -> str:
        """Keep one message aside; where it went."""
        reason = redact.redact_text(str(reason).splitlines()[0] if str(reason) else "unknown")[:500]
        where = None
        if self._producer is not None and self.topic:
            where = self._to_topic(source_topic, partition, offset, key, value, reason)
        if where is None:
            where = self._to_file(source_topic, partition, offset, key, value, reason)
        self.count += 1
        log.error("lineage-listener: Kafka message %s/%d@%d can never be written (%s); kept in %s",
                  source_topic, partition, offset, reason, where)
        return where

    def _to_topic(self, source_topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
                  reason: str) -> str | None:
        done: list[Any] = []
        headers = {"lineage.reason": reason, "lineage.topic": source_topic, "lineage.partition": str(partition),
                   "lineage.offset": str(offset)}
        try:
            self._producer.produce(self.topic, value=value, key=key, headers=headers,
                                   on_delivery=lambda err, _m: done.append(err))
            self._producer.flush(10)
        except Exception as exc:  # noqa: BLE001 - the file is the fallback
            done.append(exc)
        if done and done[0] is None:
            return f"topic {self.topic}"
        log.warning("lineage-listener: dead-letter topic %s not reachable (%s); using %s", self.topic,
                    done[0] if done else "no acknowledgement", self.path)
        return None

    def _to_file(self, source_topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
                 reason: str) -> str:
        line = json.dumps({
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "topic": source_topic,
            "partition": partition, "offset": offset, "key": _text(key), "reason": reason,
            "value": redact.redact_text(_text(value) or "")})
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            private.append(self.path, line + "\n")  # the messages' lineage: their owner's alone
        return str(self.path)


def _text(raw: bytes | str | None) -> str | None:
    if raw is None or isinstance(raw, str):
        return raw
    return raw.decode("utf-8", errors="replace")
