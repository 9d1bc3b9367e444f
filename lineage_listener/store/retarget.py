"""The CTAS / ``saveAsTable`` fold, store side: a nested write's edges renamed from the table's path to the table.

Why a CTAS or ``saveAsTable`` fires two events, and which rows capture makes of them:
:mod:`lineage_listener.capture.recording.wrappers`. The store receives the nested write's rows (edges into
the table's *path*, the path's ``datasets`` / ``dataset_columns`` rows), the upgraded ``queries``
row, the table's dataset and columns, and a :class:`~lineage_listener.store.rows.Retarget`
instruction (``query_id``, table, path). This module applies it, whichever batch each part is in:

- :func:`in_batch`: both in one batch (the usual case): the query's edges are given the table in the
  batch itself, and the path's rows are dropped when nothing else in the batch names the path; the
  store never holds the path-named edges;
- :func:`in_store`: the nested write went in an earlier batch: its stored edges name the table now
  (captures keep their time; an edge the query then holds twice is kept once), and the path's
  dataset goes when no edge or query names it any more.

Either way the store ends up the same: one ``queries`` row targeting the table, the table's
dataset (its ``location`` the path) and columns, and edges into the table.

>>> rows = {"queries": [("q", "r", "command", "Insert", None, "succeeded", None, 1, "t", "file:/w/t"),
...                     ("q", "r", "command", "CTAS", None, "succeeded", None, 1, "t", "db.t")],
...         "datasets": [("file:/w/t", "path", "parquet", None, None, "t", "t")],
...         "dataset_columns": [("file:/w/t", "a", "int", True, "t", "t", 1)],
...         "column_lineage": [("q", "r", "file:/w/t", "a", "db.s", "a", "identity", "direct", "a", False, "t")],
...         "retarget": [("q", "db.t", "file:/w/t")]}
>>> out = in_batch(rows)
>>> [(r.query_id, r.target_dataset) for r in out["column_lineage"]], out["datasets"], out["retarget"]
([('q', 'db.t')], [], [])
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import duckdb

from lineage_listener.store.captures import write_edges
from lineage_listener.store.rows import DatasetColumnRow, DatasetRow, EdgeRow, QueryRow, Retarget, typed

Rows = Mapping[str, Sequence[tuple[Any, ...]]]


def in_batch(rows: Rows) -> dict[str, list[tuple[Any, ...]]]:
    """``rows`` (a batch's, per table) with every retarget whose inner write is in them applied;
    the others stay as instructions. The input is not changed (a batch may be written again)."""
    out = {table: list(r) for table, r in rows.items()}
    pending = typed(Retarget, rows.get(Retarget.TABLE, ()))
    if not pending:
        return out
    queries = typed(QueryRow, rows.get(QueryRow.TABLE, ()))
    inner = {(q.query_id, q.target_dataset) for q in queries}
    here = {r.query_id: r for r in pending
            if (r.query_id, r.previous_target) in inner}  # the inner write's own queries row: its edges are all here
    if not here:
        return out
    out[Retarget.TABLE] = [r for r in pending if r.query_id not in here]
    edges = typed(EdgeRow, rows.get(EdgeRow.TABLE, ()))
    out[EdgeRow.TABLE] = [
        e._replace(target_dataset=here[e.query_id].target_dataset)
        if e.query_id in here and e.target_dataset == here[e.query_id].previous_target else e for e in edges]
    used = _named(queries, out[EdgeRow.TABLE])
    gone = {r.previous_target for r in here.values() if r.previous_target not in used}
    for cls in (DatasetRow, DatasetColumnRow):
        out[cls.TABLE] = [r for r in typed(cls, rows.get(cls.TABLE, ())) if r.dataset not in gone]
    return out


def in_store(con: duckdb.DuckDBPyConnection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Retargets whose inner write went in an earlier batch (those :func:`in_batch` left): its edges
    name the table now, and each path goes if nothing else uses it. A batch's retargets are
    looked up together: which of their queries the store holds edges of, then which of their
    paths are still named, in one query each (applying them one by one ends the same: a retarget
    changes only its own query's edges' targets, so whether a path is named is known after all)."""
    todo = typed(Retarget, rows)
    if not todo:
        return
    held = {q for (q,) in con.execute("SELECT DISTINCT query_id FROM edge_captures WHERE query_id IN "
                                      "(SELECT unnest($1))", [sorted({r.query_id for r in todo})]).fetchall()}
    for r in todo:
        if r.query_id in held:
            _retarget_edges(con, r.query_id, r.target_dataset)
    _forget_unused_paths(con, sorted({r.previous_target for r in todo if r.previous_target}))


def _named(queries: Iterable[QueryRow], edges: Iterable[EdgeRow]) -> set[Any]:
    """Datasets the batch still names as an edge's end or a query's target (a query's last row
    is the one written: an inner write's first row is replaced by its wrapper's)."""
    names = set({q.query_id: q.target_dataset for q in queries}.values())
    for e in edges:
        names.add(e.target_dataset)
        names.add(e.source_dataset)
    return names


def _retarget_edges(con: duckdb.DuckDBPyConnection, query_id: str, target: str) -> None:
    """Every stored edge of ``query_id`` now names ``target`` as its target dataset; captures keep
    their time, and an edge the query then holds twice is kept once."""
    rows = con.execute(f"""SELECT {", ".join("? AS target_dataset" if c == "target_dataset" else c
                                             for c in EdgeRow._fields)}
                           FROM column_lineage WHERE query_id = ? ORDER BY captured_at""",
                       [target, query_id]).fetchall()
    con.execute("DELETE FROM edge_captures WHERE query_id = ?", [query_id])
    write_edges(con, rows)


def _forget_unused_paths(con: duckdb.DuckDBPyConnection, datasets: list[str]) -> None:
    """Drop each ``path`` dataset of ``datasets`` that no edge or query names any more (a table's
    location seen first).

    The edges naming them are found through the indexes on either end, their captures through
    each edge's list of sets: no scan of the store's history.
    """
    if not datasets:
        return
    unused = [r[0] for r in con.execute(
        """WITH p AS (SELECT unnest($1) AS dataset),
           held AS (SELECT target_dataset AS dataset, unnest(sets) AS set_id FROM edges
                    WHERE target_dataset IN (SELECT dataset FROM p)
                    UNION ALL SELECT source_dataset, unnest(sets) FROM edges
                    WHERE source_dataset IN (SELECT dataset FROM p)),
           used AS (SELECT h.dataset FROM held h WHERE h.set_id IN (
                        SELECT set_id FROM edge_captures WHERE set_id IN (SELECT set_id FROM held) OFFSET 0)
                    UNION SELECT target_dataset FROM queries WHERE target_dataset IN (SELECT dataset FROM p))
           SELECT dataset FROM p WHERE dataset NOT IN (SELECT dataset FROM used WHERE dataset IS NOT NULL)""",
        [datasets]).fetchall()]
    if unused:
        con.execute("DELETE FROM dataset_columns WHERE dataset IN (SELECT unnest($1)) AND dataset IN "
                    "(SELECT dataset FROM datasets WHERE kind = 'path')", [unused])
        con.execute("DELETE FROM datasets WHERE dataset IN (SELECT unnest($1)) AND kind = 'path'", [unused])
