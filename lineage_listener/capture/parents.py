"""The run that launched this Spark application, as a scheduler passes it in the Spark conf.

Airflow's OpenLineage provider gives ``spark-submit`` the task's identity, and its DAG run's, in
OpenLineage's conf keys (:data:`KEYS`): the parent is the task (job ``<dag_id>.<task_id>``, a run
UUID), the root the DAG run (job ``<dag_id>``). Capture reads them once per application, in
process and zero-code alike, into the run's facts; they become the ``runs`` row's parent and root
columns (``docs/reference/store.md``) and OpenLineage's ``parent`` run facet on export
(``docs/openlineage.md``). Read only: capture sends nothing to the scheduler.

>>> class Conf:
...     def get(self, key, default):
...         return {"spark.openlineage.parentRunId": " 0190d1c4-5b8a-7e1f-9f65-1a2b3c4d5e6f "}.get(key, default)
>>> of_conf(Conf())["parent_run_id"], of_conf(Conf())["root_parent_run_id"]
('0190d1c4-5b8a-7e1f-9f65-1a2b3c4d5e6f', None)
"""
from __future__ import annotations

from typing import Any

from lineage_listener.capture.jvm import jvm_call_failed

#: Run fact (and ``runs`` column) -> the Spark conf key Airflow's OpenLineage provider sets.
KEYS = {
    "parent_job_namespace": "spark.openlineage.parentJobNamespace",
    "parent_job_name": "spark.openlineage.parentJobName",
    "parent_run_id": "spark.openlineage.parentRunId",
    "root_parent_job_namespace": "spark.openlineage.rootParentJobNamespace",
    "root_parent_job_name": "spark.openlineage.rootParentJobName",
    "root_parent_run_id": "spark.openlineage.rootParentRunId",
}
#: A value longer than this is cut (a conf value is the user's text).
MAX_LENGTH = 1000


def of_conf(conf: Any) -> dict[str, str | None]:
    """The parent and root facts from a JVM ``SparkConf`` (one call per key, once per application);
    a key that is not set, or cannot be read, is None."""
    out: dict[str, str | None] = {}
    for fact, key in KEYS.items():
        try:
            value = conf.get(key, None)
        except jvm_call_failed():
            value = None
        text = str(value).strip()[:MAX_LENGTH] if value is not None else ""
        out[fact] = text or None
    return out
