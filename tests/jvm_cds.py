"""Spark's JVM classes archived once for the suite, so every Spark application a test starts loads faster.

A JVM spends most of a short Spark application's start loading and verifying Spark's classes. The
JDK's class-data sharing (CDS) maps them from an archive instead: a ``spark-submit`` job of the suite
takes about a third less CPU with it. The archive belongs to one PySpark install (its jars' paths) and
one JDK; a JVM that cannot use it (another Spark home, another JDK, jars changed) runs as if there
were none, so the archive changes how fast the suite runs, never what it checks.

``python -m tests.jvm_cds ARCHIVE`` runs the four retail jobs (``tests/retail.py``) as one application
under zero-code capture, whose JVM writes the classes it loaded to ``ARCHIVE`` when it exits
(``make test`` makes ``.venv/spark-cds.jsa``, ``make test-spark35`` the 3.5 line's).
``conftest.py`` hands the archive of the running virtualenv, when there is one, to every Spark
application of the session through ``SPARK_SUBMIT_OPTS`` (:func:`submit_opts`).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: The archive of the running virtualenv's PySpark.
ARCHIVE = Path(sys.prefix) / "spark-cds.jsa"
#: The JVM says nothing about the archive (a JVM that cannot map it would print a warning on stdout).
QUIET = "-Xlog:cds=off,cds+dynamic=off"


def submit_opts(archive: Path = ARCHIVE) -> str | None:
    """``SPARK_SUBMIT_OPTS`` that map Spark's classes from ``archive``; None when there is no archive.

    >>> submit_opts(Path("/nonexistent.jsa")) is None
    True
    """
    return f"-XX:SharedArchiveFile={archive} {QUIET}" if archive.is_file() else None


def make(archive: Path) -> None:
    """Run the retail jobs as one application whose JVM archives the classes it loaded into ``archive``."""
    from tests import retail
    from tests.test_bridge_jobs import BASE_CONF, SPARK_HOME, capture_args, job_env

    archive = archive.absolute()  # the JVM runs in a folder of its own
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(archive.name + ".partial")
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="lineage-cds-") as tmp:
        root = Path(tmp)
        retail.write_raw(root)
        base = [a for a in BASE_CONF if a not in ("--driver-java-options", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")]
        conf = [a if not a.startswith("-Dderby") else f"{a} -XX:ArchiveClassesAtExit={partial} {QUIET}"
                for a in retail.hive_conf(root)]
        env = {k: v for k, v in job_env().items() if k != "SPARK_SUBMIT_OPTS"}
        done = subprocess.run([str(SPARK_HOME / "bin" / "spark-submit"), *base, *conf,
                               *capture_args(root / "lineage.duckdb"), str(Path(__file__).resolve()), "--job",
                               str(root)], cwd=root, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0 or not partial.is_file():
        raise SystemExit(f"no class archive ({done.returncode}): " + (done.stdout + done.stderr)[-3000:])
    partial.replace(archive)  # a run stopped half-way leaves no archive behind


def job(root: Path) -> None:
    """Inside ``spark-submit``: the four retail jobs in one application."""
    from pyspark.sql import SparkSession

    from tests import retail

    spark = SparkSession.builder.appName("lineage_cds").enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for step in retail.STEPS.values():
        step(spark, root)
    spark.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--job"]:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        job(Path(sys.argv[2]))
    else:
        make(Path(sys.argv[1]) if sys.argv[1:] else ARCHIVE)
        print(f"Spark's classes archived in {sys.argv[1] if sys.argv[1:] else ARCHIVE}")
