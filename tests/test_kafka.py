"""Kafka between capture and the store, on a real KRaft broker: publish, consume, dead letters, outages.

Capture publishes to a topic and to a store at once; the topic consumed into a second store gives
the same rows, edge for edge. Every message is an OpenLineage RunEvent valid against the spec. The
broker also listens for SASL_SSL (SCRAM-SHA-512, a certificate of a private CA made at test time).
"""
from __future__ import annotations

import ast
import json
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

pytest.importorskip("confluent_kafka")
pytest.importorskip("openlineage.client")

import lineage_listener  # noqa: E402
from lineage_listener.cli import main as cli  # noqa: E402
from lineage_listener.kafka import messages  # noqa: E402
from lineage_listener.kafka.consume import TopicIngest  # noqa: E402
from lineage_listener.kafka.deadletter import DeadLetter  # noqa: E402
from lineage_listener.kafka.publish import KafkaWriter  # noqa: E402
from lineage_listener.kafka.settings import KafkaSettings  # noqa: E402
from lineage_listener.store.group_writer import GroupWriter  # noqa: E402
from lineage_listener.store.batch import Batch  # noqa: E402
from lineage_listener.store.rows import row_of  # noqa: E402
from lineage_listener.store.writer import StoreWriter  # noqa: E402
from tests.kafka_broker import Broker  # noqa: E402
from tests.test_openlineage import registry, validate  # noqa: E402,F401 - the spec's schemas, a fixture
from tests.test_openlineage_runs import run_events  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: Store tables compared row for row (as multisets); ``column_lineage`` is the view over the edges.
TABLES = {
    "runs": "SELECT * FROM runs",
    "queries": "SELECT * FROM queries",
    "datasets": "SELECT * FROM datasets",
    "dataset_columns": "SELECT * FROM dataset_columns",
    "column_lineage": "SELECT * FROM column_lineage",
    "edge_captures": "SELECT query_id, run_id, captured_at, captures FROM edge_captures",
    "streams": "SELECT * FROM streams",
    "capture_errors": "SELECT * FROM capture_errors",
    "query_starts": "SELECT * FROM query_starts",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    b = Broker(tmp_path_factory.mktemp("kafka"), partitions=3, secure=True).start()
    yield b
    b.stop()


def topic() -> str:
    return f"lineage-{uuid.uuid4().hex[:8]}"


def rows(store: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return {t: sorted(con.execute(sql).fetchall(), key=repr) for t, sql in TABLES.items()}


def consume(settings: KafkaSettings, store: Path, dead: Path | None = None, **kwargs: Any) -> dict:
    """Consume ``settings.topic`` into ``store`` until drained; the consumer's stats."""
    writer = GroupWriter(store)
    ingest = TopicIngest(settings, writer, group=f"g-{uuid.uuid4().hex[:6]}",
                         dead_letter=DeadLetter(dead or store.with_suffix(".dead.ndjson")), **kwargs).start()
    try:
        assert ingest.wait_idle(1.0, timeout=120), ingest.stats()
    finally:
        ingest.stop()
        writer.close()
    return ingest.stats()


def read_topic(settings: KafkaSettings) -> list[Any]:
    """Every message of the topic, read by a plain consumer of its own group."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(settings.client({"group.id": uuid.uuid4().hex, "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False}))
    try:
        meta = c.list_topics(settings.topic, timeout=10).topics[settings.topic]
        parts = [TopicPartition(settings.topic, p) for p in meta.partitions]
        ends = {tp.partition: c.get_watermark_offsets(tp, timeout=10)[1] for tp in parts}
        c.assign([TopicPartition(settings.topic, p, 0) for p in ends])
        out: list[Any] = []
        while sum(1 for m in out if True) < sum(ends.values()):
            m = c.poll(5)
            assert m is not None, f"topic ended early: {len(out)} of {sum(ends.values())}"
            if m.error() is None:
                out.append(m)
        return out
    finally:
        c.close()


def check_facet(facet: dict, registry: Any) -> None:
    """Our run facet against its published schema (docs/kafka-facet.json, itself built on RunFacet)."""
    import jsonschema
    import referencing

    schema = json.loads((ROOT / "docs" / "kafka-facet.json").read_text())
    assert facet["_schemaURL"] == schema["$id"]
    full = registry.with_resource(schema["$id"], referencing.Resource.from_contents(schema))
    jsonschema.Draft202012Validator({"$ref": schema["$id"]}, registry=full).validate(facet)


def accuracy_sql() -> list[str]:
    """The SQL text tests/test_accuracy.py runs (``lineage.run("...")``, ``spark.sql("...")``), in order."""
    tree = ast.parse((ROOT / "tests" / "test_accuracy.py").read_text())
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("run", "sql")
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.col_offset, node.args[0].value))
    return [sql for *_, sql in sorted(found)]


def test_capture_to_kafka_then_consume_gives_the_store_rows_edge_for_edge(
        spark, people, depts, broker, tmp_path, registry):  # noqa: F811 - the registry fixture
    settings = KafkaSettings(broker.servers, topic())
    direct, consumed = tmp_path / "direct.duckdb", tmp_path / "consumed.duckdb"
    statements = accuracy_sql()
    assert len(statements) >= 20
    handle = lineage_listener.enable(spark, store=str(direct), kafka={"bootstrap": settings.bootstrap,
                                                                      "topic": settings.topic})
    try:
        for sql in statements:  # one action at a time: each store batch holds one query's rows
            try:
                spark.sql(sql).collect()
            except Exception:  # noqa: BLE001 - a statement that fails is captured as failed
                pass
            assert handle.flush(60)
        src, out = tmp_path / "in", tmp_path / "out"
        src.mkdir()
        stream = (spark.readStream.schema("id INT, name STRING").json(str(src))
                  .selectExpr("id", "upper(name) AS uname").writeStream.format("parquet")
                  .option("path", str(out)).option("checkpointLocation", str(tmp_path / "ck")).start())
        try:
            for i in range(3):  # three micro-batches
                (src / f"{i}.json").write_text(json.dumps({"id": i, "name": "ann"}) + "\n")
                stream.processAllAvailable()
                assert handle.flush(60)
        finally:
            stream.stop()
        assert handle.flush(60)
    finally:
        lineage_listener.disable(spark)
    stats = consume(settings, consumed)
    sent = read_topic(settings)
    assert stats["messages"] == len(sent) and stats["dead_letters"] == 0 and stats["skipped"] == 0
    want, got = rows(direct), rows(consumed)
    assert len(want["column_lineage"]) > 80 and len(want["streams"]) == 1 and want["streams"][0][-1] == 3
    for table in TABLES:
        assert got[table] == want[table], table
    by_key: dict[bytes, set[int]] = {}
    for m in sent:
        event = json.loads(m.value())
        ours = event["run"]["facets"].pop("lineage_listener")
        validate(event, registry)  # the standard part, for any OpenLineage consumer
        check_facet(ours, registry)
        assert ours["runId"] == m.key().decode()
        by_key.setdefault(m.key(), set()).add(m.partition())
        if ours.get("action") == "stream":
            assert event["eventType"] == "RUNNING"
    assert all(len(p) == 1 for p in by_key.values())  # one application's events on one partition


def test_other_producers_events_are_ingested_as_the_http_endpoint_does(broker, tmp_path):
    from confluent_kafka import Producer

    settings = KafkaSettings(broker.servers, topic())
    events = [ev for n in range(4) for ev in run_events(str(uuid.uuid5(uuid.NAMESPACE_URL, f"run-{n}"))).values()]
    producer = Producer({"bootstrap.servers": settings.bootstrap})
    for ev in events:
        producer.produce(settings.topic, json.dumps(ev).encode(), key=ev["run"]["runId"].encode())
    assert producer.flush(30) == 0
    from lineage_listener.openlineage.ingest import to_batch

    one_by_one = tmp_path / "http.duckdb"
    for ev in events:  # what POST /api/v1/lineage writes, one event per request
        assert StoreWriter(one_by_one).write(to_batch([ev])[0])
    stats = consume(settings, tmp_path / "consumed.duckdb")
    assert stats["foreign_events"] == len(events) == 12
    assert rows(tmp_path / "consumed.duckdb") == rows(one_by_one)


def batch_of(n: int, run: str = "app-1") -> Batch:
    """One query's rows as capture makes them (a run, a query, its datasets, columns and edges)."""
    b, at = Batch(), f"2026-03-01 10:00:{n % 60:02d}"
    b.add(row_of("runs", (run, run, "job", "4.0", None, None, "2026-03-01 10:00:00", None)))
    b.add(row_of("queries", (f"{run}:{n}:q", run, "save", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None,
                      12, at, f"file:/out/{n % 5}")))
    for ds in (f"file:/out/{n % 5}", f"file:/in/{n % 3}"):
        b.add(row_of("datasets", (ds, "path", "parquet", ds, None, at, at)))
        for c in ("id", "name"):
            b.add(row_of("dataset_columns", (ds, c, "string", True, at, at, 1 if c == "id" else 2)))
    for c in ("id", "name"):
        b.add(row_of("column_lineage", (f"{run}:{n}:q", run, f"file:/out/{n % 5}", c, f"file:/in/{n % 3}", c, "identity",
                                 "direct", c, False, at)))
    b.add(row_of("capture_errors", (at, run, f"{run}:{n}:q", "plan", f"note {n}")))  # appended rows: a double shows
    return b


def test_a_message_that_can_never_be_written_goes_to_the_dead_letter(broker, tmp_path, caplog):
    from confluent_kafka import Producer

    settings = KafkaSettings(broker.servers, topic())
    writer = KafkaWriter(settings)
    assert writer.write(batch_of(1))
    producer = Producer({"bootstrap.servers": settings.bootstrap})
    producer.produce(settings.topic, b"not json", key=b"app-1")
    producer.produce(settings.topic, json.dumps({"eventType": "COMPLETE"}).encode(), key=b"app-1")
    bad = batch_of(2)
    bad.rows["queries"][0] = bad.rows["queries"][0][:7] + ("twelve",) + bad.rows["queries"][0][8:]  # no BIGINT
    bad_value = messages.encode(bad)[0][1]
    producer.produce(settings.topic, bad_value, key=b"app-1")
    assert producer.flush(30) == 0
    assert writer.write(batch_of(3))
    dead = tmp_path / "dead.ndjson"
    with caplog.at_level(logging.ERROR, logger="lineage_listener.kafka.deadletter"):
        stats = consume(settings, tmp_path / "s.duckdb", dead)
    kept = [json.loads(line) for line in dead.read_text().splitlines()]
    assert [k["offset"] for k in kept] == [1, 2, 3] and stats["dead_letters"] == 3
    assert "refused" in kept[2]["reason"] and kept[0]["value"] == "not json"
    assert len([r for r in caplog.records if "can never be written" in r.getMessage()]) == 3
    with duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True) as con:
        assert {r[0] for r in con.execute("SELECT query_id FROM queries").fetchall()} == {"app-1:1:q", "app-1:3:q"}
    assert stats["partitions"] and all(p["lag"] == 0 for p in stats["partitions"])


def test_a_broker_that_is_down_spools_then_replays_in_order(broker, tmp_path, caplog, capsys):
    settings = KafkaSettings(broker.servers, topic())
    writer = KafkaWriter(settings, lock_timeout=2.0)
    assert writer.write(batch_of(0))
    broker.stop()
    try:
        with caplog.at_level(logging.WARNING, logger="lineage_listener.kafka.publish"):
            assert not writer.write(batch_of(1))
            assert not writer.write(batch_of(2))  # behind the first, in order
        assert len(writer.spooled()) == 2 and writer.counts.spooled == 2
        assert len([r for r in caplog.records if "not reachable" in r.getMessage()]) == 1
        cli(["doctor", "--store", str(tmp_path / "s.duckdb"), "--check"])
        assert f"2 batches ({2 * len(batch_of(1))} rows) captured here wait for Kafka topic {settings.topic}" \
            in capsys.readouterr().out
    finally:
        broker.start()
    assert writer.write(batch_of(3), wait=30)
    assert writer.spooled() == [] and writer.counts.replayed == 2
    assert writer.write(Batch(), wait=30)  # the outage's record goes with the next write
    stats = consume(settings, tmp_path / "s.duckdb")
    with duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True) as con:
        queries = [r[0] for r in con.execute("SELECT query_id FROM queries ORDER BY query_id").fetchall()]
        outage = con.execute("SELECT run_id, error FROM capture_errors WHERE stage = 'kafka'").fetchall()
        notes = con.execute("SELECT count(*) FROM capture_errors WHERE stage = 'plan'").fetchone()[0]
    assert queries == [f"app-1:{n}:q" for n in range(4)] and notes == 4  # nothing lost, nothing twice
    assert len(outage) == 1 and outage[0][0] == "app-1" and "2 batches spooled" in outage[0][1]
    assert stats["messages"] == 5
    cli(["doctor", "--store", str(tmp_path / "s.duckdb"), "--kafka-bootstrap", settings.bootstrap,
         "--kafka-topic", settings.topic, "--kafka-group", stats["group"]])
    report = capsys.readouterr().out
    assert f"wait for Kafka topic {settings.topic}" not in report  # nothing waits here now
    lines = [line for line in report.splitlines() if f"Kafka {settings.topic}[" in line]
    assert len(lines) == 3 and all("lag 0" in line for line in lines)
    assert sum(int(line.split("committed ")[1].split(",")[0].replace("None", "0")) for line in lines) == 5


