"""Kafka between capture and the lineage servers, measured on a real single-node KRaft broker.

    python bench/kafka_bench.py [--hour-events 36000] [--latency-actions 40] [--cost-actions 60] [--before CHECKOUT]

Scenarios (each reports counts exactly: events produced = events stored, 0 duplicated):

1. two zero-code Spark applications and a replay of OpenLineage events from a file, producing at once;
2. a server SIGKILLed in the middle with a standby beside it (take-over time), then restarted;
3. the broker restarted in the middle of production (the producers spool, then replay);
4. a consumer started after one hour's worth of events piled up: catch-up rate in events/s and edge rows/s;
5. end-to-end latency from a Spark write returning to its lineage answering on the server's REST API (after
   one write that starts capture, not timed);
6. the producer's cost in the job: wall time and driver CPU of the same actions with Kafka capture / without
   capture (and, for reference, with capture to a store file); and the CPU of making one message.

"One hour's worth": ``--hour-events`` events (default 36,000: ten per second, e.g. thirty clusters each
running twenty jobs an hour of sixty actions), made from real captured queries (the SQL of
tests/test_accuracy.py and a few writes) under new application ids, plus one OpenLineage run in ten
from another producer (START, RUNNING, COMPLETE). The consumed store is compared, table by table,
with the same messages written one at a time through ``write_batch`` (``--no-check``: not).

``--before CHECKOUT``: scenarios 4 and 5 also run with another checkout's package (its ``consume``,
its capture and its ``serve``), in alternating rounds (``--rounds``), so a change is measured
against the code before it under the same load. Scenario 5 then also reports capture's CPU per
action (its threads and the Kafka client's) for each.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
#: The checkout whose package captures and serves in this process (``--before`` runs children with another).
CODE = Path(os.environ.get("KAFKA_BENCH_CODE", REPO))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(CODE))

import duckdb  # noqa: E402
from confluent_kafka import Producer  # noqa: E402

from lineage_listener.kafka.publish import KafkaWriter  # noqa: E402
from lineage_listener.kafka.settings import KafkaSettings  # noqa: E402
from lineage_listener.store.batch import Batch  # noqa: E402
from lineage_listener.store.rows import row_of  # noqa: E402
from tests.kafka_broker import Broker  # noqa: E402
from tests.server_helpers import Server  # noqa: E402
from tests.test_openlineage_runs import run_events  # noqa: E402


def say(text: str) -> None:
    print(text, flush=True)


def health(server: Server) -> dict:
    with urllib.request.urlopen(f"{server.url}/api/health", timeout=10) as r:
        return json.loads(r.read())["kafka"] or {}


def committed(stats: dict) -> int:
    return sum(p.get("committed") or 0 for p in stats.get("partitions", []))


def wait(predicate: Any, timeout: float = 900.0, every: float = 0.05) -> float:
    """Seconds until ``predicate()`` holds (bounded)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if predicate():
                return time.monotonic() - start
        except OSError:
            pass
        time.sleep(every)
    raise TimeoutError("condition not met")


def topic_size(settings: KafkaSettings) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": settings.bootstrap, "group.id": uuid.uuid4().hex})
    try:
        meta = c.list_topics(settings.topic, timeout=10).topics[settings.topic]
        return sum(c.get_watermark_offsets(TopicPartition(settings.topic, p), timeout=10)[1] for p in meta.partitions)
    finally:
        c.close()


def store_counts(store: Path, topic: str) -> dict[str, int]:
    """What the store holds of ``topic``: messages (its offsets record), queries, edge rows, doubles."""
    with duckdb.connect(str(store), read_only=True) as con:
        held = con.execute("SELECT coalesce(sum(next_offset), 0) FROM kafka_offsets WHERE topic = ?",
                           [topic]).fetchone()[0]
        queries = con.execute("SELECT count(*) FROM queries").fetchone()[0]
        edge_rows = con.execute("SELECT count(*) FROM column_lineage").fetchone()[0]
        doubled = con.execute("SELECT count(*) FROM (SELECT query_id FROM edge_captures WHERE query_id NOT LIKE "
                              "'openlineage:%' GROUP BY query_id HAVING count(*) > 1)").fetchone()[0]
        notes = con.execute("SELECT count(*) - count(DISTINCT (query_id, error)) FROM capture_errors "
                            "WHERE stage = 'bench'").fetchone()[0]
    return {"messages_stored": held, "queries": queries, "edge_rows": edge_rows, "queries_captured_twice": doubled,
            "appended_rows_twice": notes}


