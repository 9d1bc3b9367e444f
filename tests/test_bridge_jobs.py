"""Zero-code capture end to end: unmodified jobs under spark-submit / spark-sql with
``$(lineage-listener spark-conf --store ...)``, the JVM bridge, the Python worker and a
real DuckDB store. Every job is a real Spark application in its own JVM (local[2])."""
from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import venv
from pathlib import Path

import duckdb
import pytest

pytest.importorskip("lineage_listener.capture.pipeline")


from lineage_listener.jar import bridge_jar  # noqa: E402
from tests.jobs import BASE_CONF, SPARK_HOME, capture_args, finish, job_env  # noqa: E402,F401 - also imported from here

REPO = Path(__file__).resolve().parent.parent
OFF_LINE = "lineage capture is OFF"
ORDERS = "id,customer,amount\n1,ann,5.0\n2,bob,20.0\n3,cid,30.5\n"

PYSPARK_JOB = '''
import json, sys, time
from pathlib import Path
from pyspark.sql import SparkSession, functions as F

cfg = json.loads(sys.argv[1])
spark = SparkSession.builder.appName(cfg["app"]).getOrCreate()
orders = spark.read.option("header", True).schema("id INT, customer STRING, amount DOUBLE").csv(cfg["input"])
for i, out in enumerate(cfg["outputs"]):
    (orders.where(F.col("amount") > 10)
     .select("id", F.upper("customer").alias("customer_uc"), (F.col("amount") * 2).alias("double_amount"))
     .write.mode("overwrite").parquet(out))
    if cfg.get("pause_after") == i:      # let the test do something between two writes
        sync = Path(cfg["sync"])
        (sync / "paused").touch()
        deadline = time.time() + 120
        while not (sync / "go").exists() and time.time() < deadline:
            time.sleep(0.05)
if cfg.get("probe"):
    sys.path.insert(0, cfg["probe_dir"])
    import gateway_probe
    gateway_probe.run(spark, cfg["probe"])
spark.stop()
'''

# Runs inside the PySpark driver: tries the bridge's gateway without / with a wrong token.
GATEWAY_PROBE = '''
import json, os, socket, time
from py4j.java_gateway import GatewayParameters, JavaGateway


def _worker_of(jvm_pid):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = open(f"/proc/{d}/stat").read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            cmd = open(f"/proc/{d}/cmdline", "rb").read()
        except OSError:
            continue
        if ppid == jvm_pid and b"lineage_listener.bridge.worker" in cmd:
            return int(d), cmd
    return None, b""


def _listeners(port):
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, hexport = local.rsplit(":", 1)
            if state == "0A" and int(hexport, 16) == port:
                found.append(addr)
    return found


def _try(params):
    try:
        gw = JavaGateway(gateway_parameters=params)
        gw.jvm.java.lang.System.currentTimeMillis()
        gw.close()
        return "connected"
    except Exception as exc:
        return "refused: " + type(exc).__name__


def run(spark, out):
    jvm_pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    deadline = time.time() + 60
    pid, cmd = _worker_of(jvm_pid)
    while pid is None and time.time() < deadline:
        time.sleep(0.2)
        pid, cmd = _worker_of(jvm_pid)
    env = dict(kv.split("=", 1) for kv in open(f"/proc/{pid}/environ").read().split("\\0") if "=" in kv)
    port, token = int(env["LINEAGE_BRIDGE_PORT"]), env["LINEAGE_BRIDGE_TOKEN"]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"c\\nt\\ngetConf\\nsspark.lineage.store\\nsx\\ne\\n")
        raw = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                raw += chunk
        except ConnectionResetError:
            raw += b"<connection reset>"
    result = {
        "raw_reply": raw.decode(errors="replace"),
        "no_token": _try(GatewayParameters(port=port, eager_load=True)),
        "wrong_token": _try(GatewayParameters(port=port, auth_token="x" * len(token), eager_load=True)),
        "right_token": _try(GatewayParameters(port=port, auth_token=token, eager_load=True)),
        "listen_addresses": _listeners(port),
        "token_in_argv": token.encode() in cmd,
    }
    open(out, "w").write(json.dumps(result))
'''

