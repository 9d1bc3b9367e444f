"""The query reader: :class:`QueryReader` takes from a live ``QueryExecution`` what must be read
while it is alive, into an :class:`Envelope`.

Everything else happens later, from this plain, immutable record: parsing and walking on the
capture thread, writing on its write lane. The reader reads the plan through
:mod:`~lineage_listener.capture.reading.planreader` and the facts of its leaves and target through
:mod:`~lineage_listener.capture.reading.facts`.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple

from lineage_listener.capture import multiwrite, stages, statistics, variables
from lineage_listener.capture.reading import (
    command_result,
    facts,
    nodelay,
    planreader,
    pythoncode,
    rdds,
    rejected,
    skips,
    statement,
    streams,
)
from lineage_listener.capture.jvm import jvm_call_failed
from lineage_listener.plan.classes import MICRO_BATCH_LEAF, WRITE_COMMANDS
from lineage_listener.plan.text import has_class
from lineage_listener.plan.tree import Plan
from lineage_listener.timewindow import utcnow

#: Commands whose target is named relative to the session's current database.
_NEEDS_CURRENT = frozenset({"SaveAsV1TableCommand", "CreateViewCommand", "AlterViewAsCommand"})


#: ``target_only(root, run_id, qe_id)``: whether only the write target of this event is to be read,
#: not its plan (a request of the caller's).
TargetOnly = Callable[[str, str, "int | None"], bool]


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
    #: ``plan_json`` decoded by the reader as far as it needed (its tree, or the items its fact
    #: readers asked for); the walk reuses it.
    plan: Plan | None = field(default=None, compare=False, repr=False)
    #: A streaming micro-batch: its progress (the plan is read once per stream run, then None).
    stream: "streams.Progress | None" = None
    #: One write of a multi-insert event (:mod:`~lineage_listener.capture.multiwrite`): its position.
    part: int | None = None
    #: A query that declares, sets, drops or reads SQL variables: its session (:mod:`.variables`).
    variables: "variables.Scope | None" = None
    #: What Spark measured running it: the write's rows, bytes, files; rows read (:mod:`.statistics`).
    statistics: Mapping[str, Any] | None = None


class QueryReader:
    """Reads envelopes from ``QueryExecution`` objects; caches per-run and per-leaf facts."""

    def __init__(self, stream_sessions: list[Any] | None = None) -> None:
        """``stream_sessions``: the list to keep the sessions whose streams are read in (shared with
        the caller, who may add to it later)."""
        self._runs: dict[str, dict[str, Any]] = {}
        self._facts = facts.FactCache()
        self._nodelay_threads: set[int] = set()
        self.streams = streams.StreamRegistry()
        #: Sessions whose streams a foreachBatch write may come from (its own session is a clone).
        self.stream_sessions: list[Any] = stream_sessions if stream_sessions is not None else []
        self._stream_runs: dict[str, Any] = {}  # stream run id -> its query object (until its plan is read)
        self._stream_app: dict[str, dict[str, Any]] = {}  # stream run id -> its application's facts

    def runs(self) -> dict[str, dict[str, Any]]:
        """Facts of every application seen so far, by app id."""
        return dict(self._runs)

    def read(self, func_name: str, qe: Any, duration_ns: int | None, error: Any = None,
             now: datetime | None = None, target_only: TargetOnly | None = None) -> Envelope | None:
        """An envelope for this action, or None for actions that carry no lineage (DDL, SET...).

        The query's head is read first (:meth:`_head`); the first rule of :data:`RULES` that holds
        for it decides what else is read: nothing (the head filters of
        :mod:`~lineage_listener.capture.reading.skips` dropped it, so its plan is never read), the
        statement Spark rejected or could not analyze as it was reported, only the write target
        (:meth:`_read_target`), or the plan and what it needs: the plan with its leaves' and target's
        facts (:meth:`_read_query`), the plan filters, then what the kept plan still needs read (its
        SQL variables' scope, its write's statistics).

        ``target_only(root, run_id, qe_id)``: the caller's request to read only the write target of
        the events it names (whose plan it has recorded already, under another event), asked once
        the head filters kept the event.

        With the bridge jar's compact reader, two JVM calls: the query's head, then (if its
        lineage is wanted) its plan with the facts of its leaves and write target.
        """
        now = now or utcnow()
        action = Envelope(func_name=func_name, captured_at=now, run={},
                          duration_ms=int(duration_ns // 1_000_000) if duration_ns is not None else None,
                          error=_error_text(error) if error is not None else None, duration_ns=duration_ns)
        head = self._head(qe, func_name)
        what = decide(head, target_only)
        if what == SKIPPED:
            return None
        if what == REJECTED:
            return self._read_rejected(qe, head, action, error)
        if what == UNANALYZED:
            return replace(action, run=head.run, qe_id=head.qe_id, error=action.error or _error_text(head.failure))
        query = head.query
        action = replace(action, run=head.run, qe_id=head.qe_id, root=query.root, sql_text=query.sql_text)
        if what == TARGET_ONLY:
            return self._read_target(qe, action)
        scope = measured = None  # PLAN: the plan with its leaves' and target's facts, the plan filters, the rest
        try:
            read = self._read_query(qe, head)
            if skips.skipped(skips.PLAN, query) is not None:
                return None
            read_error = read.fallback  # recorded (capture_errors), not an error of the capture
            if variables.touches(query.root, read.text):
                scope = variables.scope(qe, head.plan(), query.root)
            measured = read.statistics if read.leaves is not None else (
                statistics.of_write(qe) if _writes(query) and error is None else None)
        except (*jvm_call_failed(), ValueError, RecursionError) as exc:  # recorded; Python bugs surface
            read_error = f"{type(exc).__name__}: {str(exc)[:500]}"
        return replace(action, plan_json=query.plan_json, leaves=query.leaves, target=query.target,
                       read_error=read_error, plan=query.plan, variables=scope, statistics=measured)

    def _head(self, qe: Any, func_name: str) -> "_Head":
        """What is known of the query before its plan is read: one JVM call with the compact reader;
        else py4j calls (the SQL text only when asked). Of a statement Spark rejected, its run and
        id; of one whose analysis failed, also the failure."""
        is_rejected = rejected.is_rejected(func_name)
        head = None if is_rejected else planreader.head(qe)
        if head is not None and "root" in head:
            query = skips.Query(func_name, str(head["root"]), command_result.reads_result(func_name, qe, head),
                                sql_text=head.get("sql"), step=bool(head.get("step")))
            run = self._runs.get(str(head["app"])) or self.run_of_session(qe.sparkSession())
            return _Head(query, run, int(head["qe"]) if head.get("qe") is not None else None, qe)
        run = self.run_of_session(qe.sparkSession())
        try:
            qe_id = int(qe.id())
        except jvm_call_failed():
            qe_id = None
        if is_rejected:  # Spark 4: the analyzer rejected the statement; no plan
            return _Head(None, run, qe_id, qe, rejected=True)
        try:
            plan = qe.analyzed()
        except jvm_call_failed() as exc:  # analysis itself failed: its failure is recorded
            return _Head(None, run, qe_id, qe, failure=exc)
        root = str(plan.nodeName())

        def sql() -> str | None:  # below the root only for writes: a few py4j calls per node
            try:
                return statement.statement_text(qe.logical(), statement.NODES if root in WRITE_COMMANDS else 0)
            except jvm_call_failed():
                return None
        query = skips.Query(func_name, root, command_result.reads_result(func_name, qe, None), sql=sql)
        return _Head(query, run, qe_id, qe, plan)

    def _read_rejected(self, qe: Any, head: "_Head", action: Envelope, error: Any) -> Envelope:
        """A statement Spark rejected during analysis: its parsed command and SQL text, and what
        Spark said (:mod:`~lineage_listener.capture.reading.rejected`)."""
        err_text = rejected.error_text(error) if error is not None else "rejected during analysis"
        rejected.noted(action.func_name, err_text)
        return Envelope(func_name=action.func_name, captured_at=action.captured_at, run=head.run, qe_id=head.qe_id,
                        root=rejected.command(qe), sql_text=rejected.sql_text(qe), error=err_text)

    def _read_target(self, qe: Any, action: Envelope) -> Envelope:
        """An event whose write target alone is read (``target_only``), not its plan."""
        root = action.root or ""
        current = _current(qe) if root in _NEEDS_CURRENT else None
        try:
            with stages.timed("facts"):
                target = planreader.read_target(qe) or facts.target(qe.analyzed(), root, current)
        except jvm_call_failed() as exc:
            return replace(action, read_error=f"{type(exc).__name__}: {str(exc)[:500]}")
        return replace(action, target=target)

    def _read_query(self, qe: Any, head: "_Head") -> planreader.QueryRead:
        """The query's plan with its leaves' and target's facts (:meth:`_read_plan`); a statement
        run with ``USING`` arguments is read again from its plan with the arguments bound."""
        read = self._read_plan(qe, head)
        if variables.binds_arguments(head.query.sql_text):  # USING v: read the plan with v, not its value
            rebound = variables.immediate_plan(qe)
            if rebound is not None:
                head.jvm_plan = rebound
                read = self._read_plan(qe, head, own_plan=True)
        return read

    def _read_plan(self, qe: Any, head: "_Head", own_plan: bool = False) -> planreader.QueryRead:
        """The query's plan, its leaves' facts and its write target (into ``head.query``);
        ``own_plan``: read ``head``'s JVM plan, not the ``QueryExecution``'s."""
        query = head.query
        if threading.get_ident() not in self._nodelay_threads:  # before the first big reply
            self._nodelay_threads.add(threading.get_ident())
            nodelay.disable_nagle(qe)
        read = None if own_plan else planreader.read_query(qe, _writes(query))
        if read is None:  # no compact reader: toJSON, facts by py4j calls
            text, decoded, fallback = planreader.read(head.plan())
            read = planreader.QueryRead(Plan(text, items=decoded), fallback=fallback)
        query.plan_json, query.plan = read.text, read.plan
        if stages.on:  # benchmark only
            stages.add("transfer", stages.transfer_time(len(read.text)))
        self._read_facts(qe, head, read)
        return read

    def _read_facts(self, qe: Any, head: "_Head", read: planreader.QueryRead) -> None:
        """The facts of the query's leaves and of its write target (into ``head.query``): what the
        compact reader did not describe is read by py4j calls."""
        query, plan, root = head.query, head.plan, head.query.root
        current = _current(qe) if root in _NEEDS_CURRENT else None
        with stages.timed("facts"):
            nulls: list[dict[str, Any]] = []
            if read.leaves is None:
                query.leaves = leaves = facts.leaves(plan(), read.plan.items, current, self._facts, nulls)
            else:  # read with the plan; what the JVM side did not describe is read here
                query.leaves = leaves = dict(read.leaves)
                if read.unresolved:
                    leaves.update(facts.resolve(plan(), read.unresolved, current, self._facts))
                if read.nulls:
                    nulls = facts.null_fields(read.plan.items)
            if nulls:  # fields toJSON could not write: read from the JVM (leaves they hold too)
                leaves.update(facts.leaves(plan(), facts.repair_null_fields(plan(), read.plan.items, nulls),
                                           current, self._facts))
            if read.leaves is None and pythoncode.present(read.text):  # toJSON leaves Python functions out
                pythoncode.repair(plan(), read.plan.items)
            if has_class(read.text, rdds.LEAF):  # a DataFrame made from a Python RDD: where its rows came from
                leaves.update(rdds.leaves(plan(), current, self._facts))
            if has_class(read.text, MICRO_BATCH_LEAF):  # a foreachBatch micro-batch: the stream's plan
                leaves.update(streams.foreach_batch_leaves(read.plan.items, self.streams, self.stream_sessions,
                                                           head.run.get("app_name")))
            if _writes(query):
                query.target = read.target if read.target is not None else facts.target(plan(), root, current)

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
                        target=plan.target, read_error=plan.fallback, plan=Plan(plan.plan_json, items=plan.items),
                        stream=progress)

    def run_of_session(self, jsession: Any) -> dict[str, Any]:
        """The facts of the application ``jsession`` (a JVM ``SparkSession``) runs in, read once per app."""
        sc = jsession.sparkContext()
        app_id = str(sc.applicationId())
        if app_id not in self._runs:
            self._runs[app_id] = facts.run_info(sc)
        return self._runs[app_id]


@dataclass
class _Head:
    """A query before its plan is read: what the filters see, its run, its id; its analyzed JVM
    plan, asked of the ``QueryExecution`` once, when first needed (:meth:`plan`). No ``query`` for
    a statement Spark ``rejected`` or whose analysis ended in ``failure``."""

    query: skips.Query | None
    run: dict[str, Any]
    qe_id: int | None
    qe: Any
    jvm_plan: Any = None
    rejected: bool = False
    failure: BaseException | None = None

    def plan(self) -> Any:
        if self.jvm_plan is None:
            self.jvm_plan = self.qe.analyzed()
        return self.jvm_plan


def _rejected(head: _Head, target_only: TargetOnly | None) -> bool:
    """Spark's analyzer rejected the statement (:mod:`~lineage_listener.capture.reading.rejected`)."""
    return head.rejected


