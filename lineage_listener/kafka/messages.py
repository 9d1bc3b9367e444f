"""A captured batch as Kafka messages, one OpenLineage RunEvent per query, and a message back as rows.

Each query of a batch becomes one RunEvent (COMPLETE, FAIL, or RUNNING for a micro-batch of a
stream) made by :func:`~lineage_listener.openlineage.events.query_events`, so any OpenLineage
consumer reads its ``columnLineage`` facet. Its ``lineage_listener`` run facet also carries the
query's store rows (``rows``: per table, the column names and the rows), so our own consumer
writes exactly what capture would have written to a store: transform names, expressions,
masking, struct field paths, stream counters, errors. Rows every query may share (the run,
datasets, columns) go with each query that names them; what no query names (a run's end, an
error of no query) goes in an event of the application run itself.

The message key is the Spark application (``runs.run_id``): one application's events stay in
order on one partition.

>>> from lineage_listener.store.rows import row_of
>>> b = Batch()
>>> b.add(row_of("runs", ("app-1", "app-1", "job", "4.0", None, None, None, "2026-01-01 10:00:00")))
>>> [(p.key, p.query_id, len(p.batch)) for p in split(b)]
[('app-1', None, 1)]
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lineage_listener.store.batch import COLUMNS, QUERY_ID_AT, Batch
from lineage_listener.store.rows import TABLES
from lineage_listener.timewindow import utcnow

#: Tables whose rows belong to one query, and where their query id is.
_QUERY_ID_AT = {table: at for table, at in QUERY_ID_AT.items() if at is not None}
#: Where the run id is in a query's own rows (``runs``: its key).
_RUN_ID_AT = {table: COLUMNS[table].index("run_id") for table in _QUERY_ID_AT if "run_id" in COLUMNS[table]}
#: Where a query's rows name datasets.
_DATASETS_AT = {"queries": (9,), "column_lineage": (2, 4), "streams": (5,), "retarget": (1, 2)}
#: The facet schema of the rows our own consumer reads back (the standard part is OpenLineage's).
FACET_SCHEMA = "https://github.com/lineage-listener/lineage-listener/blob/main/docs/kafka-facet.json"
#: The key of a message of rows that name no run.
NO_RUN = "lineage-listener"


@dataclass
class Part:
    """The rows of one query (``query_id``), or of no query of one run (None): one message."""

    key: str
    query_id: str | None
    batch: Batch = field(default_factory=Batch)


def split(batch: Batch) -> list[Part]:
    """One part per query in order of appearance, then one per run for rows of no query.

    >>> from lineage_listener.store.rows import row_of
    >>> b = Batch()
    >>> b.add(row_of("runs", ("a", "a")))
    >>> b.add(row_of("queries", ("a:1", "a", "save", None, None, "succeeded", None, 1, "2026-01-01 10:00:00", "t")))
    >>> b.add(row_of("datasets", ("t", "table", None, None, None, None, None)))
    >>> b.add(row_of("datasets", ("u", "table", None, None, None, None, None)))
    >>> [(p.key, p.query_id, {t: len(r) for t, r in p.batch.rows.items() if r}) for p in split(b)]
    [('a', 'a:1', {'runs': 1, 'queries': 1, 'datasets': 1}), ('a', None, {'runs': 1, 'datasets': 1})]
    """
    parts: dict[Any, Part] = {}
    runs_of: dict[str, set[str]] = {}  # query id -> runs its rows name
    names: dict[Any, set[str]] = {}  # query id -> datasets its rows name
    loose: dict[str, Part] = {}

    def loose_part(run_id: str | None) -> Part:
        key = run_id or _only_run(batch) or NO_RUN
        return loose.setdefault(key, Part(key, None))

    for table, at in _QUERY_ID_AT.items():
        for row in batch.rows[table]:
            query_id = row[at] if len(row) > at else None
            run_at = _RUN_ID_AT.get(table)
            run_id = row[run_at] if run_at is not None and len(row) > run_at else None
            if query_id is None:
                loose_part(run_id).batch.rows[table].append(row)
                continue
            part = parts.get(query_id)
            if part is None:
                part = parts[query_id] = Part("", query_id)
            part.batch.rows[table].append(row)
            if run_id:
                runs_of.setdefault(query_id, set()).add(run_id)
            names.setdefault(query_id, set()).update(
                row[i] for i in _DATASETS_AT.get(table, ()) if len(row) > i and row[i])
    for query_id, part in parts.items():
        part.key = min(runs_of.get(query_id) or {_only_run(batch) or NO_RUN})
    _share(batch, parts, names, loose, loose_part)
    return _ordered(batch, parts) + list(loose.values())


def _share(batch: Batch, parts: dict[Any, Part], names: dict[Any, set[str]], loose: dict[str, Part],
           loose_part: Any) -> None:
    """The dataset and column rows go with every part that names them, the run's row with every part of
    the run (its own part when there is none); what nothing names goes loose."""
    for table in ("datasets", "dataset_columns"):
        for row in batch.rows[table]:
            holders = [parts[q] for q, named in names.items() if row[0] in named]
            for p in holders or [loose_part(None)]:
                p.batch.rows[table].append(row)
    for row in batch.rows["runs"]:
        holders = [q for q in [*parts.values(), *loose.values()] if q.key == row[0]]
        for p in holders or [loose_part(row[0])]:
            p.batch.rows["runs"].append(row)


def _ordered(batch: Batch, parts: dict[Any, Part]) -> list[Part]:
    """Parts in the order their queries first appear in the batch (its ``queries`` rows first)."""
    order = {q: n for n, q in enumerate(dict.fromkeys(r[0] for r in batch.rows["queries"]))}
    return sorted(parts.values(), key=lambda p: order.get(p.query_id, len(order)))


def _only_run(batch: Batch) -> str | None:
    runs = {r[0] for r in batch.rows["runs"]}
    return next(iter(runs)) if len(runs) == 1 else None


def rows_facet(batch: Batch) -> dict[str, Any]:
    """``{table: {"columns": [...], "rows": [[...], ...]}}`` for the tables with rows (JSON-able).

    >>> from lineage_listener.store.rows import QueryStarted
    >>> b = Batch(); b.add(QueryStarted(query_id="q", started_at=None))
    >>> rows_facet(b)
    {'query_started': {'columns': ['query_id', 'started_at'], 'rows': [['q', None]]}}
    """
    return {table: {"columns": list(COLUMNS[table]), "rows": [list(r) for r in rows]}
            for table, rows in batch.rows.items() if rows}


def batch_of_rows(facet: dict[str, Any]) -> Batch:
    """The rows of :func:`rows_facet` back, by column name: a column this version does not know is
    dropped, one it has that the message lacks is null. Every row goes through ``Batch.add`` (redacted).

    >>> batch_of_rows({"query_started": {"columns": ["started_at", "query_id"], "rows": [[None, "q"]]},
    ...                "no_such_table": {"columns": ["x"], "rows": [[1]]}}).rows["query_started"]
    [QueryStarted(query_id='q', started_at=None)]
    """
    made: list[Any] = []
    for table, spec in facet.items():
        if table not in COLUMNS:
            continue
        names, cls = spec["columns"], TABLES[table]
        width = len(names)
        if names == _COLUMN_LISTS[table]:  # this version's own columns: each row as it is
            made += [_new(cls, row) if len(row) == width else _by_name(cls, names, row) for row in spec["rows"]]
        else:
            made += [_by_name(cls, names, row) for row in spec["rows"]]
    batch = Batch()
    batch.add_all(made)  # one redaction pass over the message's texts
    return batch


#: Each table's columns as a list (a message's ``columns`` compared as they come).
_COLUMN_LISTS = {table: list(columns) for table, columns in COLUMNS.items()}


#: A row type's tuple from values of its width (``_make`` without its length check, made here).
_new = tuple.__new__


def _by_name(cls: Any, names: list[str], row: list[Any]) -> Any:
    """A row of type ``cls`` from values named ``names`` (a name it lacks: null; one it does not know: dropped)."""
    values = dict(zip(names, row))
    return cls._make(values.get(c) for c in cls._fields)


def _ts(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", ""))


def event(part: Part) -> dict[str, Any]:
    """The OpenLineage RunEvent (JSON-able) of one part, its rows in the ``lineage_listener`` facet."""
    from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
    from openlineage.client.serde import Serde

    from lineage_listener.openlineage import events as ol_events
    from lineage_listener.openlineage import facets

    rows = part.batch.rows
    run = next((r for r in rows["runs"] if r[0] == part.key), None)
    app_name, spark_version = (run[2], run[3]) if run is not None else (None, None)
    query = rows["queries"][-1] if rows["queries"] else None
    if query is not None:
        edges = [(r[2], facets.FacetEdge(r[4], r[5], r[3], r[6], r[7], r[8], r[9])) for r in rows["column_lineage"]]
        columns: dict[str, list[tuple[str, str | None]]] = {}
        for r in sorted(rows["dataset_columns"], key=lambda r: (r[0], r[6] is None, r[6] or 0, r[1])):
            columns.setdefault(r[0], []).append((r[1], r[2]))
        head = (*query[:8], _ts(query[8]), query[9], app_name, spark_version)
        made = ol_events.query_events(head, edges, columns, ol_events.ExportOptions(start_events=False))[-1]
        if query[2] == "stream":  # one micro-batch of a stream that goes on
            made.eventType = RunState.RUNNING
    else:  # rows of the application run itself (its end, errors of no query)
        ended = run[7] if run is not None else None
        made = RunEvent(eventType=RunState.COMPLETE if ended else RunState.OTHER,
                        eventTime=ol_events.iso(_ts(ended) or utcnow()),
                        run=Run(runId=ol_events.run_uuid(part.key)),
                        job=Job(namespace=ol_events.ExportOptions.job_namespace, name=app_name or "spark"),
                        producer=ol_events.PRODUCER)
    out = Serde.to_dict(made)
    run_part = out.pop("run")
    facets_of_run = run_part.pop("facets", {})
    ours = facets_of_run.pop("lineage_listener", None) or {
        "_producer": ol_events.PRODUCER, "queryId": part.query_id or "", "runId": part.key}
    ours.pop("rows", None)
    ours["_schemaURL"] = FACET_SCHEMA
    # rows first, in the first facet of the first key: see ROWS_FIRST
    return {"run": {"facets": {"lineage_listener": {"rows": rows_facet(part.batch), **ours}, **facets_of_run},
                    **run_part}, **out}


#: How a message of ours begins (:func:`event`'s key order, written without spaces): the facet's
#: ``rows`` come first, so :func:`decode` parses them alone and skips the OpenLineage part, which
#: our consumer does not need. Key order means nothing to other JSON readers; a message that begins
#: otherwise (another producer, an older version) is parsed whole.
ROWS_FIRST = '{"run":{"facets":{"lineage_listener":{"rows":'
_ROWS_FIRST_BYTES = ROWS_FIRST.encode()
_DECODER = json.JSONDecoder()


def encode(batch: Batch) -> list[tuple[bytes, bytes, Part]]:
    """(key, value, part) of each message of ``batch``, in order."""
    return [(p.key.encode(), json.dumps(event(p), default=str, separators=(",", ":")).encode(), p)
            for p in split(batch)]


@dataclass(frozen=True)
class Decoded:
    """A message's rows, how many OpenLineage events it held, and whether we produced it."""

    batch: Batch
    events: int
    ours: bool


