"""Zero-code capture on a Spark Connect server; a Connect client (no py4j) runs the pipeline.

The server's log goes to a file: Spark logs at INFO to the console, and a pipe nobody reads fills
(64 KiB) and blocks every thread that logs (the stream's own thread first), so a client waiting on
the server would hang.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyspark
import pytest

from tests.server_helpers import ROOT, free_port

pytest.importorskip("grpc", reason="the connect extra (grpcio, pandas, pyarrow) is needed for a Connect client")
SPARK_HOME = Path(pyspark.__file__).parent
CONNECT_JAR = sorted(SPARK_HOME.glob("jars/spark-connect_*.jar"))
pytestmark = pytest.mark.skipif(not CONNECT_JAR, reason=f"PySpark {pyspark.__version__} ships no Spark Connect "
                                                        "server jar (3.5 fetches it from Maven at run time)")


ENV = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}


def wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Connect server exited:\n{log.read_text()[-3000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise RuntimeError("Connect server did not open its port")


@contextlib.contextmanager
def connect_server(tmp_path: Path, store: Path) -> Iterator[int]:
    """A Connect server started with the ``spark-conf`` flags (its log in ``server.log``); its port.
    Stopped at the end: the application ends, so capture drains into ``store``."""
    port, log = free_port(), tmp_path / "server.log"
    flags = subprocess.run([sys.executable, "-m", "lineage_listener", "spark-conf", "--store", str(store)],
                           capture_output=True, text=True, env=ENV, check=True).stdout.split()
    with open(log, "w") as sink:
        server = subprocess.Popen(
            [str(Path(sys.executable).with_name("spark-submit")), "--master", "local[2]", "--conf",
             "spark.ui.enabled=false", "--conf", f"spark.connect.grpc.binding.port={port}", "--conf",
             "spark.connect.grpc.binding.address=127.0.0.1", *flags, "--class",
             "org.apache.spark.sql.connect.service.SparkConnectServer", "--name", "connect-lineage", "spark-internal"],
            env=ENV, stdout=sink, stderr=subprocess.STDOUT, text=True)
    try:
        wait_port(port, server, log)
        yield port
    finally:
        server.terminate()
        try:
            server.wait(120)
        except subprocess.TimeoutExpired:  # never leave a server behind; the test has failed already
            server.kill()
            server.wait()


def run_client(tmp_path: Path, code: str) -> subprocess.CompletedProcess:
    client = tmp_path / "client.py"
    client.write_text(textwrap.dedent(code))
    proc = subprocess.run([sys.executable, str(client)], capture_output=True, text=True, env=ENV, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:] + (tmp_path / "server.log").read_text()[-3000:]
    return proc


def test_connect_server_with_spark_conf_flags_captures_client_pipelines(tmp_path):
    store = tmp_path / "lineage.duckdb"
    with connect_server(tmp_path, store) as port:
        proc = run_client(tmp_path, f"""
            from pyspark.sql import SparkSession
            import lineage_listener
            for i in (1, 2):  # two client sessions
                spark = SparkSession.builder.remote("sc://127.0.0.1:{port}").create()
                spark.createDataFrame([(1, "a@x", 3.0)], ["id", "email", "amount"]) \\
                    .write.mode("overwrite").parquet(f"{tmp_path}/in{{i}}")
                spark.read.parquet(f"{tmp_path}/in{{i}}").selectExpr("id", "sha2(email, 256) AS h", "amount * 2 AS a") \\
                    .write.mode("overwrite").parquet(f"{tmp_path}/out{{i}}")
                try:
                    lineage_listener.enable(spark)
                except TypeError as exc:
                    print("ENABLE:", exc)
                spark.stop()
        """)
        assert "ENABLE:" in proc.stdout and "Spark Connect client" in proc.stdout
        assert "spark-conf" in proc.stdout  # points to the server-side flags
    with duckdb.connect(str(store), read_only=True) as con:
        for i in (1, 2):
            got = set(con.execute("SELECT target_column, source_column, transform, masking FROM column_lineage "
                                  "WHERE target_dataset = ?", [f"file:{tmp_path}/out{i}"]).fetchall())
            assert got == {("id", "id", "identity", False), ("h", "email", "derived", True),
                           ("a", "amount", "derived", False)}
        assert con.execute("SELECT app_name FROM runs").fetchall() == [("connect-lineage",)]
        writes = con.execute("SELECT count(DISTINCT target_dataset) FROM queries WHERE target_dataset LIKE '%/out%' "
                             "OR target_dataset LIKE '%/in%'").fetchone()[0]
        assert writes == 4


def test_connect_client_streams_are_captured(tmp_path):
    """A Connect client's streams: a file stream over several micro-batches (enough server log to fill
    a pipe) and a foreachBatch stream; the stream's edges, its batch count, and foreachBatch writes
    with the stream's sources."""
    store, src = tmp_path / "lineage.duckdb", tmp_path / "in"
    src.mkdir()
    (src / "0.json").write_text(json.dumps({"id": 0, "name": "ann"}) + "\n")
    out, fb = tmp_path / "out", tmp_path / "fb"
    with connect_server(tmp_path, store) as port:
        run_client(tmp_path, f"""
            import json, os
            from pyspark.sql import SparkSession
            spark = SparkSession.builder.remote("sc://127.0.0.1:{port}").create()
            stream = spark.readStream.schema("id INT, name STRING").json("{src}").selectExpr("id", "upper(name) AS u")
            q = (stream.writeStream.format("parquet").option("path", "{out}")
                 .option("checkpointLocation", "{tmp_path}/ck").start())
            for i in range(1, 6):  # a micro-batch per file
                q.processAllAvailable()
                with open("{tmp_path}/next.tmp", "w") as f:
                    f.write(json.dumps({{"id": i, "name": "bob"}}) + "\\n")
                os.rename("{tmp_path}/next.tmp", f"{src}/{{i}}.json")
            q.processAllAvailable()
            q.stop()

            def each(df, batch_id):
                df.selectExpr("id", "concat(u, '!') AS shout").write.mode("append").parquet("{fb}")
            q = stream.writeStream.foreachBatch(each).option("checkpointLocation", "{tmp_path}/ck_fb").start()
            q.processAllAvailable()
            q.stop()
            spark.stop()
        """)
    s_in = f"file:{src}"
    with duckdb.connect(str(store), read_only=True) as con:
        def edges(target: str) -> set[tuple]:
            return set(con.execute("SELECT target_column, source_dataset, source_column, transform FROM "
                                   "column_lineage WHERE target_dataset = ?", [target]).fetchall())
        assert edges(f"file:{out}") == {("id", s_in, "id", "identity"), ("u", s_in, "name", "derived")}
        assert edges(f"file:{fb}") == {("id", s_in, "id", "identity"), ("shout", s_in, "name", "derived")}
        assert con.execute("SELECT first_batch_id, last_batch_id, batch_count FROM streams WHERE target_dataset = ?",
                           [f"file:{out}"]).fetchall() == [(0, 5, 6)]
