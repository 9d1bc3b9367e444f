"""The store's captured queries as OpenLineage ``RunEvent``s (one run per query).

Each query gives a COMPLETE event (FAIL for a failed query), preceded by a START event
when its duration is known (started = captured - duration); both carry our ids, so the
events ingested one by one still make one query. The run id is a UUID
derived from the query id, so exporting twice sends the same runs. The Spark
application is the parent run; job name ``<app>.<command>[.<target>]``.
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
    RunFacet, error_message_run, job_type_job, parent_run, processing_engine_run, schema_dataset, sql_job,
    tags_dataset)

from lineage_listener.openlineage import facets, naming
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


def events(con: duckdb.DuckDBPyConnection, options: ExportOptions = ExportOptions(),
           only: set[str] | None = None) -> Iterator[tuple[str, RunEvent]]:
    """(query_id, event) for every exported query, oldest first; ``only``: these query ids."""
    where, params = _window(options)
    rows = con.execute(
        f"""SELECT q.query_id, q.run_id, q.action, q.command, q.sql_text, q.status, q.error, q.duration_ms,
                   q.captured_at, q.target_dataset, r.app_name, r.spark_version
            FROM queries q LEFT JOIN runs r USING (run_id) WHERE {where} ORDER BY q.captured_at, q.query_id""",
        params).fetchall()
    if only is not None:
        rows = [r for r in rows if r[0] in only]
    for start in range(0, len(rows), options.chunk):
        chunk = rows[start:start + options.chunk]
        edges, columns = _edges_and_columns(con, [r[0] for r in chunk])
        tags = _tags(con, {n for es in edges.values() for t, e in es for n in (t, e.source_dataset)}) \
            if options.labels else {}
        for row in chunk:
            for event in query_events(row, edges.get(row[0], []), columns, options, tags):
                yield row[0], event


def _window(options: ExportOptions) -> tuple[str, list[Any]]:
    where, params = ["q.status IN ('succeeded', 'failed', 'lineage_error')"], []
    if options.since:
        where.append("q.captured_at >= ?")
        params.append(options.since)
    if options.until:
        where.append("q.captured_at <= ?")
        params.append(options.until)
    return " AND ".join(where), params


def _edges_and_columns(con: duckdb.DuckDBPyConnection, query_ids: list[str]):
    edges: dict[str, list[tuple[str | None, facets.Edge]]] = defaultdict(list)
    for qid, target, *rest in con.execute(
            """SELECT query_id, target_dataset, source_dataset, source_column, target_column, transform, kind,
                      expression, masking FROM column_lineage WHERE query_id IN (SELECT unnest(?))
               ORDER BY target_column NULLS LAST, source_dataset, source_column, transform""",
            [query_ids]).fetchall():
        edges[qid].append((target, facets.Edge(*rest)))
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


def query_events(row: tuple, edges: list[tuple[str | None, facets.Edge]],
                 columns: dict[str, list[tuple[str, str | None]]], options: ExportOptions,
                 tags: dict[str, Any] | None = None) -> list[RunEvent]:
    """The events of one query: ``row`` is its ``queries`` row (``captured_at`` a datetime) followed by
    its run's ``app_name`` and ``spark_version``; ``edges`` its (target, edge) pairs; ``columns`` the
    (name, type) of each dataset's columns in schema order; ``tags`` the tags facet of labelled datasets."""
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
                                                                            name=app))
    if status == "failed":
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=error or "failed", programmingLanguage="JAVA")
    sources = sorted({e.source_dataset for _, e in edges if e.source_dataset})
    inputs = [InputDataset(namespace=name_of(s)[0], name=name_of(s)[1], facets=schema(s)) for s in sources]
    outputs = []
    if target:
        out_facets = dict(schema(target))
        if edges:
            out_facets["columnLineage"] = facets.column_lineage((e for _, e in edges), name_of)
        outputs.append(OutputDataset(namespace=name_of(target)[0], name=name_of(target)[1], facets=out_facets))
    job = Job(namespace=options.job_namespace, name=job_name, facets=job_facets)
    run_id = run_uuid(query_id)
    ended = captured_at or datetime.utcnow()
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