def test_sasl_ssl_with_scram_through_the_conf_pass_through(spark, people, broker, tmp_path, caplog):
    """Capture publishes over SASL_SSL with only ``spark.lineage.kafka.conf.*`` keys (SCRAM-SHA-512, the
    broker's certificate checked against a private CA), masked SQL text and all; a consumer with the
    same settings reads it into a store. A wrong CA or password fails closed: one line, batch spooled."""
    name = topic()
    keys = {"spark.lineage.kafka.bootstrap": broker.secure_servers, "spark.lineage.kafka.topic": name,
            "spark.lineage.sqlText": "masked",
            **{f"spark.lineage.kafka.conf.{k}": v for k, v in broker.client_conf().items()}}
    for key, value in keys.items():
        spark.conf.set(key, value)
    try:
        handle = lineage_listener.enable(spark)  # the session's conf only: no store, the topic alone
        try:
            spark.sql("SELECT name FROM people WHERE email = 'kafka-secret@example.com'").collect()
            assert handle.flush(60)
        finally:
            lineage_listener.disable(spark)
    finally:
        for key in keys:
            spark.conf.unset(key)
    settings = KafkaSettings(broker.secure_servers, name, broker.client_conf())
    sent = read_topic(settings)
    assert sent and not any(b"kafka-secret" in m.value() for m in sent)
    stats = consume(settings, tmp_path / "s.duckdb")
    assert stats["messages"] == len(sent) and stats["dead_letters"] == 0
    with duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True) as con:
        assert con.execute("SELECT sql_text FROM queries").fetchall() == [
            ("SELECT name FROM people WHERE email = ?",)]

    caplog.set_level(logging.WARNING, logger="lineage_listener")
    for conf, why in ((broker.client_conf(ca=broker.certs.other), "SSL handshake failed"),
                      (broker.client_conf(password="not-the-password"), "SASL authentication error")):
        caplog.clear()
        writer = KafkaWriter(KafkaSettings(broker.secure_servers, topic(), conf), lock_timeout=3.0)
        assert writer.write(batch_of(1)) is False and writer.write(batch_of(2)) is False
        lines = [r.getMessage() for r in caplog.records if r.name.startswith("lineage_listener")]
        assert len(lines) == 1 and why in lines[0] and "spooled" in lines[0], lines
        assert "not-the-password" not in caplog.text and len(writer.spooled()) == 2
        for f in writer.spooled():  # not sent anywhere: the next writer of this topic would send them
            f.unlink()


