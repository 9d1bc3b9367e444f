"""One row type per store table, with its key and merge rule beside it; and the writer's instructions.

A row is a :class:`~typing.NamedTuple` whose fields are the table's columns in the order of
``schema.sql`` (a test holds them to it), so a row is still a tuple: the spool's JSON and the
writer's column-wise inserts take it as it is. Class attributes say how it is written:

- ``TABLE``: the name of its rows in a batch (and in a spool file), the store table it fills;
- ``KEY``: the primary key of a table written as an upsert (empty: rows are appended);
- ``MERGE``: on a key already in the store, the ``DO UPDATE SET`` clause;
- ``COLLAPSE``: for a table whose merge rule is made of :data:`RULES`, each column's aggregate that
  collapses a batch's rows of one key into one row, in their order, the way ``MERGE`` would take them
  one by one (so a batch is one statement per table, however often a run or dataset recurs in it);
  empty otherwise;
- ``SHARED``: rows every query of a batch may share (kept in each part of ``Batch.by_query``).

``Retarget``, ``QueryStarted`` and ``RunReopened`` are instructions to the writer, not tables;
``LabelUnset`` and ``LabelFile`` are label changes written into ``label_changes``
(:mod:`~lineage_listener.store.labels`).

>>> DatasetRow(dataset="db.t", kind="table", format=None, location=None, properties=None,
...            first_seen="2026-01-01 10:00:00", last_seen="2026-01-01 10:00:00").KEY
('dataset',)
>>> RunReopened(run_id="app-1").SHARED, Retarget in INSTRUCTIONS
(True, True)
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple


#: How a column of an upserted table takes a value given again, as the ``DO UPDATE SET`` expression
#: (``{old}``: the stored value, ``{new}``: the one given) and as the aggregate (over ``{c}``, in the
#: order ``_seq``) that collapses a batch's values of one key the same way. Each rule is associative,
#: so merging the collapsed row equals merging the rows one by one.
RULES: dict[str, tuple[str | None, str]] = {
    "first": (None, "arg_min_null({c}, _seq)"),  # never updated
    "last": ("{new}", "arg_max_null({c}, _seq)"),
    "given": ("coalesce({new}, {old})", "arg_max({c}, _seq)"),  # the last non-null; null keeps the known
    "kept": ("coalesce({old}, {new})", "arg_min({c}, _seq)"),   # the first non-null stays
    "least": ("least({old}, {new})", "min({c})"),
    "greatest": ("greatest({old}, {new})", "max({c})"),
    # a JSON object: null or an empty object keeps the known one
    "object": ("CASE WHEN {new} IS NULL OR CAST({new} AS TEXT) = '{{}}' THEN {old} ELSE {new} END",
               "coalesce(arg_max({c}, _seq) FILTER (WHERE CAST({c} AS TEXT) <> '{{}}'), arg_min_null({c}, _seq))"),
}


def upsert(table: str, **rules: str) -> tuple[str, dict[str, str]]:
    """``MERGE`` and ``COLLAPSE`` of ``table`` from each non-key column's rule (:data:`RULES`).

    >>> merge, collapse = upsert("runs", app_name="given", started_at="kept")
    >>> merge
    'app_name=coalesce(excluded.app_name, runs.app_name), started_at=coalesce(runs.started_at, excluded.started_at)'
    >>> collapse["started_at"]
    'arg_min("started_at", _seq)'
    """
    merge = ", ".join(f"{c}=" + sql.format(old=f"{table}.{c}", new=f"excluded.{c}")
                      for c, r in rules.items() if (sql := RULES[r][0]) is not None)
    return merge, {c: RULES[r][1].format(c=f'"{c}"') for c, r in rules.items()}


def _spec(cls: Any) -> Any:
    """Give a row type the defaults of what it does not say: appended (no key), one query's own."""
    for name, default in (("KEY", ()), ("MERGE", ""), ("COLLAPSE", {}), ("SHARED", False)):
        if not hasattr(cls, name):
            setattr(cls, name, default)
    return cls


def row_of(table: str, values: Iterable[Any]) -> Any:
    """A row of ``table`` from positional values; missing trailing ones (older spool files, older
    senders) are null.

    >>> row_of("query_started", ["q"])
    QueryStarted(query_id='q', started_at=None)
    """
    cls = TABLES[table]
    values = tuple(values)
    width = len(cls._fields)
    if len(values) < width:
        values += (None,) * (width - len(values))
    return cls._make(values)


def typed(cls: Any, rows: Iterable[Any]) -> list[Any]:
    """``rows`` as rows of type ``cls``: a plain tuple (older spool files, older senders) becomes one.

    >>> typed(QueryStarted, [("q", None)])
    [QueryStarted(query_id='q', started_at=None)]
    """
    return [r if type(r) is cls else row_of(cls.TABLE, r) for r in rows]


