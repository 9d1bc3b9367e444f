"""Envelope -> store rows: run, query, datasets, columns and edges of one action.

The recorder returns a query's rows as a plain list (its run, its ``queries`` row, the rows of
its lineage, its columns' labels); the capture loop (:mod:`~lineage_listener.capture.pipeline`)
puts them in its batch.
"""
from __future__ import annotations

import hashlib
import traceback
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from lineage_listener.capture import multiwrite, parents, stages, statistics, variables
from lineage_listener.capture.recording import spark_labels
from lineage_listener.capture.reading.queryreader import Envelope
from lineage_listener.lineage import writes
from lineage_listener.lineage.query import QueryLineage, lineage
from lineage_listener.plan.tree import Plan
from lineage_listener.store.rows import (CaptureErrorRow, DatasetColumnRow, DatasetRow, EdgeRow, QueryRow,
                                         RunReopened, RunRow, StreamRow)
from lineage_listener import redact

log = redact.logger(__name__)

#: A typed store row (:mod:`~lineage_listener.store.rows`).
Row = tuple[Any, ...]


def _dtype(data_type: object) -> str | None:
    if data_type is None or isinstance(data_type, str):
        return data_type
    if isinstance(data_type, dict):
        return str(data_type.get("type", "complex"))
    return str(data_type)


def column_rows(columns: Mapping[tuple[str, str], Any], now: str | None) -> list[DatasetColumnRow]:
    """``dataset_columns`` rows, each with its 1-based position in its dataset's schema (the
    walk meets a dataset's columns in schema order, nested fields flattened in place).

    >>> from types import SimpleNamespace as A
    >>> cols = {("t", "b"): A(data_type="int", nullable=True), ("u", "x"): A(data_type="int", nullable=False),
    ...         ("t", "a"): A(data_type="string", nullable=True)}
    >>> [(r[0], r[1], r[-1]) for r in column_rows(cols, None)]
    [('t', 'b', 1), ('u', 'x', 1), ('t', 'a', 2)]
    """
    seen: dict[str, int] = {}
    rows = []
    for (dataset, column), attr in columns.items():
        seen[dataset] = position = seen.get(dataset, 0) + 1
        rows.append(DatasetColumnRow(dataset=dataset, column_name=column, data_type=_dtype(attr.data_type),
                                     nullable=attr.nullable, first_seen=now, last_seen=now, ordinal=position))
    return rows


def error_row(now: str | None, run_id: str | None, query_id: str | None, stage: str,
              error: str | None) -> CaptureErrorRow:
    """A ``capture_errors`` row of a query."""
    return CaptureErrorRow(captured_at=now, run_id=run_id, query_id=query_id, stage=stage, error=error)


def query_id_of(env: Envelope) -> str:
    """``<run>:<QueryExecution id>:<event hash>``: stable for a replayed event, new for a re-run.

    Re-running an action on the same DataFrame reuses its QueryExecution (and id);
    the event's own facts (action, duration in ns, error) tell the runs apart,
    while the same event delivered twice (a bridge replay) keeps its id.
    """
    event = f"{env.func_name}|{env.duration_ns}|{env.error}|{env.qe_id}"
    if env.part is not None:  # one write of a multi-insert event
        event += f"|{env.part}"
    if env.qe_id is None or (env.duration_ns is None and env.error is None):
        event += f"|{uuid.uuid4().hex}"
    digest = hashlib.sha1(event.encode()).hexdigest()[:8]
    return f"{env.run['app_id']}:{env.qe_id if env.qe_id is not None else 'q'}:{digest}"


def iso(t: datetime | None) -> str | None:
    """A timestamp as a store row holds it."""
    return t.isoformat(sep=" ") if t is not None else None


def _plan(env: Envelope) -> Plan:
    """The envelope's plan, decoded as far as the reader did (from its text, unless the envelope
    was made elsewhere)."""
    return env.plan if env.plan is not None else Plan(env.plan_json)


def _labels(env: Envelope, result: QueryLineage, target: str | None, now: str | None) -> list[Row]:
    """The labels Spark keeps on the query's columns (:mod:`.spark_labels`; none without a trace
    of one in its plan or facts, its plan not decoded further)."""
    if not spark_labels.present(env.plan_json, env.leaves, env.target):
        return []
    return spark_labels.rows(_plan(env), env.leaves, result.columns, env.run.get("spark_user"), now,
                             (target, env.target) if target else None, result.edges)


def _walks(env: Envelope, known: "StreamLineage | None") -> bool:
    """Whether the recorder walks the envelope's plan: a stream's once, on its run's first
    micro-batch; a query's that declares SQL variables only if it ran."""
    if env.plan_json is None:
        return False
    if env.stream is not None:
        return known is None
    return env.error is None or env.root not in variables.DECLARATIONS


@dataclass(frozen=True)
class StreamLineage:
    """A stream run's lineage, computed from its first micro-batch: later ones only count."""

    query_id: str
    command: str | None
    target: str | None
    lineage_hash: str
    status: str
    error: str | None


