"""A stream's sources and sink, named as a batch read or write of the same path, table or topic is.

Sources are read from a stream's analyzed plan (``StreamingRelation`` holds the V1
``DataSource``: format, options, table; ``StreamingRelationV2`` a V2 table or connector) and
its running plan (a file source prints its qualified root path). The sink is the write at the
root of the stream's plan: a ``file:`` path, a table, ``kafka://servers/topic``,
``memory:<query name>``; console and foreach store nothing and have no fact.
"""
from __future__ import annotations

import json
from typing import Any

from lineage_listener import redact
from lineage_listener.capture.jvm import jvm_call_failed, opt, scala_map, seq
from lineage_listener.capture.reading.readers import kafka
from lineage_listener.capture.reading.readers.catalog import catalog_table
from lineage_listener.capture.reading.readers.dsv2 import identifier, v2_table
from lineage_listener.capture.reading.readers.files import bracketed, qualify, sink_format
from lineage_listener.capture.reading.readers.registry import STREAM_SINKS, STREAM_SOURCES, reads
from lineage_listener.lineage.datasets import RelationFact

log = redact.logger(__name__)


def first_id(plan: Any) -> int | None:
    """The exprId of a plan's first output attribute, or None."""
    try:
        return int(plan.output().head().exprId().id())
    except jvm_call_failed():
        return None


def source_facts(execution: Any, scope: str | None) -> dict[int, RelationFact]:
    """Facts of every source leaf of a stream's plan (a ``StreamExecution``), keyed by the exprId
    of the leaf's first output. A source that cannot be read has no fact (one debug line)."""
    out: dict[int, RelationFact] = {}
    running: dict[int, Any] = {}
    for leaf in seq(execution.logicalPlan().collectLeaves()):
        eid = first_id(leaf)
        if eid is not None:
            running[eid] = leaf
    try:
        analyzed = execution.analyzedPlan()
    except jvm_call_failed():
        analyzed = None
    for leaf in seq(analyzed.collectLeaves()) if analyzed is not None else []:
        eid = first_id(leaf)
        if eid is None:
            continue
        try:
            reader = STREAM_SOURCES.get(str(leaf.nodeName()))
            fact = reader(leaf, running.get(eid), scope) if reader is not None else None
        except jvm_call_failed() as exc:
            log.debug("could not read a streaming source: %s", exc)
            continue
        if fact is not None:
            out[eid] = fact
    return out


@reads(STREAM_SOURCES, "StreamingRelation")
def v1_source(leaf: Any, running: Any, scope: str | None) -> RelationFact:
    """A V1 stream source: a catalog table, else the path its running source prints."""
    ds = leaf.dataSource()
    table = opt(ds.catalogTable())
    fmt = str(ds.className())
    fact: RelationFact = catalog_table(table) if table is not None else {}
    fact["format"] = fact.get("format") or fmt.rsplit(".", 1)[-1].lower()
    fact["options"] = scala_map(ds.options())
    if "table" not in fact:
        uri = bracketed(running.source()) if running is not None and "source" in dir(running) else None
        paths = [uri] if uri else [qualify(str(p)) for p in seq(ds.paths())]
        fact["paths"] = paths or [qualify(fact["options"].get("path", "?"))]
    return fact


@reads(STREAM_SOURCES, "StreamingRelationV2")
def v2_source(leaf: Any, running: Any, scope: str | None) -> RelationFact:
    """A V2 stream source: a catalog table, Kafka topics, or local data named by its options."""
    options = scala_map(leaf.extraOptions())
    source = str(leaf.sourceName())
    ident, catalog = opt(leaf.identifier()), opt(leaf.catalog())
    if ident is not None:
        return {"table": identifier(ident, catalog), "format": source, "options": options}
    if source == "kafka":
        return kafka.topics(options, reading=True)
    columns = [str(a.name()) for a in seq(leaf.output())]
    return {"node": source, "format": source, "columns": columns, "scope": scope,
            "content": json.dumps(options, sort_keys=True)}


def sink_fact(execution: Any, root: Any, name: str | None) -> RelationFact | None:
    """The sink of a stream whose plan's root is ``root``; None for sinks that store nothing."""
    reader = STREAM_SINKS.get(str(root.nodeName()))
    return reader(execution, root, name) if reader is not None else None


@reads(STREAM_SINKS, "WriteToMicroBatchDataSourceV1")
def v1_sink(execution: Any, root: Any, name: str | None) -> RelationFact | None:
    """A V1 sink: a catalog table, or the path a file (or Delta) sink prints."""
    table = opt(root.catalogTable())
    sink = root.sink()
    uri = bracketed(sink)
    if table is not None:
        fact = catalog_table(table)
        if uri:
            fact.setdefault("location", uri)
        return fact
    if uri:
        kind = str(sink.getClass().getSimpleName())
        fmt = "delta" if kind.startswith("Delta") else sink_format(sink)
        return {"paths": [uri], "format": fmt, "options": scala_map(root.writeOptions())}
    return None  # ForeachBatchSink, foreach, custom V1 sinks without a location


@reads(STREAM_SINKS, "WriteToMicroBatchDataSource")
def v2_sink(execution: Any, root: Any, name: str | None) -> RelationFact | None:
    """A V2 sink: a catalog table, a memory sink (named by the query), or Kafka topics."""
    relation = opt(root.relation())
    table = root.table()
    if relation is None and str(table.getClass().getSimpleName()) == "DataSourceV2Relation":
        relation, table = table, table.table()  # 4.x: the table field holds the relation
    if relation is not None and opt(relation.identifier()) is not None:
        return v2_table(relation)
    try:
        table = execution.sink()
    except jvm_call_failed():
        pass
    kind = str(table.getClass().getSimpleName())
    if kind == "MemorySink":
        return {"named": f"memory:{name or '?'}", "kind": "memory", "format": "memory"}
    if kind.startswith("Kafka"):
        return kafka.topics(scala_map(root.writeOptions()), reading=False)
    return None  # console, foreach writer, noop