JAVA_JOB = '''
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import static org.apache.spark.sql.functions.*;

public class BridgeJavaJob {
    public static void main(String[] args) {
        SparkSession spark = SparkSession.builder().appName("bridge_java_job").getOrCreate();
        Dataset<Row> orders = spark.read().option("header", "true")
            .schema("id INT, customer STRING, amount DOUBLE").csv(args[0]);
        orders.groupBy("customer").agg(sum("amount").alias("total"))
            .write().mode("overwrite").parquet(args[1]);
        // no spark.stop(): the bridge must still drain, from the JVM's shutdown
    }
}
'''

SQL_JOB = '''
CREATE TABLE src (id INT, name STRING, amount DOUBLE) USING parquet;
INSERT INTO src VALUES (1, 'Ann', 5.0), (2, 'Bob', 20.0);
CREATE TABLE dst USING parquet AS SELECT id, lower(name) AS lname, amount FROM src WHERE amount > 1;
'''


# ---- helpers -------------------------------------------------------------------------


def without_confs(args: list[str], *keys: str) -> list[str]:
    """``args`` minus the ``--conf KEY=...`` pairs for ``keys``."""
    out: list[str] = []
    it = iter(args)
    for a in it:
        if a == "--conf":
            kv = next(it)
            if kv.split("=", 1)[0] not in keys:
                out += [a, kv]
        else:
            out.append(a)
    return out


