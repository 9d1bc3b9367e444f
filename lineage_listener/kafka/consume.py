"""A topic into a store: messages merged into batches, written by the store's one writer, offsets after.

:class:`TopicIngest` runs one thread: it polls the topic, turns each message into rows
(:func:`~lineage_listener.kafka.messages.decode`: ours from the facet, any other producer's event
as the HTTP endpoint ingests it), merges consecutive messages while that writes the same rows
(:class:`~lineage_listener.kafka.chunk.Chunk`) and hands each batch to the
:class:`~lineage_listener.store.group_writer.GroupWriter` together with the partitions' next offsets,
which it records in ``kafka_offsets`` in the same transaction. Offsets are committed to Kafka only
after that transaction: a consumer killed in between gets the messages again, and the store's
record skips them. Writes are idempotent besides, so nothing is lost and nothing doubled.

A merged batch the store refuses is written again one message at a time; a message that still
fails, or that is not an event at all, goes to the dead letter (:mod:`~lineage_listener.kafka.deadletter`)
and the partition goes on. A store that cannot be written for a while (spooled beside it, 202)
counts as written: the spool is the store's own queue and is written first when it opens.

Only one process consumes into one store file (DuckDB has one writer): with ``exclusive``, a
process first takes ``<store>.kafka-active`` (an advisory lock the kernel releases when the
process dies, even by SIGKILL); a second one waits as the standby, then joins the consumer
group and continues from the committed offsets.
"""
from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lineage_listener.kafka import messages, offsets
from lineage_listener.kafka.chunk import Chunk
from lineage_listener.kafka.deadletter import DeadLetter
from lineage_listener.kafka.publish import quiet_logger
from lineage_listener.kafka.settings import KafkaSettings, client_class
from lineage_listener.store import private
from lineage_listener.store.group_writer import GroupWriter, QueueFull

log = logging.getLogger(__name__)

#: Consumer settings of ours; the user's client settings override them. A dead consumer's partitions
#: move on after ``session.timeout.ms`` (the take-over time of a standby).
CONSUMER_DEFAULTS: dict[str, Any] = {
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "session.timeout.ms": 6000,  # the broker's least (group.min.session.timeout.ms)
    "heartbeat.interval.ms": 1000,
    "enable.partition.eof": False,
    "client.id": "lineage-listener-consumer",
}
DEFAULT_GROUP = "lineage-listener"
#: Rows at most in one merged batch (a store write's cost is mostly per statement: a catch-up writes
#: few, large batches).
CHUNK_ROWS = 20_000
#: Messages taken at most per poll (those already fetched; a poll waits only for the first).
POLL_MESSAGES = 2000
#: Seconds a poll waits for a first message.
POLL_WAIT = 0.2
#: Seconds between reads of the partitions' high watermarks (lag).
LAG_EVERY = 2.0
#: Seconds over which /api/health and doctor give rates.
RATE_WINDOW = 10.0
#: Seconds the writer keeps the store open after a batch of the topic when nothing else waits: the
#: next message of a topic that flows is written without reopening the store, and the server's reads
#: meanwhile take cursors of the open database (``GroupWriter.submit``'s ``keep_open``).
KEEP_OPEN = 2.0
#: Seconds a batch the writer could not take (queue full, a failing store) waits before it is sent again.
RETRY_AFTER = 0.5


def _poll(consumer: Any) -> list[Any]:
    """The next messages: the first as soon as it is there (within ``POLL_WAIT``), with those
    fetched already behind it (up to ``POLL_MESSAGES``): a lone message is not held back waiting
    for more, a backlog comes in large batches."""
    first = consumer.poll(POLL_WAIT)
    if first is None:
        return []
    return [first, *consumer.consume(num_messages=POLL_MESSAGES - 1, timeout=0)]


def _rates(points: list[tuple[float, int, int]], now: float, events: int, edges: int,
           window: float = RATE_WINDOW) -> tuple[float, float]:
    """Events and edge rows written per second over the last ``window`` seconds.

    >>> _rates([(0.0, 0, 0), (5.0, 100, 1000)], 10.0, 100, 1000)
    (10.0, 100.0)
    >>> _rates([(0.0, 0, 0), (5.0, 100, 1000)], 30.0, 100, 1000)
    (0.0, 0.0)
    """
    before = [p for p in points if p[0] <= now - window]
    inside = [p for p in points if p[0] > now - window]
    if not inside:
        return 0.0, 0.0
    base = before[-1] if before else inside[0]
    span = max(now - base[0], 1e-3)
    return round((events - base[1]) / span, 1), round((edges - base[2]) / span, 1)


