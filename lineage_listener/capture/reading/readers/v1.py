"""DataSource V1: a ``LogicalRelation`` leaf (its catalog table, then its ``BaseRelation`` read by
the family registered for that relation's class) and the V1 writes by data source."""
from __future__ import annotations

from typing import Any

from lineage_listener.capture.jvm import opt, scala_map, simple_name
from lineage_listener.capture.reading.readers import jdbc, kafka
from lineage_listener.capture.reading.readers.catalog import catalog_table
from lineage_listener.capture.reading.readers.files import qualify
from lineage_listener.capture.reading.readers.registry import LEAVES, RELATIONS, TARGETS, Current, reads, relation
from lineage_listener.lineage.datasets import RelationFact


@reads(LEAVES, "LogicalRelation")
def logical_relation(leaf: Any, current: Current) -> RelationFact:
    """A V1 read: the catalog table it reads, if any, and what its ``BaseRelation`` tells."""
    fact: RelationFact = {}
    table = opt(leaf.catalogTable())
    if table is not None:
        fact.update(catalog_table(table, current))
    rel = leaf.relation()
    kind = simple_name(rel)
    reader = RELATIONS.get(kind)
    if reader is not None:
        reader(rel, fact)
    else:
        fact["format"] = fact.get("format") or kind
    return fact


@reads(TARGETS, "InsertIntoDataSourceCommand")
def insert_into_relation(cmd: Any, current: Current) -> RelationFact:
    """An insert into a V1 relation: named as a read of that relation is."""
    return relation(cmd.logicalRelation(), "LogicalRelation", current)


@reads(TARGETS, "SaveIntoDataSourceCommand")
def save(cmd: Any, current: Current) -> RelationFact:
    """``df.write.format(...).save()``: a JDBC table, a path, Kafka topics, or the provider itself."""
    opts = scala_map(cmd.options())
    provider = str(cmd.dataSource().getClass().getSimpleName())
    provider = "delta" if provider.startswith("Delta") else provider  # DeltaDataSource
    fact = jdbc.written(opts)
    if fact is None and "path" in opts:
        fact = {"paths": [qualify(opts["path"])], "format": provider, "options": opts}
    if fact is None and provider == "KafkaSourceProvider":
        fact = kafka.topics(opts, reading=False)
    if fact is None:
        fact = {"node": provider, "format": provider, "options": opts}
    fact["mode"] = str(cmd.mode().toString())
    return fact
