"""MERGE on Delta Lake and Apache Iceberg captured to Kafka and consumed: the store rows of a direct capture."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")
pytest.importorskip("openlineage.client")

import lineage_listener  # noqa: E402
from lineage_listener.kafka.settings import KafkaSettings  # noqa: E402
from tests.kafka_broker import Broker  # noqa: E402
from tests.lakehouse.test_rowlevel import KINDS, MERGE, SOURCES, make_target  # noqa: E402
from tests.test_kafka import TABLES, consume, rows  # noqa: E402


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    b = Broker(tmp_path_factory.mktemp("kafka")).start()
    yield b
    b.stop()


@pytest.fixture(scope="module")
def merge_sources(spark: Any) -> None:
    for name, using in (("db.ksrc", "delta"), ("ice.db.ksrc", "iceberg")):
        spark.sql(f"CREATE TABLE IF NOT EXISTS {name} (id INT, amount DOUBLE, name STRING) USING {using}")
        spark.sql(f"INSERT INTO {name} VALUES (1, 10.0D, 'x'), (3, 3.0D, 'c'), (5, 200.0D, 'big')")


def test_merge_through_kafka_gives_the_store_rows(spark: Any, merge_sources: None, broker: Broker,
                                                  tmp_path: Path) -> None:
    settings = KafkaSettings(broker.servers, f"merge-{uuid.uuid4().hex[:6]}")
    direct = tmp_path / "direct.duckdb"
    lineage_listener.disable(spark)
    handle = lineage_listener.enable(spark, store=str(direct), kafka={"bootstrap": settings.bootstrap,
                                                                      "topic": settings.topic})
    try:
        for kind in KINDS:
            target = make_target(spark, kind)
            assert handle.flush(60)
            spark.sql(MERGE.format(t=target, s=SOURCES[kind].replace("src", "ksrc")))
            assert handle.flush(60)
    finally:
        lineage_listener.disable(spark)
    consumed = tmp_path / "consumed.duckdb"
    stats = consume(settings, consumed)
    want, got = rows(direct), rows(consumed)
    merges = [q for q in want["queries"] if q[3] in ("MergeIntoCommand", "ReplaceData", "WriteDelta")
              and q[4] and q[4].startswith("MERGE")]
    assert len(merges) == len(KINDS) and stats["dead_letters"] == 0
    for table in TABLES:
        assert got[table] == want[table], table
