"""The store's captured queries as OpenLineage ``RunEvent``s (one run per query).

Each query gives a COMPLETE event (FAIL for a failed query), preceded by a START event
when its duration is known (started = captured - duration); both carry our ids, so the
events ingested one by one still make one query. The run id is a UUID
derived from the query id, so exporting twice sends the same runs. The Spark
application is the parent run; job name ``<app>.<command>[.<target>]``. When a scheduler launched
the application (Airflow's ``spark.openlineage.parent*`` conf keys, ``runs.parent_*``), the parent
facet names its root (the DAG run), and the application's own event names the task as its parent,
as OpenLineage's Spark integration does. What a write produced and what a read counted
(``write_statistics``, ``read_statistics``) are the ``outputStatistics`` and ``inputStatistics``
facets.
"""
from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar

import attr
import duckdb
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    RunFacet, error_message_run, input_statistics_input_dataset, job_type_job, output_statistics_output_dataset,
    parent_run, processing_engine_run, schema_dataset, sql_job, tags_dataset)

from lineage_listener.openlineage import facets, naming
from lineage_listener.timewindow import utcnow, window_sql
from lineage_listener.version import __version__

PRODUCER = "https://github.com/lineage-listener/lineage-listener"
FACET_SCHEMA = f"{PRODUCER}/blob/main/docs/openlineage-facet.json"
TAGS_SCHEMA = "https://openlineage.io/spec/facets/2-0-3/TagsDatasetFacet.json#/$defs/TagsDatasetFacet"

#: Query statuses exported, and the event type each ends with.
END_STATE = {"succeeded": RunState.COMPLETE, "lineage_error": RunState.COMPLETE, "failed": RunState.FAIL}


@attr.define
class LineageListenerRunFacet(RunFacet):
    """Our own ids and status, so that ingesting our export gives back the same rows."""

    queryId: str  # noqa: N815
    runId: str  # noqa: N815 - the Spark application run (runs.run_id)
    action: str | None = None
    command: str | None = None
    status: str | None = None
    _additional_skip_redact: ClassVar[list[str]] = ["queryId", "runId", "action", "command", "status"]

    @staticmethod
    def _get_schema() -> str:
        return FACET_SCHEMA


@dataclass(frozen=True)
class ExportOptions:
    since: datetime | None = None
    until: datetime | None = None
    job_namespace: str = "spark"
    table_namespace: str | None = None
    start_events: bool = True
    chunk: int = 500
    labels: bool = True  # each dataset's column labels (declared and propagated) as a tags facet


def run_uuid(key: str) -> str:
    """A stable UUID for one of our ids.

    >>> run_uuid("app-1:7:ab") == run_uuid("app-1:7:ab")
    True
    """
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"lineage-listener:{key}"))


def iso(ts: datetime) -> str:
    return ts.isoformat(timespec="milliseconds") + "Z"


def count(con: duckdb.DuckDBPyConnection, options: ExportOptions) -> int:
    """How many queries :func:`events` would export."""
    where, params = _window(options)
    return con.execute(f"SELECT count(*) FROM queries q WHERE {where}", params).fetchone()[0]


@dataclass(frozen=True)
class Family:
    """The scheduler's runs above a Spark application (``runs.parent_*``, ``runs.root_parent_*``)."""

    parent_namespace: str | None = None
    parent_name: str | None = None
    parent_run_id: str | None = None
    root_namespace: str | None = None
    root_name: str | None = None
    root_run_id: str | None = None
    #: The application's own start and end (``runs``).
    started_at: datetime | None = None
    ended_at: datetime | None = None

    def parent(self) -> parent_run.ParentRunFacet | None:
        """The application's own ``parent`` facet: the task, with the DAG run as its root."""
        if not (self.parent_name and _uuid(self.parent_run_id)):
            return None
        return parent_run.ParentRunFacet(run=parent_run.Run(runId=self.parent_run_id),
                                         job=parent_run.Job(namespace=self.parent_namespace or "default",
                                                            name=self.parent_name), root=self.root())

    def root(self) -> parent_run.Root | None:
        """The root of the hierarchy: the DAG run, else the task itself."""
        if self.root_name and _uuid(self.root_run_id):
            return parent_run.Root(run=parent_run.RootRun(runId=self.root_run_id),
                                   job=parent_run.RootJob(namespace=self.root_namespace or self.parent_namespace
                                                          or "default", name=self.root_name))
        if self.parent_name and _uuid(self.parent_run_id):
            return parent_run.Root(run=parent_run.RootRun(runId=self.parent_run_id),
                                   job=parent_run.RootJob(namespace=self.parent_namespace or "default",
                                                          name=self.parent_name))
        return None