@_spec
class RunRow(NamedTuple):
    run_id: str
    app_id: str | None
    app_name: str | None
    spark_version: str | None
    spark_user: str | None
    master: str | None
    started_at: Any
    ended_at: Any
    #: The run that launched this one and the root of its hierarchy (an Airflow task and its DAG run).
    parent_job_namespace: str | None = None
    parent_job_name: str | None = None
    parent_run_id: str | None = None
    root_parent_job_namespace: str | None = None
    root_parent_job_name: str | None = None
    root_parent_run_id: str | None = None

    TABLE = "runs"
    KEY = ("run_id",)
    SHARED = True
    # never clear a known value with null; the first start stays, a given end replaces the known one
    MERGE, COLLAPSE = upsert("runs", app_id="last", app_name="given", spark_version="given", spark_user="given",
                             master="given", started_at="kept", ended_at="given", parent_job_namespace="given",
                             parent_job_name="given", parent_run_id="given", root_parent_job_namespace="given",
                             root_parent_job_name="given", root_parent_run_id="given")


@_spec
class QueryRow(NamedTuple):
    query_id: str
    run_id: str | None
    action: str | None
    command: str | None
    sql_text: str | None
    status: str | None
    error: str | None
    duration_ms: int | None
    captured_at: Any
    target_dataset: str | None
    write_mode: str | None = None

    TABLE = "queries"
    KEY = ("query_id",)
    # A 'running' row (an OpenLineage run before its terminal event) never overwrites a
    # final state; while running, captured_at is the earliest event seen.
    MERGE = ("run_id=excluded.run_id, action=excluded.action, command=excluded.command, "
             "sql_text=coalesce(excluded.sql_text, queries.sql_text), "
             "status=CASE WHEN excluded.status = 'running' THEN queries.status ELSE excluded.status END, "
             "error=CASE WHEN excluded.status = 'running' THEN queries.error ELSE excluded.error END, "
             "duration_ms=CASE WHEN excluded.status = 'running' THEN queries.duration_ms "
             "ELSE coalesce(excluded.duration_ms, queries.duration_ms) END, "
             "captured_at=CASE WHEN excluded.status <> 'running' THEN excluded.captured_at "
             "WHEN queries.status = 'running' THEN least(queries.captured_at, excluded.captured_at) "
             "ELSE queries.captured_at END, "
             "target_dataset=coalesce(excluded.target_dataset, queries.target_dataset), "
             "write_mode=coalesce(excluded.write_mode, queries.write_mode)")


@_spec
class WriteStatisticsRow(NamedTuple):
    """What one write produced: rows, bytes, files (``write_statistics``)."""

    query_id: str
    rows: int | None
    bytes: int | None
    files: int | None

    TABLE = "write_statistics"
    KEY = ("query_id",)
    MERGE, COLLAPSE = upsert("write_statistics", rows="given", bytes="given", files="given")


@_spec
class ReadStatisticsRow(NamedTuple):
    """Rows (and, where known, bytes and files) a query read from one dataset (``read_statistics``)."""

    query_id: str
    dataset: str
    rows: int | None
    bytes: int | None = None
    files: int | None = None

    TABLE = "read_statistics"
    KEY = ("query_id", "dataset")
    MERGE, COLLAPSE = upsert("read_statistics", rows="given", bytes="given", files="given")


@_spec
class DatasetRow(NamedTuple):
    dataset: str
    kind: str | None
    format: str | None
    location: str | None
    properties: str | None
    first_seen: Any
    last_seen: Any

    TABLE = "datasets"
    KEY = ("dataset",)
    SHARED = True
    # the earliest first_seen, the latest last_seen; an empty properties object keeps the known one
    MERGE, COLLAPSE = upsert("datasets", kind="last", format="given", location="given", properties="object",
                             first_seen="least", last_seen="greatest")


@_spec
class DatasetColumnRow(NamedTuple):
    dataset: str
    column_name: str
    data_type: str | None
    nullable: bool | None
    first_seen: Any
    last_seen: Any
    ordinal: int | None

    TABLE = "dataset_columns"
    KEY = ("dataset", "column_name")
    SHARED = True
    MERGE, COLLAPSE = upsert("dataset_columns", data_type="given", nullable="last", ordinal="given",
                             first_seen="least", last_seen="greatest")


@_spec
class EdgeRow(NamedTuple):
    """One captured edge, as the ``column_lineage`` view shows it (stored in edges, edge_sets, edge_captures)."""

    query_id: str
    run_id: str | None
    target_dataset: str
    target_column: str
    source_dataset: str
    source_column: str
    transform: str
    kind: str
    expression: str | None
    masking: bool | None
    captured_at: Any
    guess: bool | None = None  # a conservative guess: a Python function that could not be read

    TABLE = "column_lineage"


@_spec
class CaptureErrorRow(NamedTuple):
    captured_at: Any
    run_id: str | None
    query_id: str | None
    stage: str
    error: str | None

    TABLE = "capture_errors"


@_spec
class SentRow(NamedTuple):
    query_id: str
    endpoint: str
    sent_at: Any

    TABLE = "openlineage_sent"
    KEY = ("query_id", "endpoint")
    MERGE, COLLAPSE = upsert("openlineage_sent", sent_at="least")


