"""A run's place among the runs a scheduler launched: its parent and root, and the runs under it.

A Spark application that Airflow launched names its task (parent) and DAG run (root) by their
OpenLineage run ids (``runs.parent_*``, ``runs.root_parent_*``; ``docs/reference/store.md``). When
Airflow's own events are ingested too, the store holds the DAG run as a run
(``openlineage:<DAG run id>``) and each task as one of its queries (``openlineage:<task run id>``):
then the parent and root link to them, and the DAG run lists the Spark runs under it.

>>> import duckdb; from lineage_listener.store.schema import ensure_schema
>>> con = duckdb.connect(); _ = ensure_schema(con)
>>> _ = con.execute("INSERT INTO runs (run_id, app_name) VALUES ('openlineage:d1', 'etl')")
>>> _ = con.execute("INSERT INTO queries (query_id, run_id) VALUES ('openlineage:t1', 'openlineage:d1')")
>>> _ = con.execute("INSERT INTO runs (run_id, app_name, parent_job_name, parent_run_id, root_parent_job_name, "
...                 "root_parent_run_id) VALUES ('local-1', 'job', 'etl.load', 't1', 'etl', 'd1')")
>>> f = family(con, "local-1")
>>> f["parent"]["query_id"], f["parent"]["run_id"], f["root"]["run_id"]
('openlineage:t1', 'openlineage:d1', 'openlineage:d1')
>>> [c["run_id"] for c in family(con, "openlineage:d1")["children"]]
['local-1']
"""
from __future__ import annotations

from typing import Any

import duckdb

#: How an ingested OpenLineage run's id is stored (``openlineage/ingest.py``).
PREFIX = "openlineage:"


def family(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """``{"parent", "root", "children"}`` of ``run_id``: the parent (a task: its job and run id, and
    its ``queries`` row and run when the store holds them) and the root (a DAG run: its job and run
    id, and its ``runs`` row when held), null when not given; the runs launched under it."""
    row = con.execute("""SELECT parent_job_namespace, parent_job_name, parent_run_id, root_parent_job_namespace,
                                root_parent_job_name, root_parent_run_id FROM runs WHERE run_id = ?""",
                      [run_id]).fetchone() or (None,) * 6
    parent = root = None
    if row[2]:
        task = con.execute("SELECT query_id, run_id FROM queries WHERE query_id = ?", [PREFIX + row[2]]).fetchone()
        parent = {"namespace": row[0], "name": row[1], "run_id": task[1] if task else None,
                  "openlineage_run_id": row[2], "query_id": task[0] if task else None}
    if row[5]:
        held = con.execute("SELECT run_id FROM runs WHERE run_id = ?", [PREFIX + row[5]]).fetchone()
        root = {"namespace": row[3], "name": row[4], "openlineage_run_id": row[5], "run_id": held[0] if held else None}
    return {"parent": parent, "root": root, "children": children(con, run_id)}


def children(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """The runs launched under ``run_id``: whose root or parent is it, or one of its tasks (queries)."""
    if not run_id.startswith(PREFIX):
        return []
    own = run_id[len(PREFIX):]
    rows = con.execute(
        """SELECT r.run_id, r.app_name, r.started_at, r.ended_at, r.parent_job_name
           FROM runs r
           WHERE r.root_parent_run_id = $own OR r.parent_run_id = $own
              OR $prefix || r.parent_run_id IN (SELECT query_id FROM queries WHERE run_id = $run)
           ORDER BY r.started_at NULLS LAST, r.run_id""",
        {"own": own, "prefix": PREFIX, "run": run_id}).fetchall()
    keys = ("run_id", "app_name", "started_at", "ended_at", "task")
    return [dict(zip(keys, r)) for r in rows]