@dataclass(frozen=True)
class Statistics:
    """What one query wrote and read: (rows, bytes, files) of its write, and of each dataset it read."""

    write: tuple[int | None, int | None, int | None] | None = None
    reads: dict[str, tuple[int | None, int | None, int | None]] | None = None


def _uuid(value: str | None) -> bool:
    """Whether ``value`` is a UUID, as OpenLineage's run ids are (else the facet is left out).

    >>> _uuid("0190d1c4-5b8a-7e1f-9f65-1a2b3c4d5e6f"), _uuid("scheduled__2026-01-01"), _uuid(None)
    (True, False, False)
    """
    try:
        uuid.UUID(str(value))
        return value is not None
    except ValueError:
        return False


def events(con: duckdb.DuckDBPyConnection, options: ExportOptions = ExportOptions(),
           only: set[str] | None = None) -> Iterator[tuple[str, RunEvent]]:
    """(query_id, event) for every exported query, oldest first; ``only``: these query ids. A run a
    scheduler launched gets its application event first, under the id of its first query exported."""
    where, params = _window(options)
    rows = con.execute(
        f"""SELECT q.query_id, q.run_id, q.action, q.command, q.sql_text, q.status, q.error, q.duration_ms,
                   q.captured_at, q.target_dataset, r.app_name, r.spark_version
            FROM queries q LEFT JOIN runs r USING (run_id) WHERE {where} ORDER BY q.captured_at, q.query_id""",
        params).fetchall()
    if only is not None:
        rows = [r for r in rows if r[0] in only]
    families = _families(con, {r[1] for r in rows if r[1]})
    announced: set[str] = set()
    for start in range(0, len(rows), options.chunk):
        chunk = rows[start:start + options.chunk]
        edges, columns = _edges_and_columns(con, [r[0] for r in chunk])
        stats = _statistics(con, [r[0] for r in chunk])
        tags = _tags(con, {n for es in edges.values() for t, e in es for n in (t, e.source_dataset)}) \
            if options.labels else {}
        for row in chunk:
            family = families.get(row[1])
            if family is not None and row[1] not in announced:
                announced.add(row[1])
                for event in application_events(row[1], row[10], row[11], family, options):
                    yield row[0], event
            for event in query_events(row, edges.get(row[0], []), columns, options, tags, family,
                                      stats.get(row[0])):
                yield row[0], event


def _families(con: duckdb.DuckDBPyConnection, run_ids: set[str]) -> dict[str, Family]:
    """The scheduler's runs above each of ``run_ids`` that has one."""
    rows = con.execute("""SELECT run_id, parent_job_namespace, parent_job_name, parent_run_id,
                                 root_parent_job_namespace, root_parent_job_name, root_parent_run_id,
                                 started_at, ended_at
                          FROM runs WHERE run_id IN (SELECT unnest(?))
                            AND coalesce(parent_run_id, root_parent_run_id) IS NOT NULL""",
                       [sorted(run_ids)]).fetchall()
    return {r[0]: Family(*r[1:]) for r in rows}


def _statistics(con: duckdb.DuckDBPyConnection, query_ids: list[str]) -> dict[str, Statistics]:
    """Each query's ``write_statistics`` and ``read_statistics``."""
    writes = {q: (r, b, f) for q, r, b, f in con.execute(
        "SELECT query_id, rows, bytes, files FROM write_statistics WHERE query_id IN (SELECT unnest(?))",
        [query_ids]).fetchall()}
    reads: dict[str, dict[str, tuple[int | None, int | None, int | None]]] = defaultdict(dict)
    for q, d, r, b, f in con.execute("SELECT query_id, dataset, rows, bytes, files FROM read_statistics "
                                     "WHERE query_id IN (SELECT unnest(?))", [query_ids]).fetchall():
        reads[q][d] = (r, b, f)
    return {q: Statistics(writes.get(q), reads.get(q)) for q in set(writes) | set(reads)}