class NeverCommits(TopicIngest):
    """A consumer that dies after each store commit and before the Kafka commit that would follow."""

    def _commit(self, consumer: Any, partitions: list[int] | None = None) -> None:
        return None


def test_a_query_too_large_for_the_topic_is_kept_aside_and_the_rest_goes_on(broker, tmp_path, caplog):
    import base64
    import os

    settings = KafkaSettings(broker.servers, topic())
    writer = KafkaWriter(settings)
    huge = batch_of(1)
    edge = huge.rows["column_lineage"][0]  # an expression the topic cannot hold (1 MiB, incompressible)
    huge.rows["column_lineage"][0] = edge[:8] + (base64.b64encode(os.urandom(1_500_000)).decode(),) + edge[9:]
    with caplog.at_level(logging.ERROR, logger="lineage_listener.kafka.publish"):
        assert not writer.write(huge)
        assert writer.write(batch_of(2))  # nothing waits behind it
    bad = [f for d in writer.path.parent.iterdir() if d.is_dir() for f in d.glob("*.bad")]
    assert len(bad) == 1 and writer.spooled() == [] and writer.counts.refused == 1
    assert len([r for r in caplog.records if "refused captured lineage" in r.getMessage()]) == 1
    stats = consume(settings, tmp_path / "s.duckdb")
    assert stats["messages"] == 1