def _unanalyzed(head: _Head, target_only: TargetOnly | None) -> bool:
    """Asking Spark for the analyzed plan failed: the failure is what there is to record."""
    return head.failure is not None


def _skipped(head: _Head, target_only: TargetOnly | None) -> bool:
    """A head filter of :mod:`~lineage_listener.capture.reading.skips` drops the query."""
    return skips.skipped(skips.HEAD, head.query) is not None


def _target_only(head: _Head, target_only: TargetOnly | None) -> bool:
    """The caller asks for the write target alone (``target_only``)."""
    return target_only is not None and target_only(head.query.root, head.run["app_id"], head.qe_id)


def _plan(head: _Head, target_only: TargetOnly | None) -> bool:
    """Anything else: the plan and what it needs."""
    return True


REJECTED, UNANALYZED, SKIPPED, TARGET_ONLY, PLAN = "rejected", "unanalyzed", "skipped", "target_only", "plan"


class Rule(NamedTuple):
    """A rule of :data:`RULES`: when ``holds(head, target_only)``, what is read is ``name``'s."""

    name: str
    holds: Callable[[_Head, "TargetOnly | None"], bool]


#: What is read of a query once its head is read, in the order the rules are tried: the first that
#: holds decides (:meth:`QueryReader.read` reads what it names).
RULES: tuple[Rule, ...] = (
    Rule(REJECTED, _rejected),
    Rule(UNANALYZED, _unanalyzed),
    Rule(SKIPPED, _skipped),
    Rule(TARGET_ONLY, _target_only),
    Rule(PLAN, _plan),
)


def decide(head: _Head, target_only: TargetOnly | None) -> str:
    """The name of the first rule of :data:`RULES` that holds for ``head``.

    >>> head = _Head(skips.Query("command", "CreateTableCommand"), {"app_id": "a"}, 1, None)
    >>> decide(head, None)
    'skipped'
    >>> head = _Head(skips.Query("command", "InsertIntoHadoopFsRelationCommand"), {"app_id": "a"}, 1, None)
    >>> decide(head, None), decide(head, lambda root, run_id, qe_id: qe_id == 1)
    ('plan', 'target_only')
    >>> decide(_Head(None, {}, None, None, rejected=True), None)
    'rejected'
    """
    return next(rule.name for rule in RULES if rule.holds(head, target_only))


def _writes(query: skips.Query) -> bool:
    """Whether the query writes: a write command, or a multi-insert (:mod:`.multiwrite`)."""
    return query.root in WRITE_COMMANDS or multiwrite.several(query.func_name, query.root)


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