def application_events(app_run: str, app_name: str | None, spark_version: str | None, family: Family,
                       options: ExportOptions) -> list[RunEvent]:
    """The Spark application's own events (job type ``APPLICATION``; START, and COMPLETE once it
    ended): its parent is the scheduler's task, the root its DAG run; its ``lineage_listener``
    facet names the run (``runs.run_id``)."""
    facets_: dict[str, Any] = {
        "processing_engine": processing_engine_run.ProcessingEngineRunFacet(
            version=spark_version or "unknown", name="spark", openlineageAdapterVersion=__version__),
        "lineage_listener": LineageListenerRunFacet(queryId="", runId=app_run),
    }
    parent = family.parent()
    if parent is not None:
        facets_["parent"] = parent
    job = Job(namespace=options.job_namespace, name=app_name or "spark", facets={"jobType": job_type_job.JobTypeJobFacet(
        processingType="BATCH", integration="SPARK", jobType="APPLICATION")})
    run = Run(runId=run_uuid(app_run), facets=facets_)
    out = [RunEvent(eventType=RunState.START, eventTime=iso(family.started_at or family.ended_at or utcnow()),
                    run=run, job=job, producer=PRODUCER)]
    if family.ended_at is not None:
        out.append(RunEvent(eventType=RunState.COMPLETE, eventTime=iso(family.ended_at), run=run, job=job,
                            producer=PRODUCER))
    return out


def _window(options: ExportOptions) -> tuple[str, dict[str, Any]]:
    within, params = window_sql("q.captured_at", options.since, options.until)
    return f"q.status IN ('succeeded', 'failed', 'lineage_error') AND {within}", params


def _edges_and_columns(con: duckdb.DuckDBPyConnection, query_ids: list[str]):
    edges: dict[str, list[tuple[str | None, facets.FacetEdge]]] = defaultdict(list)
    for qid, target, *rest in con.execute(
            """SELECT query_id, target_dataset, source_dataset, source_column, target_column, transform, kind,
                      expression, masking FROM column_lineage WHERE query_id IN (SELECT unnest(?))
               ORDER BY target_column NULLS LAST, source_dataset, source_column, transform""",
            [query_ids]).fetchall():
        edges[qid].append((target, facets.FacetEdge(*rest)))
    names = {e.source_dataset for es in edges.values() for _, e in es} | {t for es in edges.values() for t, _ in es}
    columns: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
    for ds, col, dtype in con.execute(
            "SELECT dataset, column_name, data_type FROM dataset_columns WHERE dataset IN (SELECT unnest(?)) "
            "ORDER BY dataset, ordinal NULLS LAST, column_name", [sorted(n for n in names if n)]).fetchall():
        columns[ds].append((col, dtype))
    return edges, columns


def _tags(con: duckdb.DuckDBPyConnection, datasets: set[str | None]) -> dict[str, TagsFacet]:
    """The ``tags`` facet of each dataset whose columns carry labels: one tag per (column, label), value
    ``true`` (or ``false``: reviewed, does not carry it), source ``lineage-listener:<how>``."""
    from lineage_listener.govern.answers import dataset_labels

    return {ds: TagsFacet(tags=[tags_dataset.TagsDatasetFacetFields(
                key=label, value=str(value).lower(), source=f"lineage-listener:{how}", field=column)
                for column, label, value, how in rows])
            for ds, rows in dataset_labels(con, {d for d in datasets if d}).items()}


@attr.define
class TagsFacet(tags_dataset.TagsDatasetFacet):
    """OpenLineage's tags dataset facet, at the version of the spec this project validates against."""

    @staticmethod
    def _get_schema() -> str:
        return TAGS_SCHEMA


