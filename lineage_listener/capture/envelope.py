"""What the listener takes from a live ``QueryExecution`` on Spark's listener-bus thread.

Everything else (parsing, walking, writing) happens later on the capture thread,
from this plain, immutable record.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from lineage_listener import redact
from lineage_listener.capture import (
    command_result,
    facts,
    inference,
    internal,
    nodelay,
    planreader,
    rejected,
    stages,
    statement,
    streams,
)
from lineage_listener.capture.jvm import jvm_call_failed
from lineage_listener.plan.classes import (
    MICRO_BATCH_LEAF,
    STREAM_SINK_WRITES,
    WRAPPER_COMMANDS,
    WRITE_COMMANDS,
)
from lineage_listener.plan.text import has_class

log = redact.logger(__name__)

#: Commands whose target is named relative to the session's current database.
_NEEDS_CURRENT = frozenset({"SaveAsV1TableCommand", "CreateViewCommand", "AlterViewAsCommand"})


#: ``folds(root, app_id, qe_id)``: whether a wrapper event folds into a write already recorded.
Folds = Callable[[str, str, "int | None"], bool]


@dataclass(frozen=True, kw_only=True)
class Envelope:
    """One action, as read from the JVM: enough to compute its lineage later (built by keyword)."""

    func_name: str
    captured_at: datetime
    run: Mapping[str, Any]
    qe_id: int | None = None
    root: str | None = None
    plan_json: str | None = None
    sql_text: str | None = None
    duration_ms: int | None = None
    error: str | None = None  # the action failed with this error
    leaves: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    target: Mapping[str, Any] | None = None
    read_error: str | None = None  # the listener could not read everything it wanted
    duration_ns: int | None = None
    #: ``plan_json`` decoded once by the reader (it needs the leaves); the walk reuses it.
    plan_items: Any = field(default=None, compare=False, repr=False)
    #: A streaming micro-batch: its progress (the plan is read once per stream run, then None).
    stream: "streams.Progress | None" = None


class Reader:
    """Reads envelopes from ``QueryExecution`` objects; caches per-run and per-leaf facts."""

    def __init__(self) -> None:
        self._runs: dict[str, dict[str, Any]] = {}
        self._facts = facts.FactCache()
        self._nodelay_threads: set[int] = set()
        self.streams = streams.StreamRegistry()
        #: Sessions whose streams a foreachBatch write may come from (its own session is a clone).
        self.stream_sessions: list[Any] = []
        self._stream_runs: dict[str, Any] = {}  # stream run id -> its query object (until its plan is read)
        self._stream_app: dict[str, dict[str, Any]] = {}  # stream run id -> its application's facts

    def runs(self) -> dict[str, dict[str, Any]]:
        """Facts of every application seen so far, by app id."""
        return dict(self._runs)

    def run(self, qe: Any) -> dict[str, Any]:
        sc = qe.sparkSession().sparkContext()
        app_id = str(sc.applicationId())
        if app_id not in self._runs:
            self._runs[app_id] = facts.run_info(sc)
        return self._runs[app_id]

    def read(self, func_name: str, qe: Any, duration_ns: int | None, error: Any = None,
             now: datetime | None = None, folds: Folds | None = None) -> Envelope | None:
        """An envelope for this action, or None for actions that carry no lineage (DDL, SET...).

        ``folds(root, app_id, qe_id)``: whether a wrapper event folds into a write already
        recorded (then its plan, the same query again, is not read: only its target); given by a
        capture that reads and records in turn on one thread (:meth:`Recorder.folds`).

        With the bridge jar's compact reader, two JVM calls: the query's head, then (if its
        lineage is wanted) its plan with the facts of its leaves and write target.
        """
        now = now or datetime.now(timezone.utc).replace(tzinfo=None)
        duration_ms = int(duration_ns // 1_000_000) if duration_ns is not None else None
        err_text = _error_text(error) if error is not None else None
        head = None if rejected.is_rejected(func_name) else planreader.head(qe)
        if head is not None and "root" in head:
            if command_result.reads_result(func_name, qe, head):
                return None  # the rows of a command that ran (and was captured) already
            action = Envelope(func_name=func_name, captured_at=now, run=self._run_of_app(str(head["app"]), qe),
                              qe_id=int(head["qe"]) if head.get("qe") is not None else None,
                              root=str(head["root"]), sql_text=head.get("sql"), duration_ms=duration_ms,
                              error=err_text, duration_ns=duration_ns)
            return self._read_plan(qe, None, action, folds)
        run = self.run(qe)
        try:
            qe_id = int(qe.id())
        except jvm_call_failed():
            qe_id = None
        if rejected.is_rejected(func_name):  # Spark 4: the analyzer rejected the statement
            err_text = rejected.error_text(error) if error is not None else "rejected during analysis"
            rejected.noted(func_name, err_text)
            return Envelope(func_name=func_name, captured_at=now, run=run, qe_id=qe_id, root=rejected.command(qe),
                            sql_text=rejected.sql_text(qe), error=err_text)
        try:
            plan = qe.analyzed()
        except jvm_call_failed() as exc:  # analysis itself failed: record the failure
            return Envelope(func_name=func_name, captured_at=now, run=run, qe_id=qe_id, duration_ms=duration_ms,
                            error=err_text or _error_text(exc), duration_ns=duration_ns)
        root = str(plan.nodeName())
        if head is None and command_result.reads_result(func_name, qe, None):
            return None  # the rows of a command that ran (and was captured) already
        sql_text = None
        try:  # below the root only for writes: a few py4j calls per node
            sql_text = statement.statement_text(qe.logical(), statement.NODES if root in WRITE_COMMANDS else 0)
        except jvm_call_failed():
            pass
        return self._read_plan(qe, plan, Envelope(func_name=func_name, captured_at=now, run=run, qe_id=qe_id,
                                                  root=root, sql_text=sql_text, duration_ms=duration_ms,
                                                  error=err_text, duration_ns=duration_ns), folds)

    def _read_plan(self, qe: Any, plan: Any, action: Envelope, folds: Folds | None) -> Envelope | None:
        """The envelope of an analyzed query: ``action`` (what the head told: no plan yet) with its plan,
        leaves and target read (``plan``: the JVM plan, or None: asked when needed); None when the
        query carries no lineage of the user's."""
        func_name, root, run, qe_id, sql_text = action.func_name, action.root or "", action.run, action.qe_id, \
            action.sql_text
        if func_name == "command" and root not in WRITE_COMMANDS or root in STREAM_SINK_WRITES:
            return None  # DDL/utility; a micro-batch's own write is captured from its progress event
        if internal.reason(func_name, root, sql_text) is not None:
            return None  # a table format's own work (Delta log replay, its data write...)

        if root in WRAPPER_COMMANDS and folds is not None and folds(root, run["app_id"], qe_id):
            current = _current(qe) if root in _NEEDS_CURRENT else None
            try:
                with stages.timed("facts"):
                    target = planreader.read_target(qe) or facts.target(qe.analyzed(), root, current)
            except jvm_call_failed() as exc:
                return replace(action, read_error=f"{type(exc).__name__}: {str(exc)[:500]}")
            return replace(action, target=target)

        def jvm_plan() -> Any:  # py4j calls below need the plan object: one more call, once
            nonlocal plan
            if plan is None:
                plan = qe.analyzed()
            return plan
        plan_json, items, leaves, target, read_error = None, None, {}, None, None
        if threading.get_ident() not in self._nodelay_threads:  # before the first big reply
            self._nodelay_threads.add(threading.get_ident())
            nodelay.disable_nagle(qe)
        try:
            read = planreader.read_query(qe, root in WRITE_COMMANDS)
            if read is None:  # no compact reader: toJSON, facts by py4j calls
                text, decoded, fallback = planreader.read(jvm_plan())
                read = planreader.QueryRead(text, decoded, fallback=fallback)
            plan_json, items = read.text, read.items
            if command_result.reads_only_results(root, items):
                return None  # a command's result rows, and nothing else
            read_error = read.fallback  # recorded (capture_errors), not an error of the capture
            if stages.enabled():
                stages.add("transfer", stages.transfer_time(len(plan_json)))
            current = _current(qe) if root in _NEEDS_CURRENT else None
            with stages.timed("facts"):
                nulls: list[dict[str, Any]] = []
                if read.leaves is None:
                    leaves = facts.leaves(jvm_plan(), items, current, self._facts, nulls)
                else:  # read with the plan; what the JVM side did not describe is read here
                    leaves = dict(read.leaves)
                    if read.unresolved:
                        leaves.update(facts.resolve(jvm_plan(), read.unresolved, current, self._facts))
                    if read.nulls:
                        nulls = facts.null_fields(items)
                if nulls:  # fields toJSON could not write: read from the JVM (leaves they hold too)
                    leaves.update(facts.leaves(jvm_plan(), facts.repair_null_fields(jvm_plan(), items, nulls),
                                               current, self._facts))
                if has_class(plan_json, MICRO_BATCH_LEAF):  # a foreachBatch micro-batch: the stream's plan
                    leaves.update(streams.foreach_batch_leaves(items, self.streams, self.stream_sessions,
                                                               run.get("app_name")))
                if root not in WRITE_COMMANDS and inference.is_schema_inference(func_name, leaves.values()):
                    log.debug("lineage-listener: skipped Spark's schema inference read (%s)", func_name)
                    return None  # Spark reading a file to infer its schema: not the user's lineage
                if root in WRITE_COMMANDS:
                    target = read.target if read.target is not None else facts.target(jvm_plan(), root, current)
                if target is None and root == "CreateViewCommand":
                    return None  # a temp view: not a dataset, nothing written
            if plan_json is not None and internal.plan_reason(root, plan_json, leaves) is not None:
                return None
        except (*jvm_call_failed(), ValueError, RecursionError) as exc:  # recorded; Python bugs surface
            read_error = f"{type(exc).__name__}: {str(exc)[:500]}"
        return replace(action, plan_json=plan_json, leaves=leaves, target=target, read_error=read_error,
                       plan_items=items)

    def read_stream(self, event: Any, query: Any, now: datetime) -> Envelope | None:
        """An envelope for one micro-batch: its progress, and the stream's plan the first time
        its run is seen (``query``: the ``StreamingQuery`` the listener took for a new run)."""
        progress = streams.progress_of(event, now)
        if query is not None:
            self._stream_runs[progress.stream_run_id] = query
        query = self._stream_runs.pop(progress.stream_run_id, None)
        if query is None:  # plan read already: the recorder knows this run's lineage
            run = self._stream_app.get(progress.stream_run_id) or next(iter(self._runs.values()), None)
            if run is None:
                return None
            return Envelope(func_name="stream", captured_at=progress.at, run=run, duration_ms=progress.duration_ms,
                            stream=progress)
        session = query.sparkSession()
        run = self.run_of_session(session)
        self._stream_app[progress.stream_run_id] = run
        if not any(session.equals(s) for s in self.stream_sessions):  # the bridge: sessions as streams show them
            self.stream_sessions.append(session)
        try:
            with stages.timed("stream.read"):
                plan = streams.read_plan(query, progress, run.get("app_name"))
        except (*jvm_call_failed(), ValueError, RecursionError) as exc:
            return Envelope(func_name="stream", captured_at=progress.at, run=run, duration_ms=progress.duration_ms,
                            read_error=f"{type(exc).__name__}: {str(exc)[:500]}", stream=progress)
        self.streams.add(plan)
        return Envelope(func_name="stream", captured_at=progress.at, run=run, root=plan.root,
                        plan_json=plan.plan_json, duration_ms=progress.duration_ms, leaves=plan.leaves,
                        target=plan.target, read_error=plan.fallback, plan_items=plan.items, stream=progress)

    def _run_of_app(self, app_id: str, qe: Any) -> dict[str, Any]:
        """The facts of application ``app_id`` (read from the JVM the first time it is seen)."""
        found = self._runs.get(app_id)
        return found if found is not None else self.run(qe)

    def run_of_session(self, jsession: Any) -> dict[str, Any]:
        sc = jsession.sparkContext()
        app_id = str(sc.applicationId())
        if app_id not in self._runs:
            self._runs[app_id] = facts.run_info(sc)
        return self._runs[app_id]


def _current(qe: Any) -> tuple[str, str] | None:
    try:
        cat = qe.sparkSession().catalog()
        return str(cat.currentCatalog()), str(cat.currentDatabase())
    except jvm_call_failed():
        return None


def _error_text(error: Any) -> str:
    try:
        text = str(error.toString()) if hasattr(error, "toString") else str(error)
    except Exception:  # noqa: BLE001
        text = repr(error)
    return text[:4000]