def submit(args: list[str], cwd: Path, tool: str = "spark-submit") -> subprocess.Popen:
    return subprocess.Popen([str(SPARK_HOME / "bin" / tool), *BASE_CONF, *args], cwd=cwd, env=job_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_job(args: list[str], cwd: Path, tool: str = "spark-submit") -> tuple[int, str, str]:
    return finish(submit(args, cwd, tool))


def pyspark_job(tmp: Path, app: str, outputs: list[Path], **extra: object) -> list[str]:
    script = tmp / "job.py"
    script.write_text(PYSPARK_JOB)
    cfg = {"app": app, "input": str(orders_csv(tmp)), "outputs": [str(o) for o in outputs], **extra}
    return [str(script), json.dumps(cfg)]


def orders_csv(tmp: Path) -> Path:
    path = tmp / "orders.csv"
    if not path.exists():
        path.write_text(ORDERS)
    return path


def query(store: Path, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def edges(store: Path, target: str) -> set[tuple]:
    return set(query(store, "SELECT target_column, source_dataset, source_column, transform, kind "
                            "FROM column_lineage WHERE target_dataset = ?", [target]))


def pyspark_edges(csv: Path) -> set[tuple]:
    src = f"file:{csv}"
    return {("id", src, "id", "identity", "direct"),
            ("customer_uc", src, "customer", "derived", "direct"),
            ("double_amount", src, "amount", "derived", "direct"),
            (None, src, "amount", "filter", "indirect")}


def ended_runs(store: Path) -> dict[str, object]:
    return dict(query(store, "SELECT app_name, ended_at FROM runs"))


@pytest.fixture(scope="session", autouse=True)
def _bridge_jar() -> Path:
    """Build (or find) the jar once, so no job pays for javac."""
    return bridge_jar()


# ---- job kinds -----------------------------------------------------------------------

def test_sql_file_with_spark_sql(tmp_path: Path) -> None:
    store, sql = tmp_path / "lineage.duckdb", tmp_path / "job.sql"
    sql.write_text(SQL_JOB)
    rc, _, err = run_job([*capture_args(store), "--name", "bridge_sql_job",
                          "--conf", "spark.sql.catalogImplementation=in-memory",  # no Derby metastore: faster
                          "--conf", f"spark.sql.warehouse.dir={tmp_path / 'wh'}", "-f", str(sql)],
                         tmp_path, tool="spark-sql")
    assert rc == 0, err[-3000:]
    src = "spark_catalog.default.src"
    assert edges(store, "spark_catalog.default.dst") == {
        ("id", src, "id", "identity", "direct"),
        ("lname", src, "name", "derived", "direct"),
        ("amount", src, "amount", "identity", "direct"),
        (None, src, "amount", "filter", "indirect"),
    }
    runs = ended_runs(store)
    assert list(runs) == ["bridge_sql_job"] and runs["bridge_sql_job"] is not None


def test_java_main_class(tmp_path: Path) -> None:
    src_dir, classes = tmp_path / "src", tmp_path / "classes"
    src_dir.mkdir()
    classes.mkdir()
    (src_dir / "BridgeJavaJob.java").write_text(JAVA_JOB)
    subprocess.run(["javac", "--release", "17", "-cp", str(SPARK_HOME / "jars" / "*"), "-d", str(classes),
                    str(src_dir / "BridgeJavaJob.java")], check=True, capture_output=True)
    app_jar = tmp_path / "job.jar"
    subprocess.run(["jar", "cf", str(app_jar), "-C", str(classes), "."], check=True)
    store, out = tmp_path / "lineage.duckdb", tmp_path / "totals"
    rc, _, err = run_job([*capture_args(store), "--class", "BridgeJavaJob", str(app_jar),
                          str(orders_csv(tmp_path)), str(out)], tmp_path)
    assert rc == 0, err[-3000:]
    src = f"file:{orders_csv(tmp_path)}"
    assert edges(store, f"file:{out}") == {
        ("customer", src, "customer", "identity", "direct"),
        ("total", src, "amount", "aggregate", "direct"),
        (None, src, "customer", "group_by", "indirect"),
    }
    runs = ended_runs(store)
    assert list(runs) == ["bridge_java_job"] and runs["bridge_java_job"] is not None


# ---- failure policy ------------------------------------------------------------------

def test_python_without_the_package_leaves_the_job_alone(tmp_path: Path) -> None:
    bare = tmp_path / "bare-venv"
    venv.create(bare, with_pip=False)  # a Python with neither lineage-listener nor its dependencies
    store, out = tmp_path / "lineage.duckdb", tmp_path / "out"
    args = without_confs(capture_args(store), "spark.lineage.python", "spark.lineage.pythonPath")
    args += ["--conf", f"spark.lineage.python={bare / 'bin' / 'python'}"]
    rc, _, err = run_job([*args, *pyspark_job(tmp_path, "no_package_job", [out])], tmp_path)
    assert rc == 0, err[-3000:]
    assert (out / "_SUCCESS").exists()
    lines = [line for line in err.splitlines() if OFF_LINE in line]
    assert len(lines) == 1, err[-3000:]
    assert "No module named 'lineage_listener'" in lines[0] and "spark.lineage.python" in lines[0]
    assert "Traceback" not in err
    assert not store.exists()


def test_events_before_a_slow_worker_are_queued_bounded_and_drops_reported(tmp_path: Path) -> None:
    # A worker that starts only once the job's four actions have run (the job says so with a file):
    # whatever the machine's speed, all four events arrive while no worker takes them.
    go = tmp_path / "actions-done"
    slow = tmp_path / "slow-python"
    slow.write_text(f"#!/bin/sh\ni=0\nwhile [ ! -f {go} ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n"
                    f"exec {sys.executable} \"$@\"\n")
    slow.chmod(0o755)
    script = tmp_path / "quick.py"
    script.write_text("import pathlib\n"
                      "from pyspark.sql import SparkSession\n"
                      "spark = SparkSession.builder.appName('slow_worker_job').getOrCreate()\n"
                      "for i in range(4):\n"
                      "    spark.range(3).selectExpr(f'id + {i} AS v').collect()\n"
                      f"pathlib.Path({str(go)!r}).touch()\n"
                      "spark.stop()\n")
    store = tmp_path / "lineage.duckdb"
    args = without_confs(capture_args(store), "spark.lineage.python")
    args += ["--conf", f"spark.lineage.python={slow}", "--conf", "spark.lineage.queueCapacity=2", str(script)]
    rc, stdout, err = run_job(args, tmp_path)
    assert rc == 0, stdout[-2000:] + err[-3000:]
    full = [line for line in err.splitlines() if "queue is full" in line]
    dropped = re.findall(r"(\d+) lineage events were dropped", err)
    assert len(full) == 1 and dropped and int(dropped[0]) >= 1, err[-3000:]
    assert OFF_LINE not in err
    captured = query(store, "SELECT count(*) FROM queries WHERE action = 'collectToPython'")[0][0]
    assert captured >= 2 and captured + int(dropped[0]) == 4  # what fit in the queue is all captured


def test_worker_killed_mid_run_loses_no_edges(tmp_path: Path) -> None:
    store, sync = tmp_path / "lineage.duckdb", tmp_path / "sync"
    sync.mkdir()
    outs = [tmp_path / f"out{i}" for i in range(3)]
    log = tmp_path / "driver.log"
    args = [*capture_args(store), *pyspark_job(tmp_path, "killed_worker_job", outs, pause_after=0, sync=str(sync))]
    with open(log, "w") as sink:
        proc = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-submit"), *BASE_CONF, *args], cwd=tmp_path,
                                env=job_env(), stdout=sink, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.time() + 240
            while not (sync / "paused").exists() and time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
            pids = re.findall(r"Python worker pid (\d+) connected", log.read_text())
            assert pids, log.read_text()[-3000:]
            os.kill(int(pids[0]), 9)  # the bridge's own worker, by the pid it logged, right after write 1
            (sync / "go").touch()
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = log.read_text()
    assert proc.returncode == 0, text[-3000:]
    assert "restarting it and replaying" in text, text[-3000:]
    expected = pyspark_edges(orders_csv(tmp_path))
    for o in outs:
        assert edges(store, f"file:{o}") == expected, o
    dupes = query(store, "SELECT query_id, target_column, source_column, transform, count(*) FROM column_lineage "
                         "GROUP BY ALL HAVING count(*) > 1")
    assert dupes == []
    assert ended_runs(store)["killed_worker_job"] is not None


def test_two_pyspark_scripts_at_once_share_one_store_and_guard_their_gateways(tmp_path: Path) -> None:
    """Two unmodified PySpark scripts under spark-submit at once, into one store; the first also tries
    its bridge's gateway from the driver: it listens on loopback only and talks only to the token's holder."""
    store, probe = tmp_path / "lineage.duckdb", tmp_path / "probe.json"
    (tmp_path / "gateway_probe.py").write_text(GATEWAY_PROBE)
    procs = {}
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        outs = [d / "out1", d / "out2"]
        extra = {"probe": str(probe), "probe_dir": str(tmp_path)} if name == "a" else {}
        job = pyspark_job(d, f"concurrent_{name}", outs, **extra)
        procs[name] = (d, outs, submit([*capture_args(store), *job], d))
    for _d, _outs, proc in procs.values():
        rc, stdout, err = finish(proc)
        assert rc == 0, stdout[-3000:] + err[-3000:]
        assert OFF_LINE not in err
    for d, outs, _ in procs.values():
        for o in outs:
            assert edges(store, f"file:{o}") == pyspark_edges(orders_csv(d)), o
    runs = ended_runs(store)
    assert set(runs) == {"concurrent_a", "concurrent_b"} and all(runs.values())

    result = json.loads(probe.read_text())
    loopback = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1, or ::ffff:127.0.0.1 (dual stack)
    assert len(result["listen_addresses"]) == 1 and set(result["listen_addresses"]) <= loopback, result
    assert result["right_token"] == "connected"
    assert result["no_token"].startswith("refused") and result["wrong_token"].startswith("refused"), result
    assert not result["raw_reply"].startswith("!y"), result   # no reply but an error to a tokenless call
    assert result["token_in_argv"] is False


def test_spark_stop_does_not_wait_for_a_busy_store_and_nothing_is_lost(tmp_path: Path) -> None:
    """At application end the listener bus waits only until the worker has read the last queries;
    storing them overlaps Spark's shutdown and the JVM's exit waits for it. The test holds the store's
    write lock from before ``spark.stop()`` until the driver says the application end is released
    (or, without that, until ``spark.stop()`` has returned): the lineage must still reach the store,
    not a spool, because the worker is still waiting for the lock when it is let go."""
    store, sync, log = tmp_path / "lineage.duckdb", tmp_path / "sync", tmp_path / "driver.log"
    sync.mkdir()
    outs = [tmp_path / "out0", tmp_path / "out1"]
    job = pyspark_job(tmp_path, "busy_at_end", outs, pause_after=1, sync=str(sync))
    script = Path(job[0])
    script.write_text(PYSPARK_JOB.replace("spark.stop()\n", "spark.stop()\nprint('spark.stop() returned', flush=True)\n"))
    released_on = ""
    with open(log, "w") as sink:
        proc = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-submit"), *BASE_CONF, *capture_args(store), *job],
                                cwd=tmp_path, env=job_env(), stdout=sink, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.time() + 240
            while not (sync / "paused").exists() and time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert (sync / "paused").exists(), log.read_text()[-3000:]
            holder = None
            while holder is None and time.time() < deadline:
                try:
                    holder = duckdb.connect(str(store))  # the worker writes between our attempts
                except duckdb.IOException:
                    time.sleep(0.05)
            assert holder is not None, "the worker never let go of the store"
            try:
                (sync / "go").touch()
                while not released_on and time.time() < deadline and proc.poll() is None:
                    text = log.read_text(errors="replace")
                    released_on = ("application end" if "application end waited" in text
                                   else "stop" if "spark.stop() returned" in text else "")
                    time.sleep(0.05)
            finally:
                holder.close()
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = log.read_text(errors="replace")
    assert proc.returncode == 0, text[-3000:]
    assert released_on == "application end", text[-3000:]
    for out in outs:
        assert edges(store, f"file:{out}") == pyspark_edges(orders_csv(tmp_path)), (out, text[-3000:])
    assert ended_runs(store)["busy_at_end"] is not None
    assert not list(tmp_path.glob("lineage.duckdb.spool/*")), text[-3000:]


def _run_with_worker_fault(tmp_path: Path, app: str, n_outputs: int, fault, extra_conf: list[str],
                           python: Path | None = None) -> tuple:
    """A job of ``n_outputs`` writes; ``fault(pid)`` hits the bridge's worker right after write 1.
    ``python`` replaces the worker's Python (``spark.lineage.python``)."""
    store, sync = tmp_path / "lineage.duckdb", tmp_path / "sync"
    sync.mkdir()
    outs = [tmp_path / f"out{i}" for i in range(n_outputs)]
    log = tmp_path / "driver.log"
    conf = capture_args(store)
    if python is not None:
        conf = without_confs(conf, "spark.lineage.python") + ["--conf", f"spark.lineage.python={python}"]
    args = [*conf, *extra_conf, *pyspark_job(tmp_path, app, outs, pause_after=0, sync=str(sync))]
    started = time.time()
    with open(log, "w") as sink:
        proc = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-submit"), *BASE_CONF, *args], cwd=tmp_path,
                                env=job_env(), stdout=sink, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.time() + 240
            while not (sync / "paused").exists() and time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
            pids = re.findall(r"Python worker pid (\d+) connected", log.read_text())
            assert pids, log.read_text()[-3000:]
            fault(int(pids[0]))
            (sync / "go").touch()
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return proc.returncode, log.read_text(), store, outs, time.time() - started


def test_frozen_worker_is_detected_by_its_silence_and_replaced(tmp_path: Path) -> None:
    """SIGSTOP: the worker neither dies nor answers. The bridge stops it after stallTimeoutMs,
    restarts it and replays: every write's lineage arrives once, and the job does not wait for the end."""
    import signal

    rc, text, store, outs, took = _run_with_worker_fault(
        tmp_path, "frozen_worker_job", 3, lambda pid: os.kill(pid, signal.SIGSTOP),
        ["--conf", "spark.lineage.stallTimeoutMs=3000"])
    assert rc == 0, text[-3000:]
    assert "did not answer for 3000 ms" in text and "restarting it and replaying" in text, text[-3000:]
    expected = pyspark_edges(orders_csv(tmp_path))
    for o in outs:
        assert edges(store, f"file:{o}") == expected, o
    assert query(store, "SELECT query_id, target_column, source_column, transform, count(*) FROM column_lineage "
                        "GROUP BY ALL HAVING count(*) > 1") == []
    assert "drainTimeoutMs" not in text  # nothing waited at the end: no such line
    print(f"frozen worker job took {took:.1f} s")


def test_second_worker_death_counts_exactly(tmp_path: Path) -> None:
    """Two deaths with one restart allowed: capture goes off, and the lines say exactly how many
    events were not captured (stored + counted == the job's writes)."""
    def kill_twice(pid: int) -> None:
        os.kill(pid, 9)
        (tmp_path / "sync" / "go").touch()  # the next write finds the first worker dead: it is restarted
        log = tmp_path / "driver.log"
        deadline = time.time() + 120
        while time.time() < deadline:
            pids = re.findall(r"Python worker pid (\d+) connected", log.read_text())
            if len(pids) >= 2:
                os.kill(int(pids[1]), 9)
                return
            time.sleep(0.05)

    rc, text, store, outs, _ = _run_with_worker_fault(tmp_path, "twice_killed_job", 6, kill_twice, [])
    assert rc == 0, text[-3000:]
    assert OFF_LINE in text, text[-3000:]
    total = re.findall(r"(\d+) lineage events of this run were not captured \((\d+) waiting when capture went off, "
                       r"(\d+) after\)(?:; (\d+) more were delivered)?", text)
    assert total, text[-3000:]
    not_captured, _, _, unconfirmed = (int(x or 0) for x in total[0])
    stored = len([o for o in outs if edges(store, f"file:{o}")]) if store.exists() else 0
    writes = len(outs)
    if unconfirmed == 0:
        assert stored + not_captured == writes, text[-3000:]
    else:  # delivered-but-unconfirmed events may or may not have reached the store before the death
        assert stored + not_captured <= writes <= stored + not_captured + unconfirmed, text[-3000:]


# The bridge's worker with its first captured query made slow on purpose, in each worker process:
# ``sleep`` waits (a worker waiting on something: only its heartbeat shows it is alive), ``gil`` computes
# in one C call that never releases the GIL (a busy worker whose heartbeat thread cannot run: only its
# CPU time shows it is alive), ``hang`` never returns (deadlocked, while its heartbeat goes on).
# How long the slow part really took is appended to a file.
SLOW_FIRST_EVENT = '''
import runpy, sys, threading, time
from pathlib import Path
from lineage_listener.capture import pipeline

MODE, SECONDS, RECORD = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
_on_success, _first = pipeline.Capture.on_success, [True]


def _hold_the_gil(seconds):
    n = 1 << 16
    while True:  # calibrate on CPU time, so a starved process still computes for at least `seconds`
        t0 = time.process_time()
        sum(range(n))
        spent = time.process_time() - t0
        if spent >= 0.2:
            break
        n *= 2
    sum(range(int(n * seconds / spent)))  # one C call: the GIL is held throughout


def _slow_first(self, *args):
    if _first[0]:
        _first[0] = False
        started = time.monotonic()
        if MODE == "hang":
            threading.Event().wait()
        time.sleep(SECONDS) if MODE == "sleep" else _hold_the_gil(SECONDS)
        with RECORD.open("a") as f:
            f.write(f"{time.monotonic() - started}\\n")
    return _on_success(self, *args)


pipeline.Capture.on_success = _slow_first
sys.argv = [sys.argv[0]]
runpy.run_module("lineage_listener.bridge.worker", run_name="__main__", alter_sys=True)
'''


def slow_first_event_python(tmp_path: Path, mode: str, seconds: float) -> tuple[Path, Path]:
    """A ``spark.lineage.python`` whose workers take ``seconds`` over their first query; and the record file."""
    script, record, wrapper = tmp_path / "slow_worker.py", tmp_path / "slow-seconds.txt", tmp_path / "slow-python"
    script.write_text(SLOW_FIRST_EVENT)
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {script} {mode} {seconds} {record}\n")
    wrapper.chmod(0o755)
    return wrapper, record


STALL_MS = 2000


def await_slow_part(record: Path, log: Path) -> None:
    """Until a worker has finished its slow first event (or the bridge stopped it: the caller's
    assertions say so), bounded so that a broken bridge fails the test instead of hanging it."""
    deadline = time.time() + 240
    while not (record.exists() and record.read_text()) and time.time() < deadline:
        if "did not answer" in log.read_text():
            return
        time.sleep(0.05)


def test_a_busy_replacement_worker_is_not_taken_for_a_frozen_one(tmp_path: Path) -> None:
    """Each worker spends 3 x stallTimeoutMs waiting in its first event while its heartbeat goes on. The
    first one is then frozen (SIGSTOP) and replaced; the replacement is busy replaying. The frozen one is
    stopped, both busy ones are kept: every write's lineage arrives once."""
    import signal

    python, record = slow_first_event_python(tmp_path, "sleep", 3 * STALL_MS / 1000)

    def freeze_once_idle(pid: int) -> None:  # the first worker is slow too: freeze it once it is done
        await_slow_part(record, tmp_path / "driver.log")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)

    rc, text, store, outs, _ = _run_with_worker_fault(
        tmp_path, "busy_replacement_job", 3, freeze_once_idle,
        ["--conf", f"spark.lineage.stallTimeoutMs={STALL_MS}"], python=python)
    assert rc == 0, text[-3000:]
    assert OFF_LINE not in text, text[-3000:]
    assert text.count(f"did not answer for {STALL_MS} ms") == 1, text[-3000:]
    assert text.count("restarting it and replaying") == 1, text[-3000:]
    expected = pyspark_edges(orders_csv(tmp_path))
    for o in outs:
        assert edges(store, f"file:{o}") == expected, o
    assert query(store, "SELECT query_id, target_column, source_column, transform, count(*) FROM column_lineage "
                        "GROUP BY ALL HAVING count(*) > 1") == []
    slow = [float(x) for x in record.read_text().split()]
    assert len(slow) == 2 and all(s > STALL_MS / 1000 for s in slow), slow  # both workers were slow


def test_a_worker_computing_without_releasing_the_gil_is_kept(tmp_path: Path) -> None:
    """The worker's first event holds the GIL in C for 1.5 x stallTimeoutMs of CPU time (longer in wall
    time): no heartbeat can run, its CPU time shows it is alive. It is not stopped, and both writes are
    captured. The job waits after write 1 until that is done, so a starved worker still ends before the
    drain deadline."""
    python, record = slow_first_event_python(tmp_path, "gil", 1.5 * STALL_MS / 1000)
    rc, err, store, outs, _ = _run_with_worker_fault(
        tmp_path, "gil_worker_job", 2, lambda pid: await_slow_part(record, tmp_path / "driver.log"),
        ["--conf", f"spark.lineage.stallTimeoutMs={STALL_MS}"], python=python)
    assert rc == 0, err[-3000:]
    assert "did not answer" not in err and "restarting it" not in err and OFF_LINE not in err, err[-3000:]
    expected = pyspark_edges(orders_csv(tmp_path))
    for o in outs:
        assert edges(store, f"file:{o}") == expected, o
    slow = [float(x) for x in record.read_text().split()]
    assert len(slow) == 1 and slow[0] > STALL_MS / 1000, slow


def test_a_hung_worker_is_kept_while_the_job_runs_and_stopped_at_the_drain_deadline(tmp_path: Path) -> None:
    """The worker's first event never returns while its heartbeat goes on (a deadlock in Python). It is
    not taken for a frozen one during the job; once the application has ended it is stopped at the drain
    deadline, not restarted, and the lines count exactly the events it held up."""
    python, _ = slow_first_event_python(tmp_path, "hang", 0)
    store, outs = tmp_path / "lineage.duckdb", [tmp_path / f"out{i}" for i in range(3)]
    args = without_confs(capture_args(store), "spark.lineage.python")
    args += ["--conf", f"spark.lineage.python={python}", "--conf", f"spark.lineage.stallTimeoutMs={STALL_MS}",
             "--conf", "spark.lineage.drainTimeoutMs=5000"]
    rc, stdout, err = run_job([*args, *pyspark_job(tmp_path, "hung_worker_job", outs)], tmp_path)
    assert rc == 0 and all((o / "_SUCCESS").exists() for o in outs), stdout[-2000:] + err[-3000:]
    assert "did not answer" not in err, err[-3000:]
    assert err.count("is alive but did not finish its work by the end of the drain") == 1, err[-3000:]
    off = [line for line in err.splitlines() if OFF_LINE in line]
    assert len(off) == 1 and "did not finish within spark.lineage.drainTimeoutMs=5000 ms" in off[0], err[-3000:]
    assert "restarting it and replaying" not in err and "gave up waiting" not in err, err[-3000:]
    total = re.findall(r"(\d+) lineage events of this run were not captured", err)
    stored = len([o for o in outs if edges(store, f"file:{o}")]) if store.exists() else 0
    assert total and stored + int(total[0]) == len(outs), err[-3000:]