def query_events(row: tuple, edges: list[tuple[str | None, facets.FacetEdge]],
                 columns: dict[str, list[tuple[str, str | None]]], options: ExportOptions,
                 tags: dict[str, Any] | None = None, family: Family | None = None,
                 stats: Statistics | None = None) -> list[RunEvent]:
    """The events of one query: ``row`` is its ``queries`` row (``captured_at`` a datetime) followed by
    its run's ``app_name`` and ``spark_version``; ``edges`` its (target, edge) pairs; ``columns`` the
    (name, type) of each dataset's columns in schema order; ``tags`` the tags facet of labelled datasets;
    ``family`` the scheduler's runs above its application; ``stats`` what it wrote and read."""
    (query_id, app_run, action, command, sql_text, status, error, duration_ms, captured_at, target,
     app_name, spark_version) = row

    def name_of(dataset: str) -> tuple[str, str]:
        return naming.to_openlineage(dataset, options.table_namespace)

    def schema(dataset: str) -> dict:
        cols = columns.get(dataset)
        out: dict[str, Any] = {"tags": tags[dataset]} if tags and dataset in tags else {}
        if cols:
            out["schema"] = schema_dataset.SchemaDatasetFacet(fields=[
                schema_dataset.SchemaDatasetFacetFields(name=c, type=t) for c, t in cols])
        return out

    app = app_name or "spark"
    job_name = f"{app}.{command or action or 'query'}" + (f".{name_of(target)[1]}" if target else "")
    job_facets: dict[str, Any] = {"jobType": job_type_job.JobTypeJobFacet(
        processingType="STREAMING" if action == "stream" else "BATCH", integration="SPARK", jobType="SQL_JOB")}
    if sql_text:
        job_facets["sql"] = sql_job.SQLJobFacet(query=sql_text, dialect="spark")
    run_facets: dict[str, Any] = {
        "processing_engine": processing_engine_run.ProcessingEngineRunFacet(
            version=spark_version or "unknown", name="spark", openlineageAdapterVersion=__version__),
        "lineage_listener": LineageListenerRunFacet(queryId=query_id, runId=app_run or "", action=action,
                                                    command=command, status=status),
    }
    if app_run:
        run_facets["parent"] = parent_run.ParentRunFacet(run=parent_run.Run(runId=run_uuid(app_run)),
                                                         job=parent_run.Job(namespace=options.job_namespace,
                                                                            name=app),
                                                         root=family.root() if family is not None else None)
    if status == "failed":
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=error or "failed", programmingLanguage="JAVA")
    reads = (stats.reads if stats is not None else None) or {}
    sources = sorted({e.source_dataset for _, e in edges if e.source_dataset} | set(reads))
    inputs = [InputDataset(namespace=name_of(s)[0], name=name_of(s)[1], facets=schema(s),
                           inputFacets=_input_statistics(reads.get(s))) for s in sources]
    outputs = []
    if target:
        out_facets = dict(schema(target))
        if edges:
            out_facets["columnLineage"] = facets.column_lineage((e for _, e in edges), name_of)
        written = stats.write if stats is not None else None
        outputs.append(OutputDataset(namespace=name_of(target)[0], name=name_of(target)[1], facets=out_facets,
                                     outputFacets={"outputStatistics": OutputStatistics(
                                         rowCount=written[0], size=written[1], fileCount=written[2])}
                                     if written is not None else None))
    job = Job(namespace=options.job_namespace, name=job_name, facets=job_facets)
    run_id = run_uuid(query_id)
    ended = captured_at or utcnow()
    out = []
    if options.start_events and duration_ms is not None:
        out.append(RunEvent(eventType=RunState.START, eventTime=iso(ended - timedelta(milliseconds=duration_ms)),
                            run=Run(runId=run_id, facets={k: v for k, v in run_facets.items()
                                                          if k in ("parent", "processing_engine", "lineage_listener")}),
                            job=job, inputs=inputs, producer=PRODUCER))
    out.append(RunEvent(eventType=END_STATE.get(status, RunState.COMPLETE), eventTime=iso(ended),
                        run=Run(runId=run_id, facets=run_facets), job=job, inputs=inputs, outputs=outputs,
                        producer=PRODUCER))
    return out


@attr.define
class OutputStatistics(output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet):
    """OpenLineage's output statistics facet, at the version of the spec this project validates against."""

    @staticmethod
    def _get_schema() -> str:
        return ("https://openlineage.io/spec/facets/1-0-2/OutputStatisticsOutputDatasetFacet.json"
                "#/$defs/OutputStatisticsOutputDatasetFacet")


@attr.define
class InputStatistics(input_statistics_input_dataset.InputStatisticsInputDatasetFacet):
    """OpenLineage's input statistics facet, at the version of the spec this project validates against."""

    @staticmethod
    def _get_schema() -> str:
        return ("https://openlineage.io/spec/facets/1-0-0/InputStatisticsInputDatasetFacet.json"
                "#/$defs/InputStatisticsInputDatasetFacet")


def _input_statistics(read: tuple[int | None, int | None, int | None] | None) -> dict[str, Any] | None:
    if read is None:
        return None
    return {"inputStatistics": InputStatistics(rowCount=read[0], size=read[1], fileCount=read[2])}
