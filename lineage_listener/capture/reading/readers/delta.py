"""Delta Lake: the version a read is pinned to, the labels a Delta table keeps in its log, and the
targets of Delta's own MERGE / UPDATE / DELETE commands."""
from __future__ import annotations

from typing import Any

from lineage_listener.capture.jvm import jvm_call_failed, opt, scala_map, seq
from lineage_listener.capture.reading.readers.catalog import catalog_table, labelled
from lineage_listener.capture.reading.readers.registry import TARGETS, VERSIONS, Current, reads, relation
from lineage_listener.lineage.datasets import RelationFact
from lineage_listener.plan.classes import DELTA_ROW_LEVEL_COMMANDS, SOURCE_LEAVES

#: Class name prefixes of the file indexes of a Delta table read as files.
DELTA_FILE_INDEXES = ("Tahoe", "PreparedDelta", "Delta")


def snapshot_read(rel: Any, fact: RelationFact) -> None:
    """A Delta table read as files (``TahoeFileIndex``): format ``delta`` and the version read."""
    try:
        index = rel.location()
        if not str(index.getClass().getSimpleName()).startswith(DELTA_FILE_INDEXES):
            return
        fact["format"] = "delta"
    except jvm_call_failed():
        return
    for getter in ("snapshotAtAnalysis", "getSnapshot"):  # the version this read is pinned to
        try:
            snapshot = getattr(index, getter)()
            fact.setdefault("options", {})["delta.version"] = str(snapshot.version())
        except jvm_call_failed():
            continue
        try:  # labels the Delta table keeps: its schema's metadata and its properties live in its log
            metadata = snapshot.metadata()
            found = labelled(scala_map(metadata.configuration()))
            if found:
                fact["classification"] = found
            schema = str(metadata.schemaString())
            if "classification" in schema:
                fact["classified_schema"] = schema
        except jvm_call_failed():
            pass
        return


@reads(VERSIONS, "delta")
def time_travel(table: Any, fact: RelationFact) -> None:
    """The version (or timestamp) a DataSource V2 read of a Delta table travels to."""
    try:
        travel = opt(table.timeTravelOpt())
        if travel is not None:
            version = opt(travel.version())
            stamp = opt(travel.timestamp())
            fact.setdefault("options", {})["delta.version"] = str(version if version is not None else stamp)
    except jvm_call_failed():
        return


@reads(TARGETS, DELTA_ROW_LEVEL_COMMANDS)
def row_level_target(cmd: Any, current: Current) -> RelationFact | None:
    """The table a Delta MERGE / UPDATE / DELETE writes: its catalog table, else its target's leaf."""
    table = opt(cmd.catalogTable())
    if table is not None:
        fact = catalog_table(table, current)
        fact["format"] = fact.get("format") or "delta"
        return fact
    for leaf in seq(cmd.target().collectLeaves()):
        leaf_name = str(leaf.nodeName())
        if leaf_name in SOURCE_LEAVES:
            fact = relation(leaf, leaf_name, current)
            fact.get("options", {}).pop("delta.version", None)  # the version read, not written
            return fact
    return None