def test_a_consumer_killed_after_the_store_commit_writes_nothing_twice(broker, tmp_path):
    """The store records the offsets it holds in the same transaction: messages that come again because
    Kafka never got the commit are skipped, so even appended rows (capture_errors) are not doubled."""
    settings = KafkaSettings(broker.servers, topic())
    writer = KafkaWriter(settings)
    for n in range(20):
        assert writer.write(batch_of(n, run=f"app-{n % 3}"))
    store = tmp_path / "s.duckdb"
    group_writer = GroupWriter(store)
    ingest = NeverCommits(settings, group_writer, group="g-kill", dead_letter=DeadLetter(tmp_path / "d")).start()
    try:
        deadline = time.monotonic() + 60
        while ingest.stats()["messages"] < 20 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        ingest.stop()
        group_writer.close()
    assert ingest.stats()["messages"] == 20
    again = TopicIngest(settings, GroupWriter(store), group="g-kill", dead_letter=DeadLetter(tmp_path / "d"))
    again.start()
    try:
        assert again.wait_idle(1.0, timeout=60)
    finally:
        again.stop()
        again.writer.close()
    assert again.stats()["skipped"] == 20 and again.stats()["messages"] == 0
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM capture_errors").fetchone()[0] == 20
        assert con.execute("SELECT count(*) FROM queries").fetchone()[0] == 20


