"""OpenLineage events (ours or any producer's) -> store rows, through the ``columnLineage`` facet.

One query per run (``runId``): START, RUNNING and COMPLETE events of one run merge into
one ``queries`` row with the union of their edges, whether they come in one call or one
per request or file, in any order; sending an event again adds nothing. Status, error and
end time come from the terminal event (COMPLETE -> succeeded, FAIL/ABORT -> failed;
``running`` until one arrives, and a later START or RUNNING never overrides it); the
duration runs from START to the end, whichever arrived first. Our own export carries its ids in
the ``lineage_listener`` run facet, so a round trip gives back the same query ids;
others get ``openlineage:<runId>``. The Spark application (or scheduler DAG) is the
parent run when the event names one; the application's (DAG's) own events, known by
their ``jobType`` facet, give that run its start and end. A JobEvent (a job's lineage
without a run) is one query per job, a DatasetEvent records its dataset (and a query
when it carries column lineage). How each facet maps: docs/openlineage.md.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any

from lineage_listener.lineage import column_path, writes
from lineage_listener.openlineage import facets, naming, validate
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import (DatasetColumnRow, DatasetRow, EdgeRow, QueryRow, QueryStarted,
                                         ReadStatisticsRow, RunRow, WriteStatisticsRow)
from lineage_listener.timewindow import utcnow

#: Event types that end a run: its status, error and end time come from them.
TERMINAL = ("COMPLETE", "FAIL", "ABORT")
#: ``lifecycleStateChange`` values of an output that replace the data in it (docs/openlineage.md).
REPLACING = ("CREATE", "OVERWRITE")
#: ``jobType`` facet values of a run that is an application (the Spark agent's application
#: events, an Airflow DAG run): a ``runs`` row with its start and end, the parent of its jobs' queries.
APPLICATION_JOB_TYPES = ("APPLICATION", "DAG")


def read_events(stream: IO[str]) -> Iterator[dict]:
    """Events from newline-delimited JSON, a JSON array, or one JSON object."""
    text = stream.read()
    stripped = text.lstrip()
    if stripped.startswith("["):
        yield from json.loads(stripped)
        return
    try:
        one = json.loads(stripped)
    except json.JSONDecodeError:
        one = None
    if isinstance(one, dict):
        yield one
        return
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"line {n} is not JSON: {exc}") from None


def _ts(value: str | None) -> datetime | None:
    if not value:
        return None
    t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t


@dataclass
class _Run:
    query_id: str
    run_id: str
    app_name: str | None = None
    spark_version: str | None = None
    action: str | None = None
    command: str | None = None
    sql: str | None = None
    status: str = "running"
    error: str | None = None
    started: datetime | None = None
    ended: datetime | None = None
    seen: datetime | None = None
    target: str | None = None
    #: From the output's ``lifecycleStateChange`` facet: a CREATE or OVERWRITE replaces the dataset.
    write_mode: str | None = None
    #: False for a DatasetEvent without column lineage: its datasets only, no query.
    record: bool = True
    #: An application's (DAG's) own run: a query only if it carries column lineage.
    application: bool = False
    #: dataset -> (kind, location)
    datasets: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    columns: dict[tuple[str, str], str | None] = field(default_factory=dict)
    #: (dataset, field name as sent) -> stored name, for top-level columns whose names hold a dot
    dotted: dict[tuple[str, str], str] = field(default_factory=dict)
    edges: dict[tuple, facets.FacetEdge] = field(default_factory=dict)
    #: The scheduler's runs above an application run (its ``parent`` facet): ``runs.parent_*``,
    #: ``runs.root_parent_*`` as (namespace, name, run id).
    parent: tuple[str | None, str | None, str | None] | None = None
    root: tuple[str | None, str | None, str | None] | None = None
    #: ``outputStatistics`` of its output and ``inputStatistics`` of each input: (rows, bytes, files).
    written: tuple[Any, Any, Any] | None = None
    read: dict[str, tuple[Any, Any, Any]] = field(default_factory=dict)


def to_batch(events: Iterable[dict], table_namespace: str | None = None) -> tuple[Batch, int]:
    """(rows for the store, number of events read)."""
    runs: dict[str, _Run] = {}
    n = 0

    def name_of(namespace: str, name: str) -> str:
        return naming.from_openlineage(namespace, name, table_namespace)

    for ev in events:
        n += 1
        try:
            validate.check(ev)
        except validate.BadEvent as exc:
            raise validate.BadEvent(f"event {n}: {exc}" if n > 1 else str(exc)) from None
        if "run" not in ev:
            _static(runs, ev, name_of)
            continue
        run_facets = ev["run"].get("facets") or {}
        ours = run_facets.get("lineage_listener") or {}
        parent = run_facets.get("parent") or {}
        run_id = ev["run"]["runId"]
        job_type = (((ev["job"].get("facets") or {}).get("jobType") or {}).get("jobType") or "").upper()
        r = runs.get(run_id)
        if r is None:
            if job_type in APPLICATION_JOB_TYPES:  # the application (DAG) run itself, parent of its jobs' runs
                r = runs[run_id] = _Run(f"openlineage:{run_id}", f"openlineage:{run_id}", application=True,
                                        app_name=ev["job"]["name"])
            else:
                app_run = (f"openlineage:{parent['run']['runId']}" if parent.get("run") else
                           f"openlineage:{ev['job']['namespace']}/{ev['job']['name']}")
                r = runs[run_id] = _Run(f"openlineage:{run_id}", app_run)
        if ours.get("queryId"):  # our own export: our ids back (START events do not carry them)
            r.query_id, r.run_id = ours["queryId"], ours.get("runId") or r.run_id
        elif r.application and ours.get("runId"):  # our own application event: the run's id back
            r.run_id = ours["runId"]
        _family(r, parent)
        r.app_name = r.app_name or (parent.get("job") or {}).get("name") or ev["job"]["name"]
        engine = run_facets.get("processing_engine") or {}
        r.spark_version = r.spark_version or engine.get("version")
        r.action = ours.get("action") or r.action or "openlineage"
        r.command = ours.get("command") or r.command or ev["job"]["name"]
        sql = ((ev["job"].get("facets") or {}).get("sql") or {}).get("query")
        r.sql = sql or r.sql
        when = _ts(ev.get("eventTime"))
        state = (ev.get("eventType") or "").upper()
        if when is not None:
            r.seen = min(r.seen, when) if r.seen else when
        if state == "START":
            r.started = min(r.started, when) if r.started and when else (when or r.started)
        elif state in TERMINAL:
            r.ended = when
            r.status = ours.get("status") or ("succeeded" if state == "COMPLETE" else "failed")
            err = run_facets.get("errorMessage") or {}
            r.error = err.get("message") or r.error
        _datasets(r, ev, name_of)
    return _rows(runs.values()), n


def _family(r: _Run, parent: dict) -> None:
    """The scheduler's runs above ``r`` from its ``parent`` facet: an application's parent (the task)
    and root (the DAG run); for a job's run, whose parent is its application, the root only."""
    def ids(facet: dict) -> tuple[str | None, str | None, str | None] | None:
        job, run = facet.get("job") or {}, facet.get("run") or {}
        return (job.get("namespace"), job.get("name"), run.get("runId")) if run.get("runId") else None

    if r.application:
        r.parent = ids(parent) or r.parent
    root = ids(parent.get("root") or {})
    if root is not None and root != ids(parent):
        r.root = root