@_spec
class StreamRow(NamedTuple):
    query_id: str
    stream_id: str | None
    stream_run_id: str | None
    name: str | None
    run_id: str | None
    target_dataset: str | None
    lineage_hash: str | None
    first_batch_id: int | None
    last_batch_id: int | None
    first_batch_at: Any
    last_batch_at: Any
    batch_count: int | None

    TABLE = "streams"
    KEY = ("query_id",)
    # A replayed batch (spool) or a re-run of the last batch after a restart counts nothing twice.
    MERGE = ("stream_run_id=excluded.stream_run_id, name=coalesce(excluded.name, streams.name), "
             "run_id=excluded.run_id, target_dataset=excluded.target_dataset, "
             "batch_count=streams.batch_count + CASE WHEN excluded.last_batch_id > streams.last_batch_id "
             "THEN excluded.batch_count ELSE 0 END, "
             "first_batch_id=least(streams.first_batch_id, excluded.first_batch_id), "
             "first_batch_at=least(streams.first_batch_at, excluded.first_batch_at), "
             "last_batch_id=greatest(streams.last_batch_id, excluded.last_batch_id), "
             "last_batch_at=greatest(streams.last_batch_at, excluded.last_batch_at)")


@_spec
class LabelRow(NamedTuple):
    dataset: str
    column_name: str
    label: str
    value: bool
    source: str
    origin: str | None
    set_by: str | None
    set_at: Any

    TABLE = "column_labels"


@_spec
class LabelUnset(NamedTuple):
    """A label removed (written as a ``label_changes`` row)."""

    dataset: str
    column_name: str
    label: str
    source: str
    changed_by: str | None
    changed_at: Any

    TABLE = "label_unset"


@_spec
class LabelFile(NamedTuple):
    """A classifications file loaded again: its earlier labels and masking functions go first."""

    origin: str
    changed_by: str | None
    changed_at: Any

    TABLE = "label_file"


@_spec
class MaskingFunctionRow(NamedTuple):
    name: str
    origin: str | None
    added_at: Any

    TABLE = "masking_functions"


@_spec
class ViolationRow(NamedTuple):
    violation_id: str
    rule: str | None
    kind: str | None
    label: str | None
    dataset: str | None
    column_name: str | None
    detail: str | None
    found_at: Any
    last_seen: Any
    notified_at: Any
    attempts: int | None
    gave_up_at: Any
    last_error: str | None
    resolved_at: Any

    TABLE = "policy_violations"
    KEY = ("violation_id",)
    # The lineage server's policy watch holds each violation whole: what it sends replaces the row,
    # except when it was first found.
    MERGE, COLLAPSE = upsert("policy_violations", dataset="first", column_name="first", rule="last", kind="last",
                             label="last", detail="last", found_at="least", last_seen="last", notified_at="last",
                             attempts="last", gave_up_at="last", last_error="last", resolved_at="last")


@_spec
class AuditRow(NamedTuple):
    """A request to the lineage server that carried an identity or was refused (docs/security.md)."""

    requested_at: Any
    identity: str | None
    groups: list[str] | None
    via: str | None
    client: str | None
    method: str | None
    route: str | None
    path: str | None
    datasets: list[str] | None
    status: int | None
    withheld: int | None
    detail: str | None

    TABLE = "audit_log"


@_spec
class Retarget(NamedTuple):
    """Instruction: edges of ``query_id`` written to the path of a table (a CTAS/saveAsTable's nested
    write) now name the table; the path dataset goes if nothing else uses it
    (:mod:`~lineage_listener.store.retarget` applies it)."""

    query_id: str
    target_dataset: str
    previous_target: str | None

    TABLE = "retarget"


@_spec
class QueryStarted(NamedTuple):
    """Instruction: when a query started (an OpenLineage START event; null: not in this batch), kept in
    ``query_starts``; an ended query's ``duration_ms`` is computed from it, whichever came first."""

    query_id: str
    started_at: Any

    TABLE = "query_started"


@_spec
class RunReopened(NamedTuple):
    """Instruction: the run's ``ended_at`` is cleared before the batch's ``runs`` rows are written (a
    capture enabled again in an application whose earlier capture was disabled: the run goes on)."""

    run_id: str

    TABLE = "run_reopened"
    SHARED = True


#: Every row type, in the order the writer writes tables.
ROWS: tuple[type, ...] = (RunRow, QueryRow, DatasetRow, DatasetColumnRow, EdgeRow, CaptureErrorRow, SentRow,
                          StreamRow, Retarget, QueryStarted, LabelRow, LabelUnset, LabelFile, MaskingFunctionRow,
                          ViolationRow, AuditRow, RunReopened, WriteStatisticsRow, ReadStatisticsRow)
#: Row type by its name in a batch.
TABLES: dict[str, Any] = {cls.TABLE: cls for cls in ROWS}
#: Instructions to the writer (not tables), applied by type.
INSTRUCTIONS: tuple[type, ...] = (RunReopened, QueryStarted, Retarget)
#: Rows written by :func:`~lineage_listener.store.labels.write_labels`.
LABEL_ROWS: tuple[type, ...] = (LabelRow, LabelUnset, LabelFile, MaskingFunctionRow)