def test_the_consumer_reads_lag_from_its_fetches_not_from_the_broker(broker, tmp_path, monkeypatch):
    """Asking the broker for a high watermark waits behind the consumer's own fetch on the same
    connection, on the thread that takes messages: once a partition was fetched, its lag comes
    from the fetch, and it is still right."""
    from confluent_kafka import Consumer, TopicPartition

    from lineage_listener.kafka import consume as consuming

    asked: list[tuple[int, bool]] = []

    class Recording(Consumer):
        def get_watermark_offsets(self, partition: Any, *args: Any, cached: bool = False, **kwargs: Any) -> Any:
            asked.append((partition.partition, cached))
            return super().get_watermark_offsets(partition, *args, cached=cached, **kwargs)

    monkeypatch.setattr(consuming, "client_class", lambda name: Recording)
    monkeypatch.setattr(consuming, "LAG_EVERY", 0.05)
    settings = KafkaSettings(broker.servers, topic())
    writer = KafkaWriter(settings)
    for n in range(12):
        assert writer.write(batch_of(n, run=f"app-{n % 4}"))
    writer.close()
    group_writer = GroupWriter(tmp_path / "s.duckdb")
    ingest = TopicIngest(settings, group_writer, group=f"g-{uuid.uuid4().hex[:6]}",
                         dead_letter=DeadLetter(tmp_path / "d")).start()
    try:
        assert ingest.wait_idle(0.5, timeout=120), ingest.stats()
        wait_until(lambda: len(asked) >= 30)  # ten reads of three partitions at least
        stats = ingest.stats()
    finally:
        ingest.stop()
        group_writer.close()
    from_broker = [p for p, cached in asked if not cached]
    assert len(from_broker) == len(set(from_broker)) <= 3  # each partition at most once: before its first fetch
    check = Consumer(settings.client({"group.id": uuid.uuid4().hex}))
    try:
        real = {p["partition"]: check.get_watermark_offsets(TopicPartition(settings.topic, p["partition"]),
                                                            timeout=10)[1] for p in stats["partitions"]}
    finally:
        check.close()
    assert len(real) == 3 and sum(real.values()) == 12
    assert {p["partition"]: p["high_watermark"] for p in stats["partitions"]} == real
    assert stats["lag"] == 0 and stats["messages"] == 12