def _static(runs: dict[str, _Run], ev: dict, name_of) -> None:
    """A JobEvent's or DatasetEvent's lineage: one query per job, or per dataset with column lineage.

    A JobEvent states a job's lineage without a run: its query is ``openlineage:job:<namespace>/<name>``
    (action ``openlineage_job``, ``succeeded`` at the event time), and later JobEvents of the
    job add to it. A DatasetEvent records its dataset and schema; a ``columnLineage`` facet on
    it is a query ``openlineage:dataset:<namespace>/<name>`` (action ``openlineage_dataset``).
    """
    if "job" in ev:
        job, action, outputs = ev["job"], "openlineage_job", ev.get("outputs") or []
        key = f"job:{job['namespace']}/{job['name']}"
    else:
        job, action, outputs = ev["dataset"], "openlineage_dataset", [ev["dataset"]]
        key = f"dataset:{job['namespace']}/{job['name']}"
    r = runs.get(key)
    if r is None:
        r = runs[key] = _Run(f"openlineage:{key}", f"openlineage:{job['namespace']}/{job['name']}",
                             app_name=job["name"], action=action, command=job["name"], status="succeeded",
                             record="job" in ev)
    if "job" in ev:
        r.sql = ((job.get("facets") or {}).get("sql") or {}).get("query") or r.sql
    when = _ts(ev.get("eventTime"))
    if when is not None:
        r.seen = min(r.seen, when) if r.seen else when
        r.ended = max(r.ended, when) if r.ended else when
    _datasets(r, {"inputs": ev.get("inputs"), "outputs": outputs}, name_of)
    r.record = r.record or bool(r.edges)


