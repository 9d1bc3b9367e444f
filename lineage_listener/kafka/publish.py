"""Capture's writer for a Kafka topic: each batch sent as RunEvents, never blocking the job for long.

Same interface as :class:`~lineage_listener.store.writer.StoreWriter` (``write``, ``waiting``,
``spooled``, ``lock_timeout``), so :class:`~lineage_listener.capture.pipeline.Capture` does not care
where lineage goes. A write hands the batch's messages to librdkafka (its buffer is bounded:
``queue.buffering.max.kbytes``) and waits for the broker's acknowledgements at most
``lock_timeout`` seconds (2 s once the application ends). A broker that is down or too slow:
the batch is spooled to local disk (the same spool files as a busy store, under a folder per
servers and topic) with one WARNING line, and every later batch goes behind it, so one
application's events stay in order. Each write first replays what is spooled, oldest first;
once it all got through, one more WARNING line says so and a ``capture_errors`` row of stage
``kafka`` (sent with the next batch) records the outage in the run's own record. A message the
broker refuses for itself (too large) is kept as a ``.bad`` spool file, never sent again.

The producer is idempotent (``enable.idempotence``): its own retries add no duplicate. A batch
whose acknowledgement was lost with the connection may be sent again from the spool: consumers
write idempotently, so the store holds it once.
"""
from __future__ import annotations

import hashlib
import logging
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lineage_listener.kafka import messages
from lineage_listener.kafka.settings import KafkaSettings, client_class
from lineage_listener import redact
from lineage_listener.store import spool
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import CaptureErrorRow
from lineage_listener.timewindow import utcnow

if TYPE_CHECKING:  # pragma: no cover - a type only
    from lineage_listener.store.writer import BatchWriter

log = redact.logger(__name__)

#: Producer settings of ours; the user's ``spark.lineage.kafka.conf.*`` override them.
PRODUCER_DEFAULTS: dict[str, Any] = {
    "enable.idempotence": True,  # acks=all, ordered retries, no duplicate from a retry
    "linger.ms": 20,
    "compression.type": "lz4",
    "queue.buffering.max.kbytes": 65536,  # the bounded in-memory buffer (64 MiB)
    "message.max.bytes": 8_000_000,
    "socket.keepalive.enable": True,
    "client.id": "lineage-listener",
}
#: Seconds at least that a replay of the spool waits for acknowledgements (a broker just back).
REPLAY_WAIT = 2.0
#: Errors about the message itself: sending it again is refused again.
#: Client errors that say why no broker takes the messages: a certificate, a password. The line that says
#: lineage is spooled names them rather than the timeout they end in.
_CONNECTION_REFUSED = frozenset({"_SSL", "_AUTHENTICATION"})
_REFUSED = frozenset({"MSG_SIZE_TOO_LARGE", "INVALID_MSG", "INVALID_RECORD", "RECORD_LIST_TOO_LARGE",
                      "INVALID_MSG_SIZE"})


