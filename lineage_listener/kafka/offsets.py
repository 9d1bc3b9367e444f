"""Which Kafka messages a store already holds: ``kafka_offsets``, written in the same transaction as their rows.

The consumer commits its offsets to Kafka only after the store has committed; should it die in
between, the messages come again and the store's own record says to skip them. A standby that keeps
its own copy of the store resumes from here too, whatever its consumer group has committed.

    CREATE TABLE kafka_offsets (topic TEXT, partition INTEGER, next_offset BIGINT, updated_at TIMESTAMP,
                                PRIMARY KEY (topic, partition))
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import duckdb

log = logging.getLogger(__name__)

TABLE = """-- Which Kafka messages the store holds, written in the same transaction as their rows; created by
-- the first Kafka consumer of the store (docs/kafka.md), which skips messages below next_offset.
CREATE TABLE IF NOT EXISTS kafka_offsets (
    topic       TEXT,
    partition   INTEGER,
    next_offset BIGINT,      -- the first offset of this partition not in the store yet; never lowered
    updated_at  TIMESTAMP,
    PRIMARY KEY (topic, partition))"""


def recorder(topic: str, next_offsets: Mapping[int, int]) -> Callable[[Any], None]:
    """``also(con)`` for the store writer: record ``next_offsets`` (partition -> next offset), never lower."""
    partitions, offsets = list(next_offsets), [next_offsets[p] for p in next_offsets]

    def record(con: Any) -> None:
        con.execute(TABLE)
        con.execute("""INSERT INTO kafka_offsets SELECT ?, unnest(?), unnest(?), current_timestamp::TIMESTAMP
                       ON CONFLICT (topic, partition) DO UPDATE SET
                         next_offset = greatest(kafka_offsets.next_offset, excluded.next_offset),
                         updated_at = excluded.updated_at""", [topic, partitions, offsets])
    return record


def read(con: duckdb.DuckDBPyConnection, topic: str) -> dict[int, int]:
    """partition -> the first offset the store does not hold ({} for a store that never had Kafka)."""
    try:
        return dict(con.execute("SELECT partition, next_offset FROM kafka_offsets WHERE topic = ?",
                                [topic]).fetchall())
    except duckdb.CatalogException:
        return {}