def _datasets(r: _Run, ev: dict, name_of) -> None:
    """The event's input and output datasets, and the output datasets' column lineage, into ``r``."""
    for ds in ev.get("inputs") or []:
        name = _dataset(r, ds, name_of)
        counts = _counts((ds.get("inputFacets") or {}).get("inputStatistics"))
        if counts is not None:
            r.read[name] = counts
    for ds in ev.get("outputs") or []:
        target = _dataset(r, ds, name_of)
        r.target = r.target or target
        change = ((ds.get("facets") or {}).get("lifecycleStateChange") or {}).get("lifecycleStateChange")
        if target == r.target and str(change).upper() in REPLACING:
            r.write_mode = writes.REPLACE
        counts = _counts((ds.get("outputFacets") or {}).get("outputStatistics"))
        if counts is not None and target == r.target:
            r.written = counts
        lineage = (ds.get("facets") or {}).get("columnLineage")
        if lineage:
            for e in facets.edges_of(lineage, name_of):
                r.edges[(target, *e)] = e
            # a source named only in the facet (its event listed no inputs) is a dataset all the same
            for f in [*(f for spec in (lineage.get("fields") or {}).values() for f in spec["inputFields"]),
                      *(lineage.get("dataset") or [])]:
                r.datasets.setdefault(name_of(f["namespace"], f["name"]), (naming.kind_of(f["namespace"]), None))


def _counts(facet: Any) -> tuple[Any, Any, Any] | None:
    """(rows, bytes, files) of a statistics facet (``rowCount``, ``size``, ``fileCount``; integers or null).

    >>> _counts({"rowCount": 3, "size": 10}), _counts({"size": "x"}), _counts(None)
    ((3, 10, None), None, None)
    """
    if not isinstance(facet, dict):
        return None
    counts = tuple(v if isinstance(v, int) and not isinstance(v, bool) else None
                   for v in (facet.get("rowCount"), facet.get("size"), facet.get("fileCount")))
    return counts if any(v is not None for v in counts) else None


def _dataset(r: _Run, ds: dict, name_of) -> str:
    name = name_of(ds["namespace"], ds["name"])
    kind = naming.kind_of(ds["namespace"])
    ds_facets = ds.get("facets") or {}
    location = None
    for link in (ds_facets.get("symlinks") or {}).get("identifiers") or []:
        # Another name of the same data (docs/reference/datasets.md: a table and its location are one
        # dataset): a TABLE stored at this path, or the LOCATION of this table.
        link_type = (link.get("type") or "").upper()
        other = (link_type == "TABLE" and naming.warehouse_table(link["namespace"], link["name"])
                 or name_of(link["namespace"], link["name"]))
        if other == name:
            continue
        if link_type == "TABLE" and kind != "table":
            r.datasets[other] = ("table", name)
        elif link_type == "LOCATION" and kind == "table":
            location = other
    r.datasets[name] = (kind, location or r.datasets.get(name, (kind, None))[1])
    for column, dtype in _schema_columns((ds_facets.get("schema") or {}).get("fields") or []):
        r.columns[(name, column)] = dtype
        segments = column_path.split(column)
        if len(segments) == 1 and segments[0] != column:  # a top-level column named `a.b`
            r.dotted[(name, segments[0])] = column
    return name


