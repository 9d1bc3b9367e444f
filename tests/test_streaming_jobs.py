"""Zero-code streaming: one unmodified PySpark streaming job under spark-submit with
``$(lineage-listener spark-conf --store ...)``: a file stream with files arriving, and, where
the Kafka jar sets are fetched, a real KRaft broker on 127.0.0.1 read and written by
``spark-sql-kafka`` (a batch write, a stream topic -> topic with ``from_json``, a batch read)."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

import duckdb
import pyspark
import pytest

from tests.jars import jar_paths
from tests.kafka_broker import kafka_broker
from tests.test_bridge_jobs import capture_args, run_job

#: Maven Central's spark-sql-kafka per PySpark line (there is no 4.3.0: 4.2.0 runs on 4.3).
KAFKA_SET = "spark-kafka-3.5" if pyspark.__version__.startswith("3.") else "spark-kafka-4.2"

JOB = '''
import json, sys
from pathlib import Path
from pyspark.sql import SparkSession

cfg = json.loads(sys.argv[1])
spark = SparkSession.builder.appName("streaming-job").getOrCreate()
src = Path(cfg["src"])

def arrive(name, rows):
    tmp = src.parent / (name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\\n" for r in rows))
    tmp.rename(src / name)

arrive("0.json", [{"id": 1, "name": "ann", "amount": 5}])
q = (spark.readStream.schema("id INT, name STRING, amount INT").json(str(src))
     .selectExpr("id", "upper(name) AS who").writeStream.format("parquet").option("path", cfg["out"])
     .option("checkpointLocation", cfg["ck"]).start())
q.processAllAvailable()
arrive("1.json", [{"id": 2, "name": "bob", "amount": 7}])
q.processAllAvailable()
q.stop()

servers = cfg.get("kafka")
if servers:
    (spark.createDataFrame([(1, "ann", 5)], "id INT, name STRING, amount INT")
     .selectExpr("CAST(id AS STRING) AS key", "to_json(struct(*)) AS value")
     .write.format("kafka").option("kafka.bootstrap.servers", servers).option("topic", "orders").save())
    k = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", "orders")
         .option("startingOffsets", "earliest").load()
         .selectExpr("key", "from_json(CAST(value AS STRING), 'id INT, name STRING, amount INT') AS o")
         .selectExpr("key", "to_json(struct(o.name AS name, o.amount * 2 AS doubled)) AS value")
         .writeStream.format("kafka").option("kafka.bootstrap.servers", servers).option("topic", "enriched")
         .option("checkpointLocation", cfg["ck"] + "-kafka").start())
    k.processAllAvailable()
    k.stop()
    (spark.read.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", "enriched").load()
     .selectExpr("CAST(value AS STRING) AS payload").write.parquet(cfg["hop"]))
spark.stop()
'''


def with_jars(args: list[str], jars: list[Path]) -> list[str]:
    """``args`` with ``jars`` added to its one ``--jars`` list."""
    out = list(args)
    i = out.index("--jars")
    out[i + 1] = ",".join([out[i + 1], *map(str, jars)])
    return out


def test_zero_code_streaming_job(tmp_path: Path) -> None:
    store, src = tmp_path / "lineage.duckdb", tmp_path / "in"
    src.mkdir()
    (tmp_path / "job.py").write_text(JOB)
    cfg = {"src": str(src), "out": str(tmp_path / "out"), "ck": str(tmp_path / "ck"), "hop": str(tmp_path / "hop")}
    kafka_jars = jar_paths(KAFKA_SET)
    broker = kafka_broker(tmp_path) if kafka_jars and jar_paths("kafka-broker") else None
    args = capture_args(store)
    with broker if broker is not None else contextlib.nullcontext() as servers:
        if servers:
            cfg["kafka"] = servers
            args = with_jars(args, kafka_jars)
        code, out, err = run_job([*args, str(tmp_path / "job.py"), json.dumps(cfg)], tmp_path)
    assert code == 0, err[-3000:]
    s_in, s_out = f"file:{src}", f"file:{tmp_path / 'out'}"
    with duckdb.connect(str(store), read_only=True) as con:
        edges = set(con.execute("SELECT target_dataset, target_column, source_dataset, source_column, transform "
                                "FROM column_lineage").fetchall())
        streams = con.execute("SELECT target_dataset, first_batch_id, last_batch_id, batch_count FROM streams "
                              "ORDER BY target_dataset").fetchall()
    assert {(s_out, "id", s_in, "id", "identity"), (s_out, "who", s_in, "name", "derived")} <= edges
    assert (s_out, 0, 1, 2) in streams
    if not servers:
        pytest.skip(f"file stream checked; Kafka part needs `make jars` (sets kafka-broker, {KAFKA_SET})")
    orders, enriched = f"kafka://{servers}/orders", f"kafka://{servers}/enriched"
    assert (enriched, 0, 0, 1) in streams
    assert {(orders, "value", None, "id", "derived")} <= {(t, c, None, sc, tr) for t, c, s, sc, tr in edges
                                                           if t == orders and s.startswith("local:")}
    assert {(enriched, "key", orders, "key", "identity"), (enriched, "value", orders, "value", "derived")} \
        <= edges
    assert (f"file:{tmp_path / 'hop'}", "payload", enriched, "value", "derived") in edges


FOREACH_BATCH_JOB = '''
import json, sys
from pathlib import Path
from pyspark.sql import SparkSession

cfg = json.loads(sys.argv[1])
sys.path.insert(0, cfg["root"])
from tests.bus_gates import QueryGate, StreamGate

spark = SparkSession.builder.appName("foreach-batch-job").getOrCreate()
queries, streams = QueryGate().register(spark), StreamGate()
spark.streams.addListener(streams)
spark.range(1).collect()  # the shared queue (query ends) is held from here
assert queries.entered.wait(60)
held = (spark.readStream.schema("id INT, name STRING").json(cfg["other"]).writeStream.format("memory")
        .queryName("held_progress").option("checkpointLocation", cfg["ck"] + "0").start())
held.processAllAvailable()  # its progress holds the streams queue from here
assert streams.entered.wait(60)
held.stop()

def each(df, batch_id):
    df.persist()
    df.selectExpr("id", "concat(n, '!') AS shout").write.mode("append").parquet(cfg["fb"])
    df.unpersist()

q = (spark.readStream.schema("id INT, name STRING").json(cfg["src"]).selectExpr("id", "upper(name) AS n")
     .writeStream.foreachBatch(each).option("checkpointLocation", cfg["ck"]).start())
q.processAllAvailable()
q.stop()  # the stream's write reaches the capture after this, its progress later still
queries.open()
spark.range(1).count()
assert queries.saw("count").wait(60)
streams.opened.set()
spark.stop()
'''


def test_zero_code_foreach_batch_writes_have_the_streams_sources(tmp_path: Path) -> None:
    """Under the bridge, a foreachBatch write reaches the worker after its stream stopped and before
    the stream's progress (gates in the job hold Spark's bus): it still has the stream's sources."""
    store, src, other = tmp_path / "lineage.duckdb", tmp_path / "in", tmp_path / "other"
    for folder in (src, other):
        folder.mkdir()
        (folder / "0.json").write_text(json.dumps({"id": 1, "name": "ann"}) + "\n")
    (tmp_path / "job.py").write_text(FOREACH_BATCH_JOB)
    cfg = {"root": str(Path(__file__).resolve().parents[1]), "src": str(src), "other": str(other),
           "fb": str(tmp_path / "fb"), "ck": str(tmp_path / "ck")}
    code, out, err = run_job([*capture_args(store), str(tmp_path / "job.py"), json.dumps(cfg)], tmp_path)
    assert code == 0, err[-3000:]
    with duckdb.connect(str(store), read_only=True) as con:
        edges = set(con.execute("SELECT target_column, source_dataset, source_column, transform FROM column_lineage "
                                "WHERE target_dataset = ?", [f"file:{tmp_path / 'fb'}"]).fetchall())
    assert edges == {("id", f"file:{src}", "id", "identity"), ("shout", f"file:{src}", "name", "derived")}
