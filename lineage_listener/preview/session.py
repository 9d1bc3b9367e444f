"""The throwaway local Spark session a preview analyzes SQL in.

``local[1]``, no UI, an in-memory catalog and a warehouse in a temporary folder: whatever the
previewed file creates there is gone when the preview ends. The JVM's own output (log lines,
progress bars) goes to ``spark.log`` in that folder instead of the terminal, so a preview's
stdout is its answer and its stderr at most one line. Spark's analyzer is the session's own;
the bridge jar's compact plan reader is loaded as capture loads it, so a preview reads plans
exactly as capture does.
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: The JVM's stdout and stderr, under the preview's working folder.
JVM_LOG = "spark.log"

#: PySpark 4 logs every analysis error it converts (as JSON on stderr); a preview reports its own.
_PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


class SessionError(RuntimeError):
    """A preview cannot start its Spark session."""


@contextmanager
def _jvm_output_to(path: Path) -> Iterator[None]:
    """Processes started in this block write their stdout and stderr to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (fd, *saved):
            os.close(f)


@contextmanager
def local_session(workdir: Path, app_name: str, conf: Mapping[str, str] | None = None) -> Iterator[Any]:
    """A new local SparkSession for analysis only, stopped on exit.

    Refuses to run in a process that already has a SparkContext: a preview defines tables in its
    session's catalog and must never touch a real one.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from lineage_listener.capture.reading import planreader

    if SparkContext._active_spark_context is not None:
        raise SessionError("preview starts its own local Spark session, and this process already runs one: "
                           "run the preview in a process of its own (the lineage-listener preview command does)")
    warehouse = workdir / "warehouse"
    builder = (SparkSession.builder.master("local[1]").appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.sql.catalogImplementation", "in-memory")
               .config("spark.sql.warehouse.dir", str(warehouse))
               .config("spark.local.dir", str(workdir))
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC "
                       f"-Djava.io.tmpdir={workdir}"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    quiet = {name: logging.getLogger(name).level for name in _PYSPARK_ERROR_LOGGERS}
    for name in quiet:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    planreader.install_default(background=False)
    try:
        with _jvm_output_to(workdir / JVM_LOG):
            spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - no Java, a bad --conf value...
        said = [line.strip() for line in (workdir / JVM_LOG).read_text(errors="replace").splitlines() if line.strip()]
        raise SessionError(f"cannot start a local Spark session ({type(exc).__name__}: "
                           f"{(str(exc).strip().splitlines() or [''])[0][:300]})"
                           + (f"; the JVM said: {said[-1][:300]}" if said else "")) from None
    try:
        spark.sparkContext.setLogLevel("ERROR")
        yield spark
    finally:
        spark.stop()
        for name, level in quiet.items():
            logging.getLogger(name).setLevel(level)
