"""DataSource V2 tables: ``DataSourceV2Relation`` reads (Iceberg, Delta and other V2 catalogs, file
sources read through V2) and the V2 writes into a table or creating one."""
from __future__ import annotations

from typing import Any

from lineage_listener.capture.jvm import jvm_call_failed, opt, scala_map
from lineage_listener.capture.reading.readers.catalog import classified
from lineage_listener.capture.reading.readers.files import qualify, root_paths
from lineage_listener.capture.reading.readers.registry import LEAVES, TARGETS, Current, pinned_version, reads
from lineage_listener.lineage.datasets import RelationFact, TableIdent
from lineage_listener.plan.classes import V2_CREATE_WRITES, V2_WRITES

#: Formats whose V2 tables this reader names by format (their classes live in a package of that name).
NAMED_FORMATS = ("iceberg", "delta")


def identifier(ident: Any, catalog: Any) -> TableIdent:
    """A V2 ``Identifier`` in ``catalog`` (a ``CatalogPlugin`` or None) as a table identity."""
    ns = list(ident.namespace())
    return {"catalog": str(catalog.name()) if catalog is not None else None,
            "database": ".".join(ns) or None, "table": str(ident.name())}


def v2_format(table: Any) -> str | None:
    """A DataSource V2 table's format: ``iceberg`` / ``delta`` for those formats' tables, else its
    class name without ``Table`` (``SparkTable`` is Iceberg's; Delta's is ``DeltaTableV2``)."""
    try:
        cls = str(table.getClass().getName())
        if cls.endswith(".RowLevelOperationTable"):  # a MERGE/UPDATE/DELETE target: the table it wraps
            cls = str(table.table().getClass().getName())
    except jvm_call_failed():
        return None
    for known in NAMED_FORMATS:
        if f".{known}." in cls:
            return known
    return cls.rsplit(".", 1)[-1].replace("Table", "").lower() or None


@reads(LEAVES, "DataSourceV2Relation")
def v2_relation(leaf: Any, current: Current) -> RelationFact:
    """A V2 table read."""
    return v2_table(leaf)


@reads(LEAVES, "DataSourceV2ScanRelation")
def v2_scan(leaf: Any, current: Current) -> RelationFact:
    """A V2 scan: named by the relation it scans."""
    return v2_table(leaf.relation())


def v2_table(rel: Any) -> RelationFact:
    """Facts of a ``DataSourceV2Relation``: its table, or the paths of a file source read through V2."""
    fact: RelationFact = {}
    ident, catalog = opt(rel.identifier()), opt(rel.catalog())
    if ident is not None:
        fact["table"] = identifier(ident, catalog)
    else:
        table = rel.table()
        try:  # a file source read through DSv2 (FileTable): name it by its root paths
            fact["paths"] = root_paths(table.fileIndex())
        except jvm_call_failed():
            fact["paths"] = [str(table.name())]
    fact["format"] = v2_format(rel.table())
    fact["options"] = scala_map(rel.options())
    fact.update(classified(rel.table()))
    pinned_version(rel.table(), fact)
    ident_fact = fact.get("table")
    if fact["format"] in NAMED_FORMATS and ident_fact and ident_fact.get("database") == fact["format"] \
            and "/" in str(ident_fact.get("table")):  # delta.`/path`: a path, not a table
        fact["paths"] = [qualify(str(ident_fact["table"]))]
        del fact["table"]
    return fact


@reads(TARGETS, V2_WRITES)
def v2_write(cmd: Any, current: Current) -> RelationFact:
    """A V2 write into an existing table."""
    return v2_table(cmd.table())


@reads(TARGETS, V2_CREATE_WRITES)
def v2_create(cmd: Any, current: Current) -> RelationFact:
    """A V2 CTAS / RTAS: the table it creates."""
    resolved = cmd.name()
    return {"table": identifier(resolved.identifier(), resolved.catalog())}