@dataclass
class _Slot:
    """One consumed message: done once its rows are in the store (or it is dead-lettered or skipped)."""

    offset: int
    done: bool = False


@dataclass
class _Sent:
    """A batch handed to the writer: the messages it holds."""

    batch: Any
    slots: list[tuple[int, _Slot, Any]]  # (partition, slot, message)
    events: int
    edges: int
    at: float = field(default_factory=time.monotonic)


class TopicIngest:
    """Consumes ``settings.topic`` into ``writer``'s store; see the module docstring."""

    def __init__(self, settings: KafkaSettings, writer: GroupWriter, group: str = DEFAULT_GROUP,
                 dead_letter: DeadLetter | None = None, exclusive: bool = True, chunk_rows: int = CHUNK_ROWS,
                 consumer_conf: dict[str, Any] | None = None) -> None:
        self.settings = settings
        self.writer = writer
        self.group = group
        self.dead_letter = dead_letter or DeadLetter(Path(str(writer.store) + ".dead-letter.ndjson"))
        self.exclusive = exclusive
        self.chunk_rows = chunk_rows
        self._conf = {**CONSUMER_DEFAULTS, **(consumer_conf or {})}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._answers: queue.SimpleQueue[tuple[_Sent, tuple[int, dict]]] = queue.SimpleQueue()
        self._retry: deque[_Sent] = deque()
        self._slots: dict[int, deque[_Slot]] = {}  # partition -> consumed, oldest first
        self._floor: dict[int, int] = {}  # partition -> first offset the store does not hold
        self._committed: dict[int, int] = {}
        self._last: dict[int, int] = {}
        self._high: dict[int, int] = {}
        self._stats_lock = threading.Lock()
        self._counts = {"events": 0, "messages": 0, "rows": 0, "edges": 0, "batches": 0, "skipped": 0,
                        "dead_letters": 0, "foreign_events": 0, "retried": 0}
        self._rates: deque[tuple[float, int, int]] = deque(maxlen=64)  # (time, events, edge rows) written
        self.state = "starting"
        self.active_since: float | None = None
        self.error: str | None = None
        self._lock_fd: int | None = None

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> "TopicIngest":
        self._thread = threading.Thread(target=self._main, name="lineage-kafka-ingest", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Finish what is being written, commit its offsets, leave the group and the active lock."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def wait_idle(self, idle: float, timeout: float | None = None) -> bool:
        """Block until the topic is drained into the store (no lag, nothing pending) for ``idle`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        since = None
        while deadline is None or time.monotonic() < deadline:
            if self.state == "failed":
                return False
            drained = self.state == "active" and self.drained()
            now = time.monotonic()
            since = (since or now) if drained else None
            if since is not None and now - since >= idle:
                return True
            time.sleep(0.1)
        return False

    def drained(self) -> bool:
        """True when every assigned partition is committed up to its high watermark."""
        with self._stats_lock:
            if not self._high:
                return False
            return all(self._committed.get(p, 0) >= h for p, h in self._high.items()) and not any(
                self._slots.get(p) for p in self._high)

    def stats(self) -> dict[str, Any]:
        """State, counts since start, per-partition offsets and lag, recent rates (doctor, /api/health)."""
        with self._stats_lock:
            partitions = [{"partition": p, "last_offset": self._last.get(p), "committed": self._committed.get(p),
                           "high_watermark": self._high.get(p),
                           "lag": (max(0, self._high[p] - self._committed.get(p, 0)) if p in self._high else None)}
                          for p in sorted(set(self._high) | set(self._last) | set(self._committed))]
            rates = list(self._rates)
            counts = dict(self._counts)
        events_s, edges_s = _rates(rates, time.monotonic(), counts["events"], counts["edges"])
        return {"state": self.state, "topic": self.settings.topic, "bootstrap": self.settings.bootstrap,
                "group": self.group, "error": self.error,
                "active_for_s": round(time.monotonic() - self.active_since, 1) if self.active_since else None,
                "partitions": partitions, "lag": sum(p["lag"] or 0 for p in partitions), **counts,
                "events_per_s": events_s, "edge_rows_per_s": edges_s,
                "dead_letter": str(self.dead_letter.path) + (f" (and topic {self.dead_letter.topic})"
                                                             if self.dead_letter.topic else "")}

    # -- the thread -----------------------------------------------------------------------------
    def _main(self) -> None:
        consumer = None
        try:
            if self.exclusive and not self._take_active_lock():
                return
            consumer = client_class("Consumer")(self.settings.client({**self._conf, "group.id": self.group,
                                                              "logger": quiet_logger()}))
            consumer.subscribe([self.settings.topic], on_assign=self._assigned, on_revoke=self._revoked)
            self.state, self.active_since = "active", time.monotonic()
            log.warning("lineage-listener: consuming %s (group %s) into %s", self.settings.describe(), self.group,
                        self.writer.store)
            self._loop(consumer)
        except Exception as exc:  # noqa: BLE001 - said once; /api/health and doctor show it
            self.state, self.error = "failed", f"{type(exc).__name__}: {exc}"
            log.exception("lineage-listener: Kafka consumer of %s stopped", self.settings.describe())
        finally:
            if consumer is not None:
                with contextlib.suppress(Exception):
                    self._drain(consumer, 30.0)
                with contextlib.suppress(Exception):
                    consumer.close()
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # the lock goes with it
            if self.state != "failed":
                self.state = "stopped"

    def _take_active_lock(self) -> bool:
        """Hold ``<store>.kafka-active`` (the standby waits here); False when stopped first."""
        import fcntl

        path = Path(str(self.writer.store) + ".kafka-active")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = private.open_lock(path)
        said = False
        while not self._stop.is_set():
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._lock_fd = fd
                return True
            except OSError:
                if not said:
                    said = True
                    self.state = "standby"
                    log.warning("lineage-listener: another process consumes %s into %s; standing by",
                                self.settings.topic, self.writer.store)
                self._stop.wait(0.2)
        os.close(fd)
        return False

    def _loop(self, consumer: Any) -> None:
        next_lag = 0.0
        while not self._stop.is_set():
            self._settle(consumer)
            self._take(_poll(consumer))
            self._settle(consumer)
            if time.monotonic() >= next_lag:
                next_lag = time.monotonic() + LAG_EVERY
                self._read_lag(consumer)

    def _take(self, msgs: list[Any]) -> None:
        """Decode messages, merge them into chunks (:class:`~lineage_listener.kafka.chunk.Chunk`) and
        hand each to the writer."""
        taken = []
        foreign = 0
        for m in msgs:
            if m.error() is not None:
                log.debug("lineage-listener: Kafka consumer: %s", m.error())
                continue
            p, off = m.partition(), m.offset()
            slot = _Slot(off)
            with self._stats_lock:
                self._slots.setdefault(p, deque()).append(slot)
                self._last[p] = off
            if off < self._floor.get(p, -1):  # the store holds it already (committed to it, not to Kafka)
                slot.done = True
                with self._stats_lock:
                    self._counts["skipped"] += 1
                continue
            try:
                decoded = messages.decode(m.value())
            except ValueError as exc:
                self._kill(m, str(exc))
                slot.done = True
                continue
            foreign += 0 if decoded.ours else decoded.events
            taken.append((p, slot, m, decoded))
        with self._stats_lock:
            self._counts["foreign_events"] += foreign
        while taken:  # a message that does not fit waits for the next chunk, and so do later ones of its key
            chunk, held, later, blocked = Chunk(self.chunk_rows), [], [], set()
            for item in taken:
                key = item[2].key() or item[0]  # no key: its partition keeps its order
                if key in blocked or not chunk.take(item[3].batch):
                    blocked.add(key)
                    later.append(item)
                else:
                    held.append(item)
            self._send(chunk, held)
            taken = later

    def _send(self, chunk: Chunk, held: list[tuple[int, _Slot, Any, Any]]) -> None:
        sent = _Sent(chunk.batch, [(p, s, m) for p, s, m, _ in held], sum(d.events for *_, d in held),
                     len(chunk.batch.rows["column_lineage"]))
        self._submit(sent)

    def _submit(self, sent: _Sent) -> None:
        nexts: dict[int, int] = {}
        for p, slot, _m in sent.slots:
            nexts[p] = max(nexts.get(p, 0), slot.offset + 1)
        while True:
            try:
                self.writer.submit(sent.batch, lambda answer: self._answers.put((sent, answer)),
                                   also=offsets.recorder(self.settings.topic, nexts), quiet=True,
                                   keep_open=KEEP_OPEN)
                return
            except QueueFull:  # the writer is busy: wait for room, handling what it has answered
                if self._stop.is_set():
                    self._retry.append(sent)
                    return
                self._settle(None)
                time.sleep(0.05)

    def _settle(self, consumer: Any) -> None:
        """Handle the writer's answers (written, refused, failed), retry what is due, commit what is done."""
        while True:
            try:
                sent, (status, body) = self._answers.get_nowait()
            except queue.Empty:
                break
            if status in (200, 202):
                for _p, slot, _m in sent.slots:
                    slot.done = True
                with self._stats_lock:
                    self._counts["events"] += sent.events
                    self._counts["messages"] += len(sent.slots)
                    self._counts["rows"] += len(sent.batch)
                    self._counts["edges"] += sent.edges
                    self._counts["batches"] += 1
                    self._rates.append((time.monotonic(), self._counts["events"], self._counts["edges"]))
            elif status == 422 and len(sent.slots) > 1:  # one message sinks only itself
                for p, slot, m in sent.slots:
                    decoded = messages.decode(m.value())
                    self._submit(_Sent(decoded.batch, [(p, slot, m)], decoded.events,
                                       len(decoded.batch.rows["column_lineage"])))
            elif status == 422:
                _p, slot, m = sent.slots[0]
                self._kill(m, f"the store refused it: {body.get('detail')}")
                slot.done = True
            else:  # the store failed (not the rows): again in a moment, in order
                with self._stats_lock:
                    self._counts["retried"] += 1
                sent.at = time.monotonic() + RETRY_AFTER
                self._retry.append(sent)
        while self._retry and self._retry[0].at <= time.monotonic() and not self._stop.is_set():
            self._submit(self._retry.popleft())
        if consumer is not None:
            self._commit(consumer)

    def _kill(self, m: Any, reason: str) -> None:
        self.dead_letter.keep(m.topic(), m.partition(), m.offset(), m.key(), m.value(), reason)
        with self._stats_lock:
            self._counts["dead_letters"] += 1

    def _commit(self, consumer: Any, partitions: list[int] | None = None) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        todo = []
        with self._stats_lock:
            for p, slots in self._slots.items():
                if partitions is not None and p not in partitions:
                    continue
                last = None
                while slots and slots[0].done:
                    last = slots.popleft().offset
                if last is not None:
                    todo.append(TopicPartition(self.settings.topic, p, last + 1))
        if not todo:
            return
        try:
            consumer.commit(offsets=todo, asynchronous=False)
        except KafkaException as exc:  # a rebalance under way: the store's record covers a lost commit
            log.info("lineage-listener: Kafka offsets not committed now (%s)", exc)
            return
        with self._stats_lock:
            for tp in todo:
                self._committed[tp.partition] = max(self._committed.get(tp.partition, 0), tp.offset)

    def _drain(self, consumer: Any, timeout: float, partitions: list[int] | None = None) -> None:
        """Wait (bounded) for what was sent of ``partitions`` (default all) to be answered, then commit it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._settle(None)
            with self._stats_lock:
                busy = any(not s.done for p, q in self._slots.items() if partitions is None or p in partitions
                           for s in q)
            if not busy:
                break
            time.sleep(0.02)
        self._commit(consumer, partitions)

    def _assigned(self, consumer: Any, partitions: list[Any]) -> None:
        mine = [tp.partition for tp in partitions]
        try:
            floor = {}
            if Path(self.writer.store).exists():  # a new store holds no message yet
                with self.writer.reading() as con:
                    floor = offsets.read(con, self.settings.topic)
        except Exception as exc:  # noqa: BLE001 - no record: the idempotent writes still hold
            log.warning("lineage-listener: could not read kafka_offsets of %s (%s)", self.writer.store, exc)
            floor = {}
        committed = {}
        with contextlib.suppress(Exception):
            committed = {tp.partition: tp.offset for tp in consumer.committed(partitions, timeout=10)
                         if tp.offset >= 0}
        with self._stats_lock:
            for p in mine:
                self._floor[p] = floor.get(p, -1)
                self._committed[p] = max(committed.get(p, 0), self._committed.get(p, 0))
        log.info("lineage-listener: assigned partitions %s of %s", mine, self.settings.topic)

    def _revoked(self, consumer: Any, partitions: list[Any]) -> None:
        mine = [tp.partition for tp in partitions]
        self._drain(consumer, 60.0, mine)
        with self._stats_lock:
            for p in mine:
                self._slots.pop(p, None)
                if not self._stop.is_set():  # moved to another consumer: its lag is not ours to show
                    self._high.pop(p, None)

    def _read_lag(self, consumer: Any) -> None:
        """The partitions' high watermarks, as the last fetch brought them. Only a partition not fetched
        yet is asked of the broker: that request waits behind the consumer's own fetch on the same
        connection (up to ``fetch.wait.max.ms``), and this thread is the one that takes messages."""
        from confluent_kafka import TopicPartition

        try:
            assignment = consumer.assignment()
        except Exception:  # noqa: BLE001
            return
        for tp in assignment:
            part = TopicPartition(tp.topic, tp.partition)
            try:
                _low, high = consumer.get_watermark_offsets(part, cached=True)
                if high < 0:  # no fetch of it answered yet
                    _low, high = consumer.get_watermark_offsets(part, timeout=2, cached=False)
            except Exception:  # noqa: BLE001 - the broker away: the last known stays
                continue
            with self._stats_lock:
                self._high[tp.partition] = high
