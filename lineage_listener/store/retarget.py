"""A nested write's target renamed in the batch itself, before anything is written.

A CTAS or ``saveAsTable`` fires an inner ``InsertInto...`` event that names the table's
*path*, then a wrapper event naming the *table*; the recorder adds a ``retarget`` instruction
(``query_id``, table, path). Both events almost always land in one batch: then the inner
query's edges are given the table here, and the path's ``datasets`` / ``dataset_columns`` rows
are dropped when nothing else in the batch names the path. The store then never holds the
path-named edges, and no SQL reads them back, rewrites them or scans the store for other users
of the path. A retarget whose inner write went in an earlier batch stays an instruction for
:func:`lineage_listener.store.captures.retarget`.

>>> rows = {"queries": [("q", "r", "command", "Insert", None, "succeeded", None, 1, "t", "file:/w/t"),
...                     ("q", "r", "command", "CTAS", None, "succeeded", None, 1, "t", "db.t")],
...         "datasets": [("file:/w/t", "path", "parquet", None, None, "t", "t")],
...         "dataset_columns": [("file:/w/t", "a", "int", True, "t", "t", 1)],
...         "column_lineage": [("q", "r", "file:/w/t", "a", "db.s", "a", "identity", "direct", "a", False, "t")],
...         "retarget": [("q", "db.t", "file:/w/t")]}
>>> out = fold(rows)
>>> [r[2] for r in out["column_lineage"]], out["datasets"], out["dataset_columns"], out["retarget"]
(['db.t'], [], [], [])
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lineage_listener.store.rows import EdgeRow, QueryRow

_Q = QueryRow._fields
_E = EdgeRow._fields
_QID, _QTARGET = _Q.index("query_id"), _Q.index("target_dataset")
_EQ, _ETARGET, _ESOURCE = _E.index("query_id"), _E.index("target_dataset"), _E.index("source_dataset")

Rows = Mapping[str, Sequence[tuple[Any, ...]]]


def fold(rows: Rows) -> dict[str, list[tuple[Any, ...]]]:
    """``rows`` (a batch's, per table) with every retarget whose inner write is in them applied;
    the others stay as instructions. The input is not changed (a batch may be written again)."""
    pending = list(rows.get("retarget", ()))
    if not pending:
        return {table: list(r) for table, r in rows.items()}
    inner = {(r[_QID], r[_QTARGET]) for r in rows.get("queries", ())}
    here = {query_id: (target, previous) for query_id, target, previous in pending
            if (query_id, previous) in inner}  # the inner write's own queries row: its edges are all here
    out = {table: list(r) for table, r in rows.items()}
    if not here:
        return out
    out["retarget"] = [r for r in pending if r[0] not in here]
    out["column_lineage"] = [
        r[:_ETARGET] + (here[r[_EQ]][0],) + r[_ETARGET + 1:] if r[_EQ] in here and r[_ETARGET] == here[r[_EQ]][1] else r
        for r in out.get("column_lineage", ())]
    used = _named(out)
    gone = {previous for _, previous in here.values() if previous not in used}
    for table in ("datasets", "dataset_columns"):
        out[table] = [r for r in out.get(table, ()) if r[0] not in gone]
    return out


def _named(rows: Rows) -> set[Any]:
    """Datasets the batch still names as an edge's end or a query's target (a query's last row
    is the one written: an inner write's first row is replaced by its wrapper's)."""
    last = {r[_QID]: r[_QTARGET] for r in rows.get("queries", ())}
    names = set(last.values())
    for r in rows.get("column_lineage", ()):
        names.add(r[_ETARGET])
        names.add(r[_ESOURCE])
    return names