def health(server: Any) -> dict:
    import urllib.request

    with urllib.request.urlopen(f"{server.url}/api/health", timeout=10) as r:
        return json.loads(r.read())["kafka"]


def committed(stats: dict) -> int:
    """Messages the consumer group has committed, over every partition."""
    return sum(p["committed"] or 0 for p in stats["partitions"])


def wait_until(what: Any, timeout: float = 120.0) -> Any:
    """Poll a separate process's state (bounded); the value once truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = what()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_two_servers_one_store_the_standby_takes_over_from_a_killed_one(broker, tmp_path):
    import signal
    import threading

    from tests.server_helpers import Server

    settings = KafkaSettings(broker.servers, topic())
    store = tmp_path / "lineage.duckdb"
    args = ["--kafka-bootstrap", settings.bootstrap, "--kafka-topic", settings.topic, "--kafka-group", "servers"]
    first = Server(store, extra_args=args, output=tmp_path / "first.log").start()
    servers = [first]
    try:
        wait_until(lambda: health(first)["state"] == "active")
        second = Server(store, extra_args=args, output=tmp_path / "second.log").start()
        servers.append(second)
        wait_until(lambda: health(second)["state"] == "standby")
        total, produced = 300, threading.Event()

        def produce(numbers: range, done: threading.Event | None = None) -> None:
            writer = KafkaWriter(settings)
            for n in numbers:
                assert writer.write(batch_of(n, run=f"app-{n % 4}"))
            if done is not None:
                done.set()
        # Half before the kill, half after it: however fast the first server consumed its half, the
        # standby has messages of its own to take over, and the kill can land in the middle of a batch.
        threading.Thread(target=produce, args=(range(total // 2),), daemon=True).start()
        wait_until(lambda: health(first)["messages"] >= 30)
        first.proc.send_signal(signal.SIGKILL)  # its last batch may be written, not committed
        first.proc.wait(30)
        wait_until(lambda: health(second)["state"] == "active")
        threading.Thread(target=produce, args=(range(total // 2, total), produced), daemon=True).start()
        wait_until(lambda: health(second)["messages"] > 0)
        first = servers[0] = Server(store, extra_args=args, output=tmp_path / "again.log").start()
        wait_until(lambda: health(first)["state"] == "standby")  # restarted: now the standby
        assert produced.wait(120)
        wait_until(lambda: committed(health(second)) == total)  # one message per batch
        second.stop()  # SIGTERM: a clean stop hands over, the restarted one continues
        wait_until(lambda: health(first)["state"] == "active")
        wait_until(lambda: committed(health(first)) == total and health(first)["lag"] == 0)
    finally:
        for s in servers:
            s.stop()
    with duckdb.connect(str(store), read_only=True) as con:
        queries = con.execute("SELECT count(*), count(DISTINCT query_id) FROM queries").fetchone()
        notes = con.execute("SELECT count(*), count(DISTINCT error) FROM capture_errors").fetchone()
        captures = con.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM edge_captures GROUP BY query_id)"
                               ).fetchone()[0]
        held = con.execute("SELECT sum(next_offset) FROM kafka_offsets WHERE topic = ?", [settings.topic]).fetchone()
    assert queries == (total, total) and notes == (total, total) and captures == 1  # none lost, none twice
    assert held[0] == total  # every message of the topic is in the store's record


def zero_code_conf(settings: KafkaSettings) -> list[str]:
    """What a user puts on spark-submit: ``$(lineage-listener spark-conf --kafka-bootstrap B --kafka-topic T)``."""
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "lineage_listener", "spark-conf", "--kafka-bootstrap",
                           settings.bootstrap, "--kafka-topic", settings.topic], cwd=ROOT, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True).stdout.split()


def replay_file(path: Path, prefix: str, runs: int) -> tuple[Path, list[str]]:
    """An NDJSON file of another producer's events (START, RUNNING, COMPLETE of ``runs`` runs); its run ids."""
    ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"{prefix}-{n}")) for n in range(runs)]
    path.write_text("".join(json.dumps(ev) + "\n" for r in ids for ev in run_events(r).values()))
    return path, ids


