"""Structured Streaming capture: a ``StreamingQueryListener`` and a stream's plan, read once per run.

A micro-batch never reaches a ``QueryExecutionListener``. Spark posts a progress
event after each one; :class:`StreamListener` (the py4j side of PySpark's
``PythonStreamingQueryListener``) queues it and returns. On the capture thread,
:func:`read_plan` reads the stream's analyzed plan once per stream run: the
``StreamExecution.logicalPlan`` every ``IncrementalExecution`` (``lastExecution``)
is built from, whose leaves are the sources themselves (a micro-batch's own plan
lists that batch's files, or an empty ``LocalRelation`` when a source had no new
data). Its sources and sink are read by :mod:`lineage_listener.capture.reading.readers.streaming`,
named as a batch read or write of the same path, table or topic is.

``foreachBatch``: Spark hands the function a ``LogicalRDD`` whose attributes are the
stream plan's outputs; :class:`StreamRegistry` maps them back to that plan so the
writes inside the function have the stream's sources. Those writes may be read before
the stream's first progress event, even after the stream stopped: the query of every
run is taken when it starts, and its plan read then if needed.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from lineage_listener import redact
from lineage_listener.capture.reading import facts, planreader
from lineage_listener.capture.jvm import jvm_call_failed, seq
from lineage_listener.capture.reading.readers.streaming import sink_fact, source_facts
from lineage_listener.lineage.datasets import RelationFact
from lineage_listener.plan.classes import MICRO_BATCH_LEAF, STREAM_SINK_WRITES
from lineage_listener.timewindow import utcnow

log = redact.logger(__name__)


class StreamEvents(Protocol):
    """What the listener hands stream events to (the capture pipeline)."""

    def on_stream_started(self, run_id: str, query: Any) -> None: ...

    def on_stream_progress(self, event: Any, query: Any) -> None: ...


class StreamListener:
    """Implements ``org.apache.spark.sql.streaming.PythonStreamingQueryListener`` for py4j.

    Runs on Spark's listener bus (progress) or the stream's own thread (start): it
    queues and returns, and never lets an exception escape into Spark.
    """

    def __init__(self, capture: StreamEvents, jsession: Any) -> None:
        self.capture = capture
        self.jsession = jsession
        self._seen: set[str] = set()  # stream runs whose query object was handed over already
        self._started: dict[str, Any] = {}  # stream run id -> its query, from the start event
        self._lock = threading.Lock()

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Java names
        """Spark calls this on the stream's thread as it starts: take the query object only (one
        call): a stream that ends fast (``trigger(once=True)``) is gone from ``active`` by the
        time its progress is delivered, and its plan is read from this object later."""
        try:
            query = self.jsession.streams().get(event.id())
            if query is not None:
                run = str(event.runId().toString())
                with self._lock:
                    self._started[run] = query
                self.capture.on_stream_started(run, query)
        except Exception as exc:  # noqa: BLE001 - never break the stream
            log.debug("could not take a started stream: %s", exc)

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        try:
            query = None
            progress = event.progress()
            run = str(progress.runId().toString())
            if run not in self._seen:  # hand the query object over once: its plan outlives a stop
                self._seen.add(run)
                with self._lock:
                    query = self._started.pop(run, None)
                if query is None:
                    query = self.jsession.streams().get(progress.id())
            self.capture.on_stream_progress(event, query)
        except Exception as exc:  # noqa: BLE001 - never break the stream
            log.warning("lineage-listener: could not take a streaming progress event: %s", exc)

    def take_active(self) -> int:
        """Take each active stream not seen yet as started (it started before this listener was
        added, so Spark will not tell it); the number taken. Its micro-batches' progress events come
        to this listener as any stream's: each is captured once.

        >>> listener.take_active()                            # doctest: +SKIP
        1
        """
        taken = 0
        for query in _active(self.jsession):
            run = str(query.runId().toString())
            with self._lock:
                if run in self._seen or run in self._started:
                    continue
                self._started[run] = query
            self.capture.on_stream_started(run, query)
            taken += 1
        return taken

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        with self._lock:  # a run that made no progress: nothing to read
            self._started.pop(str(event.runId().toString()), None)

    def toString(self) -> str:  # noqa: N802
        return "lineage_listener.StreamListener"

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


def register(jsession: Any, capture: StreamEvents) -> tuple[StreamListener, Any]:
    """Add a :class:`StreamListener` to ``jsession``'s streams: (listener, JVM wrapper); raises what
    Spark raises (e.g. an old Spark without ``PythonStreamingQueryListenerWrapper``).

    ``jsession.streams()`` builds Spark's ``StreamingQueryManager`` on a session's first use (the
    slowest JVM call of a capture's start): ``enable()`` runs this on a start-up thread. A stream
    started meanwhile is taken as started when the listener is in place (:meth:`StreamListener.take_active`).
    """
    from py4j.java_gateway import JavaClass

    listener = StreamListener(capture, jsession)
    wrapper_class = JavaClass(WRAPPER, jsession._gateway_client)  # no package lookups: one JVM call
    wrapper = wrapper_class(listener)
    jsession.streams().addListener(wrapper)
    return listener, wrapper


#: Spark's JVM side of a py4j ``StreamingQueryListener``.
WRAPPER = "org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper"


def unregister(jsession: Any, wrapper: Any) -> None:
    try:
        jsession.streams().removeListener(wrapper)
    except Exception as exc:  # noqa: BLE001
        log.debug("could not remove the streaming listener: %s", exc)


# -- reading a progress event -------------------------------------------------------


@dataclass(frozen=True)
class Progress:
    """One micro-batch, as its progress event tells it."""

    stream_id: str
    stream_run_id: str
    name: str | None
    batch_id: int
    at: datetime
    duration_ms: int | None


def progress_of(event: Any, now: datetime) -> Progress:
    p = event.progress()
    name = p.name()
    try:
        duration = int(p.batchDuration())
    except jvm_call_failed():
        duration = None
    try:
        ts = str(p.timestamp())  # ISO 8601 with Z
        at = datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(timezone.utc).replace(tzinfo=None)
    except (*jvm_call_failed(), ValueError):
        at = now
    return Progress(str(p.id().toString()), str(p.runId().toString()), str(name) if name else None,
                    int(p.batchId()), at, duration)


# -- the registry for foreachBatch ------------------------------------------------------


@dataclass
class StreamPlan:
    """A stream run's plan as read once: what its micro-batches and foreachBatch writes need."""

    progress: Progress
    root: str
    plan_json: str
    items: Any
    leaves: dict[int, RelationFact]
    target: RelationFact | None
    query_items: Any  # the plan under the sink: what a foreachBatch LogicalRDD holds
    output_ids: tuple[int, ...] = ()
    fallback: str | None = None  # why the compact reader was not used (recorded), else None


@dataclass
class StreamRegistry:
    """Stream plans by the exprIds of their query's outputs (bounded). Two streams of one
    DataFrame share their sources' exprIds: the whole output tells them apart."""

    by_output: dict[tuple[int, ...], StreamPlan] = field(default_factory=dict)
    #: Stream runs started whose plan is not read yet: run id -> its query (at most ``MAX_UNREAD``).
    unread: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    #: Started runs kept unread at most (the oldest go first: runs that stopped before any batch).
    MAX_UNREAD = 100

    def add(self, plan: StreamPlan) -> None:
        with self.lock:
            if len(self.by_output) > 1000:
                self.by_output.clear()
            if plan.output_ids:
                self.by_output[plan.output_ids] = plan
            self.unread.pop(plan.progress.stream_run_id, None)

    def get(self, expr_ids: tuple[int, ...]) -> StreamPlan | None:
        with self.lock:
            return self.by_output.get(expr_ids)

    def started(self, run_id: str, query: Any) -> None:
        """A stream run started (its ``StreamingQuery``): its plan is read when a ``foreachBatch``
        write of it comes before its first progress event, even once the stream has stopped."""
        with self.lock:
            while len(self.unread) >= self.MAX_UNREAD:
                self.unread.pop(next(iter(self.unread)))
            self.unread[run_id] = query

    def unread_queries(self) -> list[Any]:
        with self.lock:
            return list(self.unread.values())


def read_plan(query: Any, progress: Progress, scope: str | None) -> StreamPlan:
    """Read a stream's plan, sources and sink (py4j calls; on the capture thread)."""
    execution = query.streamingQuery() if "streamingQuery" in dir(query) else query
    plan = execution.logicalPlan()
    root = str(plan.nodeName())
    plan_json, items, fallback = planreader.read(plan)  # compact reader, else toJSON (as batch plans)
    leaves = facts.leaves(plan, items)  # static sides of stream-static joins: batch leaves
    leaves.update(source_facts(execution, scope))
    target = None
    if root in STREAM_SINK_WRITES:
        target = sink_fact(execution, plan, progress.name)
        child = plan.children().apply(0) if plan.children().length() else plan
    else:
        child = plan
    if target is not None:
        try:
            target["schema"] = str(child.schema().json())
        except jvm_call_failed():
            pass
    try:
        output_ids = tuple(int(a.exprId().id()) for a in seq(child.output()))
    except jvm_call_failed():
        output_ids = ()
    query_items = items[1:] if root in STREAM_SINK_WRITES else items
    return StreamPlan(progress, root, plan_json, items, leaves, target, query_items, output_ids, fallback)


def foreach_batch_leaves(items: Any, registry: StreamRegistry, sessions: list[Any],
                         scope: str | None) -> dict[int, RelationFact]:
    """Facts for the ``LogicalRDD`` leaves of a batch plan that are a stream's micro-batch
    (``foreachBatch``): the stream's plan and sources, keyed like any leaf."""
    rdd_ids = _rdd_leaf_ids(items)
    if not rdd_ids:
        return {}
    out: dict[int, RelationFact] = {}
    for ids in rdd_ids:
        plan = registry.get(ids)
        if plan is None:  # its stream's first progress event is not read yet: the runs started
            _read_queries(registry, registry.unread_queries(), scope)
            plan = registry.get(ids)
        for session in sessions if plan is None else ():
            _read_queries(registry, _active(session), scope)
            plan = registry.get(ids)
            if plan is not None:
                break
        if plan is not None:
            out[ids[0]] = {"stream_plan": plan.query_items, "stream_leaves": plan.leaves,
                        "stream": {"id": plan.progress.stream_id, "name": plan.progress.name}}
    return out


def _rdd_leaf_ids(items: Any) -> list[tuple[int, ...]]:
    out = []
    stack = [items]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            if str(value.get("class", "")).endswith("." + MICRO_BATCH_LEAF):
                ids = tuple(a[0].get("exprId", {}).get("id") for a in value.get("output") or []
                            if isinstance(a, list) and a and isinstance(a[0], dict))
                if ids and None not in ids:
                    out.append(ids)
            stack.extend(v for v in value.values() if isinstance(v, (list, dict)))
    return out


def _active(session: Any) -> list[Any]:
    """The session's active streams (a foreachBatch write runs in a clone of the stream's session)."""
    try:
        active = session.streams().active()
        return [active[i] for i in range(len(active))]
    except (*jvm_call_failed(), TypeError) as exc:
        log.debug("could not list active streams: %s", exc)
        return []


def _read_queries(registry: StreamRegistry, queries: list[Any], scope: str | None) -> None:
    """Register the plans of ``queries`` (a foreachBatch write may be read before its stream's
    first progress event). A stream that has not built its plan yet is left for later."""
    now = utcnow()
    for q in queries:
        try:
            name = q.name()
            progress = Progress(str(q.id().toString()), str(q.runId().toString()), str(name) if name else None,
                                -1, now, None)
            registry.add(read_plan(q, progress, scope))
        except (*jvm_call_failed(), ValueError) as exc:
            log.debug("could not read a stream's plan: %s", exc)
