"""Apache Iceberg: the snapshot a DataSource V2 read of an Iceberg table is pinned to (its
tables are otherwise read as any DataSource V2 table, :mod:`.dsv2`)."""
from __future__ import annotations

from typing import Any

from lineage_listener.capture.jvm import jvm_call_failed
from lineage_listener.capture.reading.readers.registry import VERSIONS, reads
from lineage_listener.lineage.datasets import RelationFact


@reads(VERSIONS, "iceberg")
def snapshot(table: Any, fact: RelationFact) -> None:
    """The snapshot id a read of an Iceberg ``SparkTable`` is pinned to (time travel), if any."""
    try:
        snapshot_id = table.snapshotId()
    except jvm_call_failed():
        return
    if snapshot_id is not None:
        fact.setdefault("options", {})["iceberg.snapshot-id"] = str(snapshot_id)