# -- templates: real captured queries, as messages --------------------------------------------------------
def capture_templates(bootstrap: str, work: Path) -> list[Batch]:
    """Per-query batches of real captures (test_accuracy's SQL over small tables, and writes)."""
    from pyspark.sql import SparkSession

    import lineage_listener
    from lineage_listener.kafka import messages
    from tests.test_kafka import accuracy_sql

    settings = KafkaSettings(bootstrap, f"templates-{uuid.uuid4().hex[:6]}")
    spark = (SparkSession.builder.master("local[2]").appName("bench").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.warehouse.dir", str(work / "wh"))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("""SELECT id, name, amount, dept, email, named_struct('city', city, 'zip', zip) AS address,
                        array(1, 2) AS tags FROM VALUES (1, 'ann', 10.0D, 'a', 'ann@x', 'Oslo', '0150'),
                        (2, 'bob', 200.0D, 'b', 'bob@x', 'Rome', '00100') AS t(id, name, amount, dept, email, city, zip)
              """).createOrReplaceTempView("people")
    spark.sql("SELECT * FROM VALUES ('a', 'Alpha'), ('b', 'Beta') AS t(dept, title)").createOrReplaceTempView("depts")
    handle = lineage_listener.enable(spark, kafka={"bootstrap": bootstrap, "topic": settings.topic})
    for sql in accuracy_sql():
        try:
            spark.sql(sql).collect()
        except Exception:  # noqa: BLE001
            pass
    for i in range(5):
        spark.sql(f"SELECT id, upper(name) AS n, amount * {i} AS a FROM people WHERE amount > 1") \
            .write.mode("overwrite").parquet(str(work / f"out{i}"))
    handle.flush(120)
    lineage_listener.disable(spark)
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "auto.offset.reset": "earliest"})
    c.subscribe([settings.topic])
    out, idle = [], 0
    while idle < 10:
        m = c.poll(0.5)
        if m is None or m.error() is not None:
            idle += 1
            continue
        idle = 0
        decoded = messages.decode(m.value())
        if decoded.batch.rows["queries"]:
            out.append(decoded.batch)
    c.close()
    return out


def renamed(template: Batch, app: str, n: int) -> Batch:
    """A template query as query ``n`` of application ``app`` (same datasets: a job that runs again)."""
    old_app = template.rows["queries"][0][1]
    text = template.to_json().replace(old_app, f"{app}").replace(f'"{app}:', f'"{app}:{n}-')
    b = Batch.from_json(text)
    b.add(row_of("capture_errors", (b.rows["queries"][0][8], app, b.rows["queries"][0][0], "bench", f"note {app} {n}")))
    return b


def pile(settings: KafkaSettings, templates: list[Batch], events: int, foreign_every: int = 10) -> tuple[int, int]:
    """Produce ``events`` events: (ours, foreign) produced, all acknowledged."""
    from lineage_listener.kafka import messages

    producer = Producer({"bootstrap.servers": settings.bootstrap, "linger.ms": 50, "compression.type": "lz4",
                         "enable.idempotence": True})
    ours = foreign = 0
    n = 0
    while ours + foreign < events:
        app = f"app-{n // 60:06d}"  # sixty actions per application
        if n % foreign_every == foreign_every - 1:
            run = str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench-{n}"))
            for ev in run_events(run).values():
                producer.produce(settings.topic, json.dumps(ev).encode(), key=run.encode())
                foreign += 1
        else:
            for key, value, _part in messages.encode(renamed(templates[n % len(templates)], app, n)):
                producer.produce(settings.topic, value, key=key)
                ours += 1
        n += 1
        producer.poll(0)
    assert producer.flush(120) == 0
    return ours, foreign


def encode_cost(templates: list[Batch], reps: int = 20) -> dict:
    """CPU the capture thread spends making one query's message (the Kafka-only part of publishing)."""
    from lineage_listener.kafka import messages

    start = time.process_time()
    sizes = [len(value) for _ in range(reps) for t in templates for _k, value, _p in messages.encode(t)]
    spent = time.process_time() - start
    out = {"encode_cpu_ms_per_message": round(1000 * spent / len(sizes), 2),
           "message_bytes_median": int(statistics.median(sizes)), "message_bytes_max": max(sizes)}
    say(f"[encode] {json.dumps(out)}")
    return out


# -- scenarios ---------------------------------------------------------------------------------------------
def one_by_one(settings: KafkaSettings, store: Path) -> None:
    """The topic's messages written into ``store`` one at a time through this checkout's ``write_batch``
    (one transaction): what a consumer's store must hold."""
    from confluent_kafka import Consumer

    from lineage_listener.kafka import messages
    from lineage_listener.store.connection import open_writable
    from lineage_listener.store.upsert import write_batch

    c = Consumer({"bootstrap.servers": settings.bootstrap, "group.id": uuid.uuid4().hex,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([settings.topic])
    con = open_writable(store)
    con.execute("BEGIN TRANSACTION")
    want, idle, seen = topic_size(settings), 0, 0
    while seen < want and idle < 20:
        found = c.consume(2000, timeout=1.0)
        idle = 0 if found else idle + 1
        for m in found:
            if m.error() is None:
                seen += 1
                write_batch(con, messages.decode(m.value()).batch)
    con.execute("COMMIT")
    con.close()
    c.close()


#: Store tables compared between a consumed store and the one written message by message.
COMPARED = {
    "runs": "SELECT * FROM runs", "queries": "SELECT * FROM queries", "datasets": "SELECT * FROM datasets",
    "dataset_columns": "SELECT * FROM dataset_columns", "column_lineage": "SELECT * FROM column_lineage",
    "edge_captures": "SELECT query_id, run_id, captured_at, captures FROM edge_captures",
    "streams": "SELECT * FROM streams", "capture_errors": "SELECT * FROM capture_errors",
    "query_starts": "SELECT * FROM query_starts"}


def differing_tables(a: Path, b: Path) -> list[str]:
    """The tables of :data:`COMPARED` whose rows (as multisets) differ between two stores."""
    out = []
    with duckdb.connect(str(a), read_only=True) as ca, duckdb.connect(str(b), read_only=True) as cb:
        for table, sql in COMPARED.items():
            if sorted(map(repr, ca.execute(sql).fetchall())) != sorted(map(repr, cb.execute(sql).fetchall())):
                out.append(table)
    return out


def catch_up(broker: Broker, templates: list[Batch], events: int, work: Path, codes: dict[str, Path],
             rounds: int = 1, check: bool = True) -> dict:
    settings = KafkaSettings(broker.servers, f"hour-{uuid.uuid4().hex[:6]}")
    start = time.monotonic()
    ours, foreign = pile(settings, templates, events)
    produced = topic_size(settings)
    say(f"[catch-up] produced {produced} events ({ours} captured, {foreign} OpenLineage) in "
        f"{time.monotonic() - start:.0f} s")
    reference = work / "hour-one-by-one.duckdb"
    if check:
        t0 = time.monotonic()
        one_by_one(settings, reference)
        say(f"[catch-up] the same messages written one at a time: {time.monotonic() - t0:.0f} s")
    out: dict[str, list[dict]] = {name: [] for name in codes}
    for r in range(rounds):
        order = list(codes.items()) if r % 2 == 0 else list(codes.items())[::-1]
        for name, code in order:
            store = work / f"hour-{name}-{r}.duckdb"
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "lineage_listener", "consume", "--store", str(store),
                                   "--kafka-bootstrap", settings.bootstrap, "--kafka-topic", settings.topic,
                                   "--kafka-group", f"{name}-{r}-{uuid.uuid4().hex[:6]}", "--until-idle", "2"],
                                  cwd=code, env={**os.environ, "PYTHONPATH": str(code)},
                                  capture_output=True, text=True, check=True)
            took = time.monotonic() - t0 - 2.0  # less the idle wait that ends it
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
            result = json.loads(done.stderr.strip().splitlines()[-1])
            counts = store_counts(store, settings.topic)
            res = {"code": name, "round": r, "events_produced": produced, "events_consumed": result["messages"],
                   **counts, "seconds": round(took, 1), "cpu_s": round(cpu, 1),
                   "events_per_s": round(result["messages"] / took), "edge_rows_per_s": round(counts["edge_rows"] / took),
                   "dead_letters": result["dead_letters"], "load": round(os.getloadavg()[0], 1)}
            if check:
                res["differs_from_one_by_one"] = differing_tables(store, reference)
            out[name].append(res)
            say(f"[catch-up] {json.dumps(res)}")
    summary = {name: {"edge_rows_per_s_median": statistics.median(x["edge_rows_per_s"] for x in runs),
                      "seconds_median": statistics.median(x["seconds"] for x in runs),
                      "cpu_s_median": statistics.median(x["cpu_s"] for x in runs),
                      "same_as_one_by_one": all(not x.get("differs_from_one_by_one") for x in runs) if check else None,
                      "lost_or_doubled": any(x["events_consumed"] != produced or x["messages_stored"] != produced
                                             or x["queries_captured_twice"] or x["appended_rows_twice"]
                                             for x in runs)}
               for name, runs in out.items()}
    say(f"[catch-up] summary {json.dumps(summary)} (target {TARGET_EDGE_ROWS_PER_S:,} edge rows/s)")
    return {"rounds": out, "summary": summary}


def zero_code_apps(broker: Broker, work: Path, replay_runs: int = 200) -> dict:
    from tests.test_bridge_jobs import finish, pyspark_job, submit
    from tests.test_kafka import replay_file, serve_topic, zero_code_conf

    settings = KafkaSettings(broker.servers, f"apps-{uuid.uuid4().hex[:6]}")
    conf = zero_code_conf(settings)
    events, _runs = replay_file(work / "replay.ndjson", "apps", replay_runs)
    store = work / "apps.duckdb"
    server = serve_topic(store, settings, work / "apps-server.log")
    try:
        jobs = []
        for app in ("bench_a", "bench_b"):
            (work / app).mkdir(exist_ok=True)
            jobs.append(submit([*conf, *pyspark_job(work / app, app, [work / app / f"out{i}" for i in range(10)])],
                               work / app))
        producer = Producer({"bootstrap.servers": settings.bootstrap})
        for line in events.read_text().splitlines():
            producer.produce(settings.topic, line.encode(), key=json.loads(line)["run"]["runId"].encode())
            producer.poll(0)
        assert producer.flush(60) == 0
        for job in jobs:
            code, _o, err = finish(job, 900)
            assert code == 0, err[-2000:]
        produced = topic_size(settings)
        wait(lambda: committed(health(server)) == produced)
        stats = health(server)
    finally:
        server.stop()
    out = {"events_produced": produced, "events_consumed": stats["messages"], **store_counts(store, settings.topic),
           "openlineage_events": stats["foreign_events"], "dead_letters": stats["dead_letters"]}
    say(f"[two apps + replay] {json.dumps(out)}")
    return out


def steady(settings: KafkaSettings, templates: list[Batch], total: int, per_s: float, progress: list[int]) -> None:
    """Capture's own writer producing ``total`` queries at ``per_s`` a second (spooling when it must)."""
    writer = KafkaWriter(settings, lock_timeout=2.0)
    for n in range(total):
        writer.write(renamed(templates[n % len(templates)], f"steady-{n // 60:04d}", n))
        progress[0] = n + 1
        time.sleep(1.0 / per_s)
    while writer.waiting():
        writer.write(Batch())
        time.sleep(0.5)


def server_killed(broker: Broker, templates: list[Batch], work: Path, total: int) -> dict:
    settings = KafkaSettings(broker.servers, f"kill-{uuid.uuid4().hex[:6]}")
    store = work / "kill.duckdb"
    args = ["--kafka-bootstrap", settings.bootstrap, "--kafka-topic", settings.topic]
    active = Server(store, extra_args=args, output=work / "kill-a.log").start()
    wait(lambda: health(active).get("state") == "active")
    standby = Server(store, extra_args=args, output=work / "kill-b.log").start()
    wait(lambda: health(standby).get("state") == "standby")
    progress = [0]
    producing = threading.Thread(target=steady, args=(settings, templates, total, 100.0, progress))
    producing.start()
    wait(lambda: progress[0] >= total // 3)
    before = health(standby)["messages"]
    active.proc.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    active.proc.wait()
    there = topic_size(settings)  # what the killed server may have left behind
    wait(lambda: health(standby).get("messages", 0) > before)
    first_write = time.monotonic() - killed_at
    wait(lambda: committed(health(standby)) >= there)
    caught_up = time.monotonic() - killed_at
    active = Server(store, extra_args=args, output=work / "kill-a2.log").start()  # back, as the standby now
    producing.join()
    produced = topic_size(settings)
    wait(lambda: committed(health(standby)) == produced)
    active.stop()
    standby.stop()
    out = {"events_produced": produced, **store_counts(store, settings.topic),
           "takeover_first_write_s": round(first_write, 1),
           "kill_to_caught_up_s": round(caught_up, 1)}  # committed all that was in the topic at the kill
    say(f"[server SIGKILLed, standby takes over, restarted] {json.dumps(out)}")
    return out


def broker_restarted(broker: Broker, templates: list[Batch], work: Path, total: int) -> dict:
    settings = KafkaSettings(broker.servers, f"restart-{uuid.uuid4().hex[:6]}")
    store = work / "restart.duckdb"
    server = Server(store, extra_args=["--kafka-bootstrap", settings.bootstrap, "--kafka-topic", settings.topic],
                    output=work / "restart.log").start()
    progress = [0]
    producing = threading.Thread(target=steady, args=(settings, templates, total, 100.0, progress))
    producing.start()
    wait(lambda: progress[0] >= total // 3)
    broker.stop()
    down = time.monotonic()
    time.sleep(5)
    broker.start()
    say(f"[broker restart] down {time.monotonic() - down:.1f} s")
    producing.join()
    produced = topic_size(settings)
    wait(lambda: committed(health(server)) == produced)
    server.stop()
    out = {"queries_produced": total, "events_produced": produced, **store_counts(store, settings.topic)}
    say(f"[broker restarted] {json.dumps(out)}")
    return out


def capture_cpu() -> float:
    """CPU seconds of capture's threads in this process: its capture thread and write lane, and the Kafka
    client's threads (``/proc``; threads that ended are not counted, so read it before ``disable``)."""
    tick = os.sysconf("SC_CLK_TCK")
    names = {str(t.native_id): t.name for t in threading.enumerate()}
    total = 0.0
    for tid in os.listdir("/proc/self/task"):
        try:
            comm = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if names.get(tid, "").startswith("lineage-listener") or comm.startswith("rdk:"):
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def latency_child(bootstrap: str, work: Path, actions: int) -> dict:
    """In a process of its own (``KAFKA_BENCH_CODE``'s package): ``actions`` Spark writes, each timed from
    its return to its target answering on a ``serve`` consuming the topic; capture's CPU meanwhile."""
    from pyspark.sql import SparkSession

    import lineage_listener

    settings = KafkaSettings(bootstrap, f"latency-{uuid.uuid4().hex[:6]}")
    store = work / "latency.duckdb"
    server = Server(store, extra_args=["--kafka-bootstrap", settings.bootstrap, "--kafka-topic", settings.topic],
                    output=work / "latency.log").start()  # tests.server_helpers of CODE: its serve
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    src = spark.range(1000).selectExpr("id", "id % 7 AS k", "cast(id AS string) AS s")

    def found(target: Path) -> bool:
        url = f"{server.url}/api/datasets?q={urllib.request.quote(str(target))}"
        with urllib.request.urlopen(url, timeout=10) as r:
            return any(d["dataset"] == f"file:{target}" for d in json.loads(r.read()))
    try:
        src.selectExpr("id", "k").write.parquet(str(work / "latency" / "plain"))  # Spark's own first write
        lineage_listener.enable(spark, kafka={"bootstrap": settings.bootstrap, "topic": settings.topic})
        warm = work / "latency" / "warm"
        src.selectExpr("id", "k").write.parquet(str(warm))  # capture's start (imports, plan reader): not timed
        wait(lambda: found(warm), timeout=120, every=0.02)
        used = capture_cpu()
        seen = []
        for i in range(actions):
            target = work / "latency" / f"out{i}"
            src.selectExpr("id", "k").write.parquet(str(target))
            done = time.perf_counter()
            wait(lambda: found(target), timeout=120, every=0.02)
            seen.append(time.perf_counter() - done)
        cpu = capture_cpu() - used
        lineage_listener.disable(spark)
    finally:
        spark.stop()
        server.stop()
    return {"latencies_s": seen, "capture_cpu_ms_per_action": round(1000 * cpu / actions, 2)}


def latency(broker: Broker, work: Path, actions: int, codes: dict[str, Path], rounds: int = 1) -> dict:
    """End-to-end latency (:func:`latency_child`), each checkout in turn, ``rounds`` times."""
    out: dict[str, list[dict]] = {name: [] for name in codes}
    for r in range(rounds):
        order = list(codes.items()) if r % 2 == 0 else list(codes.items())[::-1]
        for name, code in order:
            child_work = work / f"latency-{name}-{r}"
            child_work.mkdir()
            done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--latency-child",
                                   "--bootstrap", broker.servers, "--work", str(child_work),
                                   "--latency-actions", str(actions)],
                                  env={**os.environ, "KAFKA_BENCH_CODE": str(code)}, capture_output=True,
                                  text=True)
            if done.returncode:
                raise RuntimeError(f"latency round with {code} failed: {done.stderr[-3000:]}")
            res = json.loads(done.stdout.strip().splitlines()[-1])
            seen = sorted(res["latencies_s"])
            res.update(code=name, round=r, load=round(os.getloadavg()[0], 1),
                       p50_s=round(statistics.median(seen), 2), p95_s=round(seen[int(0.95 * (len(seen) - 1))], 2))
            out[name].append(res)
            say(f"[latency] {name} round {r}: p50 {res['p50_s']} s, p95 {res['p95_s']} s, capture CPU "
                f"{res['capture_cpu_ms_per_action']} ms/action, load {res['load']}")
    summary = {}
    for name, runs in out.items():
        seen = sorted(x for run in runs for x in run["latencies_s"])
        summary[name] = {"actions": len(seen), "latency_p50_s": round(statistics.median(seen), 2),
                         "latency_p95_s": round(seen[int(0.95 * (len(seen) - 1))], 2),
                         "capture_cpu_ms_per_action_median": statistics.median(
                             run["capture_cpu_ms_per_action"] for run in runs)}
    say(f"[latency] summary {json.dumps(summary)} (target p95 < {TARGET_LATENCY_P95_S} s)")
    return {"rounds": {n: [{k: v for k, v in x.items() if k != "latencies_s"} for x in runs]
                       for n, runs in out.items()}, "summary": summary}


def producer_cost(broker: Broker, work: Path, cost_actions: int, rounds: int = 5) -> dict:
    """The job's wall time and driver CPU with capture to Kafka, to a store file and without capture."""
    from pyspark.sql import SparkSession

    import lineage_listener

    settings = KafkaSettings(broker.servers, f"cost-{uuid.uuid4().hex[:6]}")
    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    src = spark.range(1000).selectExpr("id", "id % 7 AS k", "cast(id AS string) AS s")

    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    tick = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        """CPU seconds of the driver: its JVM (local[2]: the executors too) and this Python process."""
        fields = Path(f"/proc/{jvm_pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick + time.process_time()

    def job(tag: str, n: int) -> float:
        """Wall seconds of ``n`` small writes."""
        start = time.perf_counter()
        for i in range(n):
            src.where(f"k = {i % 7}").selectExpr("id", "upper(s) AS u").write.mode("overwrite") \
                .parquet(str(work / "cost" / tag / str(i % 5)))
        return time.perf_counter() - start
    try:
        job("warm", 10)
        plain: list[tuple[float, float]] = []
        stored: list[tuple[float, float]] = []
        kafka: list[tuple[float, float]] = []
        sides = [(plain, None), (stored, {"store": str(work / "cost.duckdb")}),
                 (kafka, {"kafka": {"bootstrap": settings.bootstrap, "topic": settings.topic}})]
        for n in range(rounds):  # interleaved, order turned each round: background load hits every side alike
            for times, where in (sides if n % 2 == 0 else sides[::-1]):
                handle = lineage_listener.enable(spark, **where) if where else None
                used = cpu()
                wall = job("captured" if where else "plain", cost_actions)
                if handle is not None:
                    handle.flush(120)  # CPU: all of capture's work, also what is left when the job ends
                    lineage_listener.disable(spark)
                times.append((wall, cpu() - used))
    finally:
        spark.stop()
    out = {"cost_actions": cost_actions, "rounds": rounds,
           "job_wall_s": {side: round(statistics.median(w for w, _ in t), 2) for side, t in
                          (("none", plain), ("store", stored), ("kafka", kafka))},
           "job_cpu_s": {side: round(statistics.median(c for _, c in t), 2) for side, t in
                         (("none", plain), ("store", stored), ("kafka", kafka))},
           "store_wall_ratio": _ratios([w for w, _ in stored], [w for w, _ in plain]),
           "kafka_wall_ratio": _ratios([w for w, _ in kafka], [w for w, _ in plain]),
           "store_cpu_ratio": _ratios([c for _, c in stored], [c for _, c in plain]),
           "kafka_cpu_ratio": _ratios([c for _, c in kafka], [c for _, c in plain])}
    say(f"[producer cost] {json.dumps(out)}")
    return out


def _ratios(captured: list[float], plain: list[float]) -> dict:
    """Median, least and most of each round's captured / uncaptured wall time (neighbours in time)."""
    each = sorted(c / p for c, p in zip(captured, plain))
    return {"median": round(statistics.median(each), 3), "min": round(each[0], 3), "max": round(each[-1], 3)}


TARGET_EDGE_ROWS_PER_S = 10_000
TARGET_LATENCY_P95_S = 1.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hour-events", type=int, default=36_000)
    p.add_argument("--latency-actions", type=int, default=40)
    p.add_argument("--cost-actions", type=int, default=60)
    p.add_argument("--scenario-queries", type=int, default=3000, help="queries produced in scenarios 2 and 3")
    p.add_argument("--only", help="comma-separated: apps,kill,broker,hour,latency,cost")
    p.add_argument("--before", type=Path, help="a checkout of the code before a change: scenarios 4 and 5 run "
                                               "with it too, in alternating rounds")
    p.add_argument("--rounds", type=int, default=None, help="rounds of scenarios 4 and 5 (default 1; 2 with --before)")
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="do not compare the caught-up store with the messages written one at a time")
    p.add_argument("--latency-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--bootstrap", help=argparse.SUPPRESS)
    p.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.latency_child:
        print(json.dumps(latency_child(args.bootstrap, args.work, args.latency_actions)))
        return 0
    only = set(args.only.split(",")) if args.only else {"apps", "kill", "broker", "hour", "latency", "cost"}
    codes = {"now": REPO, **({"before": args.before.resolve()} if args.before else {})}
    rounds = args.rounds or (2 if args.before else 1)
    work = Path(tempfile.mkdtemp(prefix="kafka-bench-"))
    (work / "broker").mkdir()
    broker = Broker(work / "broker", partitions=3).start()
    results: dict[str, Any] = {}
    try:
        templates = capture_templates(broker.servers, work) if only & {"kill", "broker", "hour"} else []
        if templates:
            say(f"[templates] {len(templates)} captured queries")
            results["encode"] = encode_cost(templates)
        if "apps" in only:
            results["two_apps_and_replay"] = zero_code_apps(broker, work)
        if "kill" in only:
            results["server_killed"] = server_killed(broker, templates, work, args.scenario_queries)
        if "broker" in only:
            results["broker_restarted"] = broker_restarted(broker, templates, work, args.scenario_queries)
        if "hour" in only:
            results["catch_up"] = catch_up(broker, templates, args.hour_events, work, codes, rounds, args.check)
        if "latency" in only:
            results["latency"] = latency(broker, work, args.latency_actions, codes, rounds)
        if "cost" in only:
            results["producer_cost"] = producer_cost(broker, work, args.cost_actions)
    finally:
        broker.stop()
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