def lineage_hash(root: str | None, target: str | None, result: QueryLineage | None) -> str:
    """A digest of what a stream's plan writes where, from what: equal plans, equal digests."""
    h = hashlib.sha1(f"{root}|{target}".encode())
    for e in sorted((e.target_column or "", e.source.dataset, e.source.name, e.transform.value, e.kind,
                     e.expression or "", str(e.masking)) for e in (result.edges if result is not None else ())):
        h.update("\x1f".join(e).encode() + b"\x1e")
    return h.hexdigest()[:16]


class Recorder:
    """Turns envelopes into rows."""

    def __init__(self) -> None:
        self._lineage_errors: set[str] = set()
        self._streams: dict[str, StreamLineage] = {}  # stream run id -> its lineage
        self._open_runs: set[str] = set()  # runs this recorder has reopened (until it ends them)
        self._variables = variables.Sessions()  # each session's SQL variables, as queries set them

    def run_row(self, env: Envelope, ended: datetime | None = None) -> RunRow:
        r = env.run
        started = r.get("started_at_ms")
        started_at = datetime.fromtimestamp(started / 1000, tz=timezone.utc).replace(tzinfo=None) if started else None
        return RunRow(run_id=r["app_id"], app_id=r["app_id"], app_name=r.get("app_name"),
                      spark_version=r.get("spark_version"), spark_user=r.get("spark_user"), master=r.get("master"),
                      started_at=iso(started_at), ended_at=iso(ended), **{k: r.get(k) for k in parents.KEYS})

    def event_rows(self, env: Envelope) -> list[Row]:
        """The rows of an event whose query is recorded already: its run's rows, and what the
        listener could not read of it."""
        rows = self.run_rows(env)
        if env.read_error:
            rows.append(error_row(iso(env.captured_at), env.run["app_id"], query_id_of(env), "listener", env.read_error))
        return rows

    def run_rows(self, env: Envelope) -> list[Row]:
        """The run's row; the first time this recorder sees the run, also reopen it: a capture
        disabled earlier in the same application wrote an end that no longer holds."""
        run_id = env.run["app_id"]
        if run_id in self._open_runs:
            return [self.run_row(env)]
        self._open_runs.add(run_id)
        return [RunReopened(run_id=run_id), self.run_row(env)]

    def record(self, env: Envelope) -> list[Row]:
        """Rows for one envelope.

        The route: a multi-insert's writes one by one (:func:`~lineage_listener.capture.multiwrite.split`);
        else the plan walked once (:meth:`_lineage`), then the rows of what the envelope is: a
        streaming micro-batch (:meth:`_stream_rows`), a query (:meth:`_query_rows`: its run, its
        ``queries`` row, its lineage's rows, its write's statistics, its columns' labels). A query
        that declares SQL variables has no rows of its own: its walk sets them (:mod:`.variables`).
        """
        if env.stream is None and env.part is None and env.plan_json is not None and multiwrite.is_multi(env.target):
            return [row for part in multiwrite.split(env) for row in self.record(part)]
        known = self._streams.get(env.stream.stream_run_id) if env.stream is not None else None
        result, walk_error = self._lineage(env) if _walks(env, known) else (None, None)
        if env.stream is not None:
            return self._stream_rows(env, known, result, walk_error)
        if env.root in variables.DECLARATIONS:
            return []
        return self._query_rows(env, result, walk_error)

    def _query_rows(self, env: Envelope, result: QueryLineage | None, walk_error: str | None) -> list[Row]:
        """A query's rows: its run, its errors, its ``queries`` row, its lineage's rows, its write's
        statistics (:mod:`.statistics`), its columns' labels (:mod:`.spark_labels`)."""
        rows = self.run_rows(env)
        run_id = env.run["app_id"]
        query_id = query_id_of(env)
        now = iso(env.captured_at)
        status = "failed" if env.error else "succeeded"
        error = env.error
        if walk_error is not None:
            status = "lineage_error" if not env.error else status
            error = (error + "\n" if error else "") + walk_error
            rows.append(error_row(now, run_id, query_id, "walk", error[:4000]))
        rows += [error_row(now, run_id, query_id, "plan", problem)
                 for problem in (result.problems if result is not None else ())]
        rows += [error_row(now, run_id, query_id, "python", note) for note in (result.guesses if result is not None else ())]
        if env.read_error:
            rows.append(error_row(now, run_id, query_id, "listener", env.read_error))
        target = result.target.name if result is not None and result.target is not None else None
        rows.append(QueryRow(query_id=query_id, run_id=run_id, action=env.func_name, command=env.root,
                             sql_text=env.sql_text, status=status, error=error, duration_ms=env.duration_ms,
                             captured_at=now, target_dataset=target, write_mode=result.write_mode if target else None))
        if result is not None:
            rows += self._lineage_rows(query_id, run_id, target, result, now)
            rows += _labels(env, result, target, now)
            rows += statistics.rows(query_id, target, env.statistics, env.leaves)
        return rows

    def _lineage(self, env: Envelope) -> tuple[QueryLineage | None, str | None]:
        """Walk the envelope's plan: its lineage, or None and the error. A query that sets SQL
        variables sets them here, for the session's later queries (:mod:`.variables`)."""
        try:
            with stages.timed("tree"):
                root = _plan(env).root
            with stages.timed("walk"):
                scope = env.variables
                result = lineage(root, env.leaves, env.target, scope=env.run.get("app_name"),
                                 variables=self._variables.values(scope.session if scope else None),
                                 declared=scope.declared if scope else ())
                if result.assigns and scope is not None and env.error is None:
                    self._variables.apply(scope.session, result.assigns)
                return result, None
        except Exception as exc:  # noqa: BLE001 - an odd plan must not stop capture
            error = f"lineage: {type(exc).__name__}: {exc}"
            if (env.root or "?") not in self._lineage_errors:
                self._lineage_errors.add(env.root or "?")
                log.warning("lineage-listener: could not compute lineage of a %s plan: %s\n%s",
                            env.root, exc, traceback.format_exc(limit=5))
            return None, error

    def _stream_rows(self, env: Envelope, known: StreamLineage | None, result: QueryLineage | None,
                     walk_error: str | None) -> list[Row]:
        """Rows for one micro-batch: the stream plan's edges once (``known``: its run's lineage, from
        its first micro-batch), then its counters.

        The ``queries`` row of a stream plan has a stable id (stream id + lineage digest), so a
        restart from the checkpoint with the same code updates it and adds no edge, while new
        code (other lineage) gets a new row and new edges; the old row keeps its last batch.
        """
        progress = env.stream
        assert progress is not None
        run_id = env.run["app_id"]
        rows = self.run_rows(env)
        now = iso(env.captured_at)
        if known is None and env.plan_json is None and env.read_error is None:
            pass  # a later batch of a run whose first was never read: nothing to count on
        elif known is None:
            error = walk_error if env.plan_json is not None else env.read_error
            target = result.target.name if result is not None and result.target is not None else None
            digest = lineage_hash(env.root, target, result) if result is not None else "unread"
            known = StreamLineage(f"stream:{progress.stream_id}:{digest}", env.root, target, digest,
                                  "succeeded" if result is not None else "lineage_error", error)
            if len(self._streams) > 10_000:
                self._streams.clear()
            self._streams[progress.stream_run_id] = known
            if error and not env.read_error:
                rows.append(error_row(now, run_id, known.query_id, "walk", error[:4000]))
            if env.read_error:
                rows.append(error_row(now, run_id, known.query_id, "listener", env.read_error))
            rows += [error_row(now, run_id, known.query_id, "plan", problem)
                     for problem in (result.problems if result is not None else ())]
            rows += [error_row(now, run_id, known.query_id, "python", note)
                     for note in (result.guesses if result is not None else ())]
            if result is not None:
                rows += self._lineage_rows(known.query_id, run_id, known.target, result, now)
        if known is not None:
            rows.append(QueryRow(query_id=known.query_id, run_id=run_id, action="stream", command=known.command,
                                 sql_text=None, status=known.status, error=known.error,
                                 duration_ms=env.duration_ms, captured_at=now, target_dataset=known.target,
                                 write_mode=writes.APPEND if known.target else None))
            rows.append(StreamRow(query_id=known.query_id, stream_id=progress.stream_id,
                                  stream_run_id=progress.stream_run_id, name=progress.name, run_id=run_id,
                                  target_dataset=known.target, lineage_hash=known.lineage_hash,
                                  first_batch_id=progress.batch_id, last_batch_id=progress.batch_id,
                                  first_batch_at=iso(progress.at), last_batch_at=iso(progress.at), batch_count=1))
        return rows

    @staticmethod
    def _lineage_rows(query_id: str, run_id: str, target: str | None, result: QueryLineage,
                      now: str | None) -> list[Row]:
        """The ``dataset_columns``, ``datasets`` and ``edges`` rows of a query's lineage."""
        rows: list[Row] = list(column_rows(result.columns, now))
        for ds in result.datasets.values():
            rows.append(DatasetRow(dataset=ds.name, kind=ds.kind, format=ds.format, location=ds.location,
                                   properties=ds.properties_json(), first_seen=now, last_seen=now))
        for e in result.edges:
            rows.append(EdgeRow(query_id=query_id, run_id=run_id, target_dataset=target,
                                target_column=e.target_column, source_dataset=e.source.dataset,
                                source_column=e.source.name, transform=e.transform.value, kind=e.kind,
                                expression=e.expression, masking=e.masking, captured_at=now, guess=e.guess))
        return rows

    def end_run(self, run: Mapping[str, Any], ended: datetime) -> list[Row]:
        """The run's end (``runs.ended_at``); a later action of the run reopens it."""
        env = Envelope(func_name="end", captured_at=ended, run=run)
        self._open_runs.discard(str(run["app_id"]))
        return [self.run_row(env, ended)]