def serve_topic(store: Path, settings: KafkaSettings, log: Path) -> Any:
    """A started ``lineage-listener serve`` consuming ``settings``' topic into ``store``."""
    from tests.server_helpers import Server

    return Server(store, extra_args=["--kafka-bootstrap", settings.bootstrap, "--kafka-topic", settings.topic],
                  output=log).start()


def test_two_zero_code_spark_applications_and_a_replay_of_events_at_once(broker, tmp_path):
    """``spark-submit $(lineage-listener spark-conf --kafka-...)``: two unmodified jobs publish through the
    bridge's worker while OpenLineage events from a file are replayed to the same topic; one server
    consumes them all."""
    import threading

    from confluent_kafka import Producer

    from tests.test_bridge_jobs import finish, pyspark_edges, pyspark_job, submit

    settings = KafkaSettings(broker.servers, topic())
    conf = zero_code_conf(settings)
    assert f"spark.lineage.kafka.topic={settings.topic}" in conf and not any("lineage.store" in a for a in conf)
    events_file, runs = replay_file(tmp_path / "airflow.ndjson", "replay", 10)
    store = tmp_path / "lineage.duckdb"
    server = serve_topic(store, settings, tmp_path / "server.log")
    try:
        jobs = []
        for app in ("orders_a", "orders_b"):
            (tmp_path / app).mkdir()
            jobs.append(submit([*conf, *pyspark_job(tmp_path / app, app, [tmp_path / app / "out"])], tmp_path / app))

        def replay() -> None:  # another producer on the same topic, meanwhile
            producer = Producer({"bootstrap.servers": settings.bootstrap})
            for line in events_file.read_text().splitlines():
                producer.produce(settings.topic, line.encode(), key=json.loads(line)["run"]["runId"].encode())
            assert producer.flush(30) == 0
        replaying = threading.Thread(target=replay)
        replaying.start()
        for job in jobs:
            code, _out, err = finish(job)
            assert code == 0, err[-3000:]
        replaying.join(60)
        total = len(read_topic(settings))
        wait_until(lambda: committed(health(server)) == total)
        stats = health(server)
    finally:
        server.stop()
    assert stats["messages"] == total and stats["dead_letters"] == 0 and stats["foreign_events"] == 30
    with duckdb.connect(str(store), read_only=True) as con:
        for app in ("orders_a", "orders_b"):
            got = set(con.execute("SELECT target_column, source_dataset, source_column, transform, kind FROM "
                                  "column_lineage WHERE target_dataset = ?", [f"file:{tmp_path / app / 'out'}"]
                                  ).fetchall())
            assert got == pyspark_edges(tmp_path / app / "orders.csv"), app
        ended = dict(con.execute("SELECT app_name, ended_at FROM runs WHERE app_name LIKE 'orders_%'").fetchall())
        replayed = con.execute("SELECT count(*) FROM queries WHERE query_id LIKE 'openlineage:%' AND status = "
                               "'succeeded'").fetchone()[0]
        doubled = con.execute("SELECT count(*) FROM (SELECT query_id FROM edge_captures WHERE query_id NOT LIKE "
                              "'openlineage:%' GROUP BY query_id HAVING count(*) > 1)").fetchone()[0]
    assert set(ended) == {"orders_a", "orders_b"} and all(ended.values())  # each run's end came through too
    assert replayed == len(runs) and doubled == 0


def test_the_ui_header_shows_the_consumers_state_and_lag(broker, tmp_path):
    """The health panel (static/kafka.js) in headless Chromium: state, lag and rate from /api/health."""
    playwright = pytest.importorskip("playwright.sync_api")
    from tests.server_helpers import Server
    from tests.test_ui import CHROMIUM

    settings = KafkaSettings(broker.servers, topic())
    assert KafkaWriter(settings).write(batch_of(1))
    server = Server(tmp_path / "s.duckdb", extra_args=["--kafka-bootstrap", settings.bootstrap, "--kafka-topic",
                                                       settings.topic], output=tmp_path / "server.log").start()
    try:
        wait_until(lambda: committed(health(server)) == 1 and health(server)["lag"] == 0)
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page()
                page.goto(server.url)
                panel = page.locator("#kafka-health")
                panel.wait_for(state="visible")
                assert panel.text_content().startswith("kafka: active, lag 0, ")
                assert f"topic {settings.topic}" in panel.get_attribute("title")
                assert "committed 1, lag 0" in panel.get_attribute("title")
            finally:
                browser.close()
    finally:
        server.stop()


