"""Zero-code capture on a Spark Connect server; a Connect client (no py4j) runs the pipeline."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
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


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Connect server exited:\n{proc.stdout.read()[-3000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise RuntimeError("Connect server did not open its port")


def test_connect_server_with_spark_conf_flags_captures_client_pipelines(tmp_path):
    store, port = tmp_path / "lineage.duckdb", free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}
    flags = subprocess.run([sys.executable, "-m", "lineage_listener", "spark-conf", "--store", str(store)],
                           capture_output=True, text=True, env=env, check=True).stdout.split()
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("spark-submit")), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         *flags, "--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--name", "connect-lineage",
         "spark-internal"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_port(port, server)
        client = tmp_path / "client.py"
        client.write_text(textwrap.dedent(f"""
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
        """))
        proc = subprocess.run([sys.executable, str(client)], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[:3000]
        assert "ENABLE:" in proc.stdout and "Spark Connect client" in proc.stdout
        assert "spark-conf" in proc.stdout  # points to the server-side flags
    finally:
        server.terminate()
        server.wait(60)
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
