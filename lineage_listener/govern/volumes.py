"""How many rows each side of a diff wrote into each dataset, and which changed by more than a factor.

A job that suddenly writes no rows, or a tenth of them, leaves its lineage unchanged: only the
counts Spark measured for its writes (``write_statistics``, ``docs/reference/store.md``) show it.
Each side's writes are its queries with a target (a run's, or those captured in a window), their
rows summed per dataset under its canonical name (a table and its path are one dataset). A dataset
is listed when both sides wrote it, measured, and the new count is more than ``factor`` times the
old one or less than the old one divided by it; a side that wrote 0 rows where the other wrote some
is always listed.

>>> changed(100, 0, 10.0), changed(100, 9, 10.0), changed(100, 11, 10.0), changed(0, 0, 2.0)
(True, True, False, False)
"""
from __future__ import annotations

from typing import Any

import duckdb


def changed(old: int, new: int, factor: float) -> bool:
    """Whether ``new`` rows differ from ``old`` by more than ``factor`` (0 against some: always)."""
    if old == new:
        return False
    if old == 0 or new == 0:
        return True
    return new > old * factor or new * factor < old


def written(con: duckdb.DuckDBPyConnection, where: str, params: dict[str, Any], db: str = "") -> dict[str, int]:
    """Rows written per dataset (canonical name) by the queries ``q`` chosen by ``where``."""
    rows = con.execute(f"""SELECT coalesce(a.dataset, q.target_dataset), sum(w.rows) FROM {db}queries q
                           JOIN {db}write_statistics w ON w.query_id = q.query_id
                           LEFT JOIN {db}lineage_dataset_aliases a ON a.alias = rtrim(q.target_dataset, '/')
                           WHERE q.target_dataset IS NOT NULL AND w.rows IS NOT NULL AND {where}
                           GROUP BY 1""", params).fetchall()
    return {dataset: int(n) for dataset, n in rows}


def row_changes(old: dict[str, int], new: dict[str, int], factor: float) -> list[dict[str, Any]]:
    """The datasets both sides wrote whose rows changed by more than ``factor``, by name.

    >>> row_changes({"t": 100, "u": 5}, {"t": 0, "u": 6, "v": 1}, 10.0)
    [{'dataset': 't', 'old_rows': 100, 'new_rows': 0, 'ratio': 0.0}]
    """
    out = []
    for dataset in sorted(set(old) & set(new)):
        if changed(old[dataset], new[dataset], factor):
            ratio = new[dataset] / old[dataset] if old[dataset] else None
            out.append({"dataset": dataset, "old_rows": old[dataset], "new_rows": new[dataset], "ratio": ratio})
    return out
