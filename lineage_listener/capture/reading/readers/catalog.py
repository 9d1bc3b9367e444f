"""Catalog tables and views: a ``CatalogTable``'s identity, location, format and labels.

Read for Hive table leaves, for the writes that carry the table they write (CTAS, Hive inserts)
and for persisted views; the other families use :func:`catalog_table` for a leaf or target
backed by a catalog table.
"""
from __future__ import annotations

from typing import Any

from lineage_listener import redact
from lineage_listener.capture.jvm import jvm_call_failed, opt, scala_map
from lineage_listener.capture.reading.readers.registry import LEAVES, TARGETS, Current, reads
from lineage_listener.lineage.datasets import RelationFact, TableIdent
from lineage_listener.plan.classes import CATALOG_TABLE_WRITES

log = redact.logger(__name__)

#: Table properties that label a column (``capture/recording/spark_labels.py``).
CLASSIFICATION_PREFIX = "lineage.classification."


def table_identifier(ident: Any, current: Current = None) -> TableIdent:
    """A ``TableIdentifier`` as ``{"catalog", "database", "table"}``."""
    database = opt(ident.database())
    catalog = opt(ident.catalog()) if hasattr(ident, "catalog") else None
    if database is None and current:
        catalog, database = catalog or current[0], current[1]
    return {"catalog": catalog, "database": database, "table": ident.table()}


def catalog_table(table: Any, current: Current = None) -> RelationFact:
    """Facts of a ``CatalogTable``: identity, location, provider, storage properties."""
    fact: RelationFact = {"table": table_identifier(table.identifier(), current)}
    try:
        loc = opt(table.storage().locationUri())
        fact["location"] = str(loc.toString()) if loc is not None else None
    except jvm_call_failed():
        pass
    fact["format"] = opt(table.provider())
    try:
        fact["view"] = str(table.tableType().name()) == "VIEW"
    except jvm_call_failed():
        pass
    fact.update(classified(table))
    return fact


def labelled(properties: dict[str, str]) -> dict[str, str]:
    """The properties that label a column.

    >>> labelled({"lineage.classification.email": "PII", "owner": "ops"})
    {'lineage.classification.email': 'PII'}
    """
    return {k: v for k, v in properties.items() if k.startswith(CLASSIFICATION_PREFIX)}


def classified(table: Any) -> RelationFact:
    """What a table keeps of labels (capture/recording/spark_labels.py): its ``lineage.classification.<column>``
    properties (``classification``) and, when its schema mentions one, the schema (``classified_schema``)."""
    out: RelationFact = {}
    try:
        found = labelled(scala_map(table.properties()))
        if found:
            out["classification"] = found
    except jvm_call_failed():
        log.debug("table properties not readable", exc_info=True)
    try:
        schema = str(table.schema().json())
    except jvm_call_failed():  # Spark 4.1's Table.schema() raises for a table with columns() only
        log.debug("table schema not readable", exc_info=True)
        return out
    if "classification" in schema:
        out["classified_schema"] = schema
    return out


@reads(LEAVES, "HiveTableRelation")
def hive_table(leaf: Any, current: Current) -> RelationFact:
    """A Hive table read."""
    fact = catalog_table(leaf.tableMeta(), current)
    fact["format"] = "hive"
    return fact


@reads(TARGETS, CATALOG_TABLE_WRITES)
def table_write(cmd: Any, current: Current) -> RelationFact | None:
    """A write into (or creation of) the catalog table the command carries."""
    for getter in ("table", "tableDesc"):  # the field's name differs between commands
        if getter in dir(cmd):
            fact = catalog_table(getattr(cmd, getter)(), current)
            if "partition" in dir(cmd):  # InsertIntoHiveTable: into a partition spec, static or dynamic
                fact["partitions_only"] = cmd.partition().size() > 0
            return fact
    return None


def view_columns(cmd: Any) -> list[str] | None:
    """``CREATE VIEW v (x, y) AS ...``: the user's column names (the plan JSON prints them as None)."""
    try:
        cols = cmd.userSpecifiedColumns()
        return [str(cols.apply(i)._1()) for i in range(cols.size())] or None
    except jvm_call_failed():  # AlterViewAsCommand has none
        return None


@reads(TARGETS, "AlterViewAsCommand")
def view(cmd: Any, current: Current) -> RelationFact:
    """A view created or replaced, with the user's column names."""
    fact: RelationFact = {"table": table_identifier(cmd.name(), current), "view": True, "format": "view"}
    names = view_columns(cmd)
    if names:
        fact["output_columns"] = names
    return fact


@reads(TARGETS, "CreateViewCommand")
def created_view(cmd: Any, current: Current) -> RelationFact | None:
    """A persisted view created (a temporary view is no dataset: None)."""
    if "Persisted" not in str(cmd.viewType().toString()):
        return None
    return view(cmd, current)
