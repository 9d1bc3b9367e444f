"""Running a real Spark application under zero-code capture, as a user would: ``spark-submit`` with
``$(lineage-listener spark-conf --store ...)``. Plain helpers (no pytest): ``tests/retail.py``'s
pipeline runs from a shell with them (docs/governance.md)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark

REPO = Path(__file__).resolve().parent.parent
SPARK_HOME = Path(pyspark.__file__).resolve().parent
BASE_CONF = ["--master", "local[2]", "--conf", "spark.ui.enabled=false",
             "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.lineage.drainTimeoutMs=60000",
             "--driver-java-options", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"]  # short jobs: start fast


def job_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "SPARK_CONF_DIR")}
    env.update(SPARK_HOME=str(SPARK_HOME), PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    return env


def capture_args(store: Path) -> list[str]:
    """Exactly what a user runs: ``$(lineage-listener spark-conf --store STORE)``."""
    done = subprocess.run([sys.executable, "-m", "lineage_listener", "spark-conf", "--store", str(store)],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()  # never leave a hung driver behind
        proc.communicate()
        raise
    return proc.returncode, out, err