def _schema_columns(fields: list[dict], parent: str | None = None) -> Iterator[tuple[str, str | None]]:
    """(stored column name, type) of a schema facet's fields, nested struct fields as paths.

    >>> list(_schema_columns([{"name": "id", "type": "long"}, {"name": "address", "type": "struct",
    ...     "fields": [{"name": "city", "type": "string"}]}, {"name": "a.b", "type": "int"}]))
    [('id', 'long'), ('address', 'struct'), ('address.city', 'string'), ('`a.b`', 'int')]
    """
    for f in fields:
        name = column_path.quote(f["name"]) if parent is None else column_path.child(parent, f["name"])
        yield name, f.get("type")
        yield from _schema_columns(f.get("fields") or [], name)


def _rows(runs: Iterable[_Run]) -> Batch:
    b = Batch()
    for r in runs:
        ended = r.ended if r.status != "running" else None
        at = (ended or r.seen or utcnow()).isoformat(sep=" ")
        if r.record:
            app = r.application
            parent, root = r.parent or (None, None, None), r.root or (None, None, None)
            b.add(RunRow(run_id=r.run_id, app_id=None, app_name=r.app_name, spark_version=r.spark_version,
                         spark_user=None, master=None,
                         started_at=r.started.isoformat(sep=" ") if app and r.started else None,
                         ended_at=ended.isoformat(sep=" ") if app and ended else None,
                         parent_job_namespace=parent[0], parent_job_name=parent[1], parent_run_id=parent[2],
                         root_parent_job_namespace=root[0], root_parent_job_name=root[1],
                         root_parent_run_id=root[2]))
            if r.edges or not app:
                _query_rows(b, r, ended, at)
        for name, (kind, location) in r.datasets.items():
            b.add(DatasetRow(dataset=name, kind=kind, format=None, location=location, properties=None,
                             first_seen=at, last_seen=at))
        positions: dict[str, int] = {}
        for (name, column), dtype in r.columns.items():  # in the schema facet's field order
            positions[name] = positions.get(name, 0) + 1
            b.add(DatasetColumnRow(dataset=name, column_name=column, data_type=dtype, nullable=None,
                                   first_seen=at, last_seen=at, ordinal=positions[name]))
    return b


def _query_rows(b: Batch, r: _Run, ended: datetime | None, at: str) -> None:
    """The query and edge rows of one run."""
    duration = int((ended - r.started).total_seconds() * 1000) if r.started and ended else None
    b.add(QueryRow(query_id=r.query_id, run_id=r.run_id, action=r.action, command=r.command, sql_text=r.sql,
                   status=r.status, error=r.error, duration_ms=duration, captured_at=at, target_dataset=r.target,
                   write_mode=r.write_mode))
    # The store keeps the start (and computes the duration) whichever event comes first.
    b.add(QueryStarted(query_id=r.query_id, started_at=r.started.isoformat(sep=" ") if r.started else None))
    if r.written is not None and r.target is not None:
        b.add(WriteStatisticsRow(query_id=r.query_id, rows=r.written[0], bytes=r.written[1], files=r.written[2]))
    for name, (rows, size, files) in r.read.items():
        b.add(ReadStatisticsRow(query_id=r.query_id, dataset=name, rows=rows, bytes=size, files=files))
    for (target, *_), e in r.edges.items():
        # A field name is a column path (``address.city``: field city of struct address), unless the
        # dataset's schema facet has a top-level column of that very name.
        target_column = r.dotted.get((target, e.target_column), e.target_column)
        source_column = r.dotted.get((e.source_dataset, e.source_column), e.source_column)
        b.add(EdgeRow(query_id=r.query_id, run_id=r.run_id, target_dataset=target, target_column=target_column,
                      source_dataset=e.source_dataset, source_column=source_column, transform=e.transform,
                      kind=e.kind, expression=e.expression, masking=e.masking, captured_at=at))


def ingest(store: str, stream: IO[str], table_namespace: str | None = None) -> dict[str, Any]:
    """Write the events in ``stream`` into ``store``; counts of events, queries and edges."""
    from lineage_listener.store.writer import StoreWriter

    batch, n = to_batch(read_events(stream), table_namespace)
    writer = StoreWriter(store)
    ok = writer.write(batch)
    return {"events": n, "queries": len(batch.rows["queries"]), "edges": len(batch.rows["column_lineage"]),
            "new_edges": writer.new_edges if ok else None, "written": ok}
