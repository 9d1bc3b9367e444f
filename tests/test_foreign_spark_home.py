"""A Spark installation that is not the pip one drives capture installed here.

``LINEAGE_TEST_OTHER_SPARK_HOME`` names the other PySpark line's Spark home (``make test``
and ``make test-spark35`` set it to each other's when both virtualenvs exist): its
``spark-submit``, with the flags ``lineage-listener spark-conf`` prints here, runs a job
on that Spark; the jar (Java 8 bytecode) loads there and this Python's worker talks to it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pyspark
import pytest

OTHER = os.environ.get("LINEAGE_TEST_OTHER_SPARK_HOME")
ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not OTHER, reason="no second Spark installation (LINEAGE_TEST_OTHER_SPARK_HOME)")


def test_other_spark_home_spark_submit_with_our_flags(tmp_path):
    store = tmp_path / "lineage.duckdb"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_GATEWAY_PORT",
                                                            "PYSPARK_GATEWAY_SECRET")}
    flags = subprocess.run([sys.executable, "-m", "lineage_listener", "spark-conf", "--store", str(store)],
                           capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.appName("foreign_home").getOrCreate()
        print("SPARK_VERSION", spark.version)
        spark.range(3).selectExpr("id", "id * 2 AS twice").write.mode("overwrite").parquet({str(tmp_path / 'out')!r})
        spark.stop()
    """))
    env.update(SPARK_HOME=OTHER, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    done = subprocess.run([str(Path(OTHER) / "bin" / "spark-submit"), "--master", "local[1]",
                           "--conf", "spark.ui.enabled=false", *flags, str(job)], env=env, capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    other_version = done.stdout.split("SPARK_VERSION", 1)[1].split()[0]
    assert other_version.split(".")[0] != pyspark.__version__.split(".")[0] or other_version != pyspark.__version__
    with duckdb.connect(str(store), read_only=True) as con:
        got = set(con.execute("SELECT target_column, source_column, transform FROM column_lineage").fetchall())
        version = con.execute("SELECT spark_version FROM runs").fetchone()[0]
    assert got == {("id", "id", "identity"), ("twice", "id", "derived")}
    assert version == other_version