def decode(value: bytes | str | None) -> Decoded:
    """A message back as rows: ours from the facet's rows, any other producer's event(s) through the
    OpenLineage ingest (as ``POST /api/v1/lineage`` does). Raises ValueError (or
    ``validate.BadEvent``, a ValueError) when it is neither."""
    if value is None:
        raise ValueError("empty message (a tombstone): no event")
    rows = _rows_first(value)
    if rows is not None:
        try:
            return Decoded(batch_of_rows(rows), 1, True)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"lineage_listener facet rows unreadable: {exc!r}") from None
    try:
        data = json.loads(value)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    events: Iterable[dict] = data if isinstance(data, list) else [data]
    if not isinstance(data, (list, dict)) or not all(isinstance(e, dict) for e in events):
        raise ValueError("not an OpenLineage event (a JSON object) nor a list of them")
    if isinstance(data, dict):
        ours = ((data.get("run") or {}).get("facets") or {}).get("lineage_listener") or {}
        if isinstance(ours.get("rows"), dict):
            try:
                return Decoded(batch_of_rows(ours["rows"]), 1, True)
            except (KeyError, TypeError, AttributeError) as exc:
                raise ValueError(f"lineage_listener facet rows unreadable: {exc!r}") from None
    from lineage_listener.openlineage.ingest import to_batch

    try:
        batch, n = to_batch(events)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not an OpenLineage RunEvent: {exc!r}") from None
    return Decoded(batch, n, False)


def _rows_first(value: bytes | str) -> dict[str, Any] | None:
    """The facet's rows of a message that begins with :data:`ROWS_FIRST`, parsed alone; None for any other.

    >>> _rows_first(ROWS_FIRST + '{"runs":{"columns":["run_id"],"rows":[["a"]]}},"queryId":"q"}}},"x":1}')
    {'runs': {'columns': ['run_id'], 'rows': [['a']]}}
    >>> _rows_first('{"run":{}}') is None
    True
    """
    if isinstance(value, (bytes, bytearray)):
        if not value.startswith(_ROWS_FIRST_BYTES):
            return None
        try:
            value = value.decode()
        except UnicodeDecodeError:
            return None
    elif not value.startswith(ROWS_FIRST):
        return None
    try:
        rows, _end = _DECODER.raw_decode(value, len(ROWS_FIRST))
    except json.JSONDecodeError:
        return None  # parsed whole, and refused there
    return rows if isinstance(rows, dict) else None