def spool_anchor(settings: KafkaSettings) -> Path:
    """The pseudo store path whose spool folders hold batches waiting for this topic.

    >>> spool_anchor(KafkaSettings("b:1", "t")).name
    't'
    """
    digest = hashlib.sha1(f"{settings.bootstrap}|{settings.topic}".encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "lineage-listener-kafka" / digest / settings.topic


@dataclass
class Counts:
    """What this writer did since it started (``doctor`` and the run's record report them)."""

    messages: int = 0  # acknowledged by the broker
    batches: int = 0
    spooled: int = 0  # batches spooled to disk
    replayed: int = 0  # spooled batches sent later
    refused: int = 0  # messages the broker refused for themselves (kept as .bad)


class KafkaWriter:
    """Writes batches to a topic (a :class:`~lineage_listener.store.writer.BatchWriter`); never raises
    to its caller.

    Each query is a message of its own, so batching queries saves little: capture writes a batch
    ``batch_interval`` seconds after its first rows, and paces its writes by their CPU time
    (``waits_on_network``: a write mostly waits for the broker's acknowledgements)."""

    batch_interval = 0.05
    waits_on_network = True

    def __init__(self, settings: KafkaSettings, lock_timeout: float = 10.0,
                 producer_conf: dict[str, Any] | None = None) -> None:
        self.settings = settings
        self.path = spool_anchor(settings)  # where spooled batches wait (and what logs name)
        self.lock_timeout = lock_timeout
        self.counts = Counts()
        #: since when the broker is unreachable, batches spooled since, the runs they hold
        self._outage: tuple[datetime, int, set[str]] | None = None
        self._notes = Batch()  # capture_errors rows for the next batch that gets through
        self._lock = threading.Lock()
        self._conf = {**PRODUCER_DEFAULTS, **(producer_conf or {})}
        self._fatal = False
        self._refusal: str | None = None  # why the brokers refused the last connection (TLS, SASL)
        self._producer = self._new_producer()

    def _new_producer(self) -> Any:
        return client_class("Producer")(self.settings.client(self._conf) | {"error_cb": self._client_error,
                                                                    "logger": quiet_logger()})

    def _restart(self) -> None:
        """A fatal client error (an idempotent producer fenced or out of sequence): a new producer."""
        log.warning("lineage-listener: Kafka producer for %s had a fatal error; starting a new one",
                    self.describe())
        self._producer.purge(in_queue=True, in_flight=True)
        self._producer.flush(0)
        self._fatal = False
        self._producer = self._new_producer()

    def describe(self) -> str:
        return f"kafka:{self.settings.topic}@{self.settings.bootstrap}"

    def spooled(self) -> list[Path]:
        return spool.pending(self.path)

    def waiting(self) -> bool:
        """True while spooled batches, or the record of an outage, wait to be sent."""
        return bool(len(self._notes)) or bool(self.spooled())

    def write(self, batch: Batch, wait: float | None = None) -> bool:
        """Send what is spooled, then ``batch``. True if everything was acknowledged."""
        with self._lock:
            if self._fatal:
                self._restart()
            budget = self.lock_timeout if wait is None else wait
            files = self.spooled()
            if files:  # a replay gets long enough for a broker that is back to acknowledge
                budget = max(budget, min(REPLAY_WAIT, self.lock_timeout))
            deadline = time.monotonic() + max(0.1, budget)
            if files and not self._replay(files, deadline):
                return self._park(batch, "the spool could not be sent yet")
            if len(self._notes):
                batch, self._notes = _joined(self._notes, batch), Batch()
            if not len(batch):
                return True
            self._refusal = None
            failed, refused, reason = self._send(batch, deadline)
            if failed is not None and self._refusal is not None:
                reason = self._refusal
            if refused is not None and len(refused):
                kept = spool.write(self.path, refused, suffix=".bad")
                log.error("lineage-listener: Kafka %s refused captured lineage (%s); kept as %s, not sent again",
                          self.describe(), reason, kept or "nothing: no spool folder is writable")
            if failed is not None:
                return self._park(failed, reason)
            return refused is None

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what the client still holds (bounded)."""
        self._producer.flush(timeout)

    # -- internals -------------------------------------------------------------------------
    def _send(self, batch: Batch, deadline: float) -> tuple[Batch | None, Batch | None, str]:
        """Produce ``batch``'s messages and wait for their acknowledgements until ``deadline``:
        (rows not acknowledged, rows refused for themselves, the first reason)."""
        results: list[tuple[messages.Part, Any]] = []
        try:
            encoded = messages.encode(batch)
        except Exception as exc:  # noqa: BLE001 - rows that cannot be encoded: kept for a person
            return None, batch, f"cannot encode: {type(exc).__name__}: {exc}"

        def report(part: messages.Part) -> Callable[[Any, Any], None]:
            return lambda err, _msg: results.append((part, err))
        for key, value, part in encoded:
            try:
                self._producer.produce(self.settings.topic, value=value, key=key, on_delivery=report(part))
            except BufferError:  # the bounded buffer is full: wait for room, not past the deadline
                self._producer.poll(max(0.0, min(1.0, deadline - time.monotonic())))
                try:
                    self._producer.produce(self.settings.topic, value=value, key=key, on_delivery=report(part))
                except BufferError:
                    results.append((part, "the client's buffer is full"))
            except Exception as exc:  # noqa: BLE001 - e.g. a message over message.max.bytes
                results.append((part, exc))
        left = self._producer.flush(max(0.0, deadline - time.monotonic()))
        if left:  # not acknowledged in time: take them back (their reports come now, as purged)
            self._producer.purge(in_queue=True, in_flight=True)
            self._producer.flush(0)
        failed = refused = None
        reason = ""
        for part, err in results:
            if err is None:
                self.counts.messages += 1
                continue
            reason = reason or _reason(err)
            if _refused(err):
                refused = refused or Batch()
                refused.extend(part.batch)
                self.counts.refused += 1
            else:
                failed = failed or Batch()
                failed.extend(part.batch)
        if len(results) < len(encoded):  # reports never served (should not happen): keep those rows
            reason = reason or "no acknowledgement"
            missing = {id(p) for p, _ in results}
            for _k, _v, part in encoded:
                if id(part) not in missing:
                    failed = failed or Batch()
                    failed.extend(part.batch)
        self.counts.batches += failed is None
        return failed, refused, reason

    def _replay(self, files: list[Path], deadline: float) -> bool:
        """Send spooled files oldest first, each removed once acknowledged; False when one did not get through."""
        for f in files:
            if time.monotonic() >= deadline:
                return False
            try:
                batch = Batch.from_json(f.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                log.error("lineage-listener: spooled batch %s cannot be read (%s); kept as %s.bad", f, exc, f.name)
                f.rename(f.with_suffix(".bad"))
                continue
            failed, refused, reason = self._send(batch, deadline)
            if failed is not None:
                return False
            if refused is not None:
                f.rename(f.with_suffix(".bad"))
                log.error("lineage-listener: Kafka %s refused spooled batch %s (%s); kept as %s, not sent again",
                          self.describe(), f.name, reason, f.with_suffix(".bad"))
                continue
            f.unlink(missing_ok=True)
            self.counts.replayed += 1
        if self._outage is not None:
            since, spooled, runs = self._outage
            self._outage = None
            text = (f"Kafka {self.describe()} unreachable from {since:%Y-%m-%d %H:%M:%S} UTC: {spooled} batches "
                    f"spooled to local disk, sent when it was back")
            log.warning("lineage-listener: %s", text)
            now = utcnow().isoformat(sep=" ")
            for run_id in sorted(runs) or [None]:
                self._notes.add(CaptureErrorRow(captured_at=now, run_id=run_id, query_id=None, stage="kafka", error=text))
        return True

    def _park(self, batch: Batch, reason: str) -> bool:
        if not len(batch):
            return False
        kept = spool.write(self.path, batch)
        self.counts.spooled += 1
        if self._outage is None:
            self._outage = (utcnow(), 0, set())
            log.warning("lineage-listener: Kafka %s not reachable (%s); captured lineage is spooled to %s and sent "
                        "when it is back", self.describe(), reason, spool.dirs(self.path)[0].parent)
        self._outage = (self._outage[0], self._outage[1] + 1, self._outage[2] | set(_runs_seen(batch)))
        if kept is None:
            log.error("lineage-listener: no spool folder of %s is writable: a batch of %d rows is lost",
                      self.path, len(batch))
        return False

    def _client_error(self, err: Any) -> None:
        log.debug("lineage-listener: Kafka client: %s", err)
        name = getattr(err, "name", None)
        if callable(name) and name() in _CONNECTION_REFUSED:
            self._refusal = redact.redact_text(str(err.str() if hasattr(err, "str") else err)).split(" (after ")[0][:300]
        if getattr(err, "fatal", lambda: False)():
            self._fatal = True


class Both:
    """Lineage to a store (or a lineage server) and to Kafka: each batch written to both (a
    :class:`~lineage_listener.store.writer.BatchWriter` of two).

    A store's spool and Kafka's spool wait apart: one that is down holds up only itself.
    """

    def __init__(self, primary: BatchWriter, kafka: KafkaWriter) -> None:
        self.primary, self.kafka = primary, kafka
        self.path = primary.path

    def describe(self) -> str:
        return f"{self.path} and {self.kafka.describe()}"

    @property
    def lock_timeout(self) -> float:
        return self.primary.lock_timeout

    @lock_timeout.setter
    def lock_timeout(self, value: float) -> None:  # hurry() shortens both
        self.primary.lock_timeout = self.kafka.lock_timeout = value

    def spooled(self) -> list[Path]:
        return self.primary.spooled() + self.kafka.spooled()

    def waiting(self) -> bool:
        return self.primary.waiting() or self.kafka.waiting()

    def write(self, batch: Batch, wait: float | None = None) -> bool:
        sent = self.kafka.write(batch, wait)
        return self.primary.write(batch, wait) and sent

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what the Kafka client still holds (bounded); the primary holds nothing open."""
        self.kafka.close(timeout)


def _joined(first: Batch, second: Batch) -> Batch:
    out = Batch()
    out.extend(first)
    out.extend(second)
    return out


def _runs_seen(batch: Batch) -> list[str]:
    return sorted({r[0] for r in batch.rows["runs"] if r and r[0]})


def _error(err: Any) -> Any:
    """The KafkaError inside a KafkaException (raised by ``produce``), else ``err``."""
    args = getattr(err, "args", None)
    return args[0] if args and hasattr(args[0], "name") else err


def _reason(err: Any) -> str:
    err = _error(err)
    name = getattr(err, "name", None)
    if callable(name) and name() in ("_PURGE_QUEUE", "_PURGE_INFLIGHT", "_MSG_TIMED_OUT"):
        return "no acknowledgement in time"
    return redact.redact_text(str(err.str() if hasattr(err, "str") else err))[:200]


def _refused(err: Any) -> bool:
    err = _error(err)
    name = getattr(err, "name", None)
    code = name() if callable(name) else None
    return code in _REFUSED or isinstance(err, ValueError)


class _Quiet(logging.Logger):
    """librdkafka's own lines (a broker that is down is said every few ms) at DEBUG: the writer says it once."""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:  # noqa: ARG002 - level: always DEBUG
        logging.getLogger(self.name).debug(msg, *args, **kwargs)


def quiet_logger() -> logging.Logger:
    """The logger librdkafka clients are given (``logger`` setting)."""
    return _Quiet("lineage_listener.kafka.client")