def test_messages_merged_write_what_they_write_one_by_one_whatever_their_layout(tmp_path):
    """No broker: the consumer's decoding and merging. Our messages begin with their rows (parsed alone);
    the same events laid out otherwise (an older version, another JSON writer) decode to the same rows;
    and messages merged into one batch, the rows they repeat left out, write what they write one by one."""
    from lineage_listener.kafka.chunk import Chunk
    from lineage_listener.store.connection import open_writable
    from lineage_listener.store.upsert import commit_batch

    sent = [batch_of(n, run=f"app-{n % 2}") for n in range(40)]
    ended = Batch()  # app-0 ends in the middle: its later rows (no end) must not clear the end
    ended.add(row_of("runs", ("app-0", "app-0", "job", "4.0", None, None, "2026-03-01 10:00:00",
                              "2026-03-01 11:00:00")))
    sent.insert(20, ended)
    values = [value for b in sent for _key, value, _part in messages.encode(b)]
    assert all(v.startswith(messages.ROWS_FIRST.encode()) for v in values)

    def other_layout(value: bytes) -> bytes:
        event = json.loads(value)
        run = event.pop("run")
        facets = run.pop("facets")
        ours = facets.pop("lineage_listener")
        rows_of = ours.pop("rows")
        return json.dumps({**event, "run": {**run, "facets": {**facets, "lineage_listener": {**ours, "rows": rows_of}}}},
                          indent=1).encode()
    decoded = [messages.decode(v) for v in values]
    assert all(d.ours and d.events == 1 for d in decoded)
    assert [messages.decode(other_layout(v)).batch.rows for v in values] == [d.batch.rows for d in decoded]
    chunk = Chunk(20_000)
    assert all(chunk.take(d.batch) for d in decoded)
    # of 41 runs rows: app-0 and app-1 once each, app-0's end, then app-0 again (no end: merged, the end stays)
    assert [(r[0], r[7] is not None) for r in chunk.batch.rows["runs"]] == [
        ("app-0", False), ("app-1", False), ("app-0", True), ("app-0", False)]
    merged, one_by_one = tmp_path / "merged.duckdb", tmp_path / "one.duckdb"
    con = open_writable(merged)
    commit_batch(con, chunk.batch)
    con.close()
    con = open_writable(one_by_one)
    for d in decoded:
        commit_batch(con, d.batch)
    con.close()
    want, got = rows(one_by_one), rows(merged)
    assert len(want["queries"]) == 40 and want["runs"][0][7] is not None  # app-0's end stayed
    for table in TABLES:
        assert got[table] == want[table], table


def test_the_writer_keeps_the_store_open_while_a_topic_flows(tmp_path):
    import queue

    from lineage_listener.store.group_writer import Settings

    writer = GroupWriter(tmp_path / "s.duckdb", Settings(hold=3600))
    answers: queue.SimpleQueue = queue.SimpleQueue()
    try:
        writer.submit(batch_of(1), answers.put)
        assert answers.get(timeout=120)[0] == 200 and not writer.stats()["open"]  # let go before the answer
        writer.submit(batch_of(2), answers.put, keep_open=3600)
        assert answers.get(timeout=120)[0] == 200 and writer.stats()["open"]
        with writer.reading() as con:  # a cursor of the open store
            assert con.execute("SELECT count(*) FROM queries").fetchone()[0] == 2
        writer.submit(batch_of(3), answers.put, keep_open=3600)
        assert answers.get(timeout=120)[0] == 200
        assert writer.stats()["opened"] == 2  # the first batch's, then one for the flow
    finally:
        writer.close()
    assert not writer.stats()["open"]
    assert len(rows(tmp_path / "s.duckdb")["queries"]) == 3
