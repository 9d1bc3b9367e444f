"""The ``spark-submit`` arguments that turn on zero-code capture.

>>> " ".join(spark_submit_args("/data/lineage.duckdb"))   # doctest: +SKIP
'--jars /home/me/.cache/lineage-listener/lineage-bridge-....jar --conf spark.sql.queryExecutionListeners=lineage.bridge.LineageBridgeListener --conf spark.lineage.store=/data/lineage.duckdb --conf spark.lineage.python=/venv/bin/python'
"""
from __future__ import annotations

import os
import site
import sys
from pathlib import Path

from lineage_listener.bridge import LISTENER_CLASS, STREAM_LISTENER_CLASS
from lineage_listener.jar import bridge_jar


def package_root() -> Path:
    """The directory that holds the ``lineage_listener`` package."""
    return Path(__file__).resolve().parent.parent.parent


def needs_python_path(root: Path | None = None) -> bool:
    """True when the package is not in a site directory (a source checkout or editable install).

    Then the worker, started from the job's working directory, needs the
    checkout on its ``PYTHONPATH`` to import the package.
    """
    root = (root or package_root()).resolve()
    sites = [*site.getsitepackages(), site.getusersitepackages()]
    return not any(Path(s).resolve() == root for s in sites if s)


def spark_conf(store: str | os.PathLike | None, python: str | None = None,
               kafka: tuple[str, str] | None = None) -> dict[str, str]:
    """The ``--conf`` settings, in order: listener class, store, Kafka (bootstrap, topic), worker Python
    (and its path). With ``kafka`` and no ``store``, lineage goes to the topic only."""
    conf = {
        "spark.sql.queryExecutionListeners": LISTENER_CLASS,
        "spark.sql.streaming.streamingQueryListeners": STREAM_LISTENER_CLASS,
    }
    if store is not None:
        conf["spark.lineage.store"] = str(Path(store).expanduser().resolve())
    if kafka is not None:
        conf["spark.lineage.kafka.bootstrap"], conf["spark.lineage.kafka.topic"] = kafka
    conf["spark.lineage.python"] = python or sys.executable
    if needs_python_path():
        conf["spark.lineage.pythonPath"] = str(package_root())
    return conf


def spark_submit_args(store: str | os.PathLike | None, python: str | None = None,
                      kafka: tuple[str, str] | None = None) -> list[str]:
    """``--jars <bridge jar> --conf k=v ...``, building the jar if it is not cached."""
    args = ["--jars", str(bridge_jar())]
    for key, value in spark_conf(store, python, kafka).items():
        args += ["--conf", f"{key}={value}"]
    return args
