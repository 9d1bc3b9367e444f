"""What changed between two sides of lineage: datasets, columns and edges added or removed, and
edges whose transform, kind, expression or masking changed.

Two edges are the same step when they join the same target column to the same source column
(``target_column`` None: a dataset-level filter, join, group or sort key). A step on both
sides made another way is *changed*: ``before`` / ``after`` list the records (transform,
kind, expression, masking) only one side has. An edge on one side only, with nothing in its
place on the other (a new step, or a step that gained or lost a record), is *added* or
*removed*. A dataset or column is on a side when one of
its edges starts or ends there; the columns of a dataset added or removed as a whole are not
listed again. Edges are written as ``upstream --format json`` writes them (``source`` and
``target`` objects, ``transform``, ``kind``, ``expression``, ``masking``, the last capture).

Both sides are materialized in DuckDB under canonical dataset names (a table and its storage
path are one dataset, ``docs/reference/datasets.md``) and compared there: only what differs
comes back to Python, so comparing two weeks of a whole store costs what DuckDB needs to join
them, not a Python object per edge.

>>> import duckdb
>>> con = duckdb.connect()
>>> _ = con.execute("CREATE TABLE lineage_dataset_aliases (alias TEXT, dataset TEXT)")
>>> old = edges_side("old", [DistinctEdge("t", "x", "s", "a", "derived", "direct", "a * 2", False)])
>>> new = edges_side("new", [DistinctEdge("t", "x", "s", "a", "derived", "direct", "a * 3", False),
...                          DistinctEdge("t", "y", "s", "b", "identity", "direct", "b", False)])
>>> d = compare(con, old, new)
>>> [(i["item"], i.get("column") or i["target"]["column"]) for i in d.added]
[('column', 'b'), ('column', 'y'), ('edge', 'y')]
>>> d.changed[0]["fields"], d.changed[0]["before"][0]["expression"], d.changed[0]["after"][0]["expression"]
(['expression'], 'a * 2', 'a * 3')
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from lineage_listener.govern import diff_labels, sides, volumes
from lineage_listener.govern.sides import SIDE_COLUMNS, DistinctEdge, Side, Window, edges_side
from lineage_listener.query.names import Aliases
from lineage_listener.query.store import LineageStore
from lineage_listener.store.edge_ids import EDGE_COLUMNS, EDGE_ID_SQL

#: What a record of a step is made of (besides its two ends).
RECORD_FIELDS = ("transform", "kind", "expression", "masking")
#: The schema another store is attached under (``--against``).
OTHER = "lineage_other"

Pair = tuple[str | None, str | None, str, str]


@dataclass(frozen=True)
class Diff:
    """The changes from ``old`` to ``new`` (each list sorted; see the module docstring)."""

    old: Side
    new: Side
    added: list[dict[str, Any]]
    removed: list[dict[str, Any]]
    changed: list[dict[str, Any]]
    labels: list[dict[str, Any]] = field(default_factory=list)
    edges: tuple[int, int] = (0, 0)  # distinct edges on each side
    #: Datasets whose rows written changed by more than the factor asked (:mod:`.volumes`); None
    #: when no factor was asked (the answer then has no ``rows``).
    rows: list[dict[str, Any]] | None = None

    @property
    def empty(self) -> bool:
        """No dataset, column or edge differs, no label newly reaches a column, no row count moved."""
        return not (self.added or self.removed or self.changed or self.labels or self.rows)

    def counts(self) -> dict[str, int]:
        return {"added": len(self.added), "removed": len(self.removed), "changed": len(self.changed),
                "labels": len(self.labels), **({"rows": len(self.rows)} if self.rows is not None else {})}

    def data(self) -> dict[str, Any]:
        """JSON-ready: ``added``, ``removed``, ``changed``, ``labels``, ``rows`` (when asked), and what
        ``old``/``new`` were."""
        return {"added": self.added, "removed": self.removed, "changed": self.changed, "labels": self.labels,
                **({"rows": self.rows} if self.rows is not None else {}),
                "old": self.old.data(self.edges[0]), "new": self.new.data(self.edges[1])}


def _record(e: Any) -> dict[str, Any]:
    return {f: getattr(e, f) for f in RECORD_FIELDS}


def _end(dataset: str | None, column: str | None) -> dict[str, Any]:
    return {"dataset": dataset, "column": column}


def _row(values: tuple) -> tuple[DistinctEdge, dict[str, Any]]:
    edge = DistinctEdge(*values[:len(EDGE_COLUMNS)])
    query_id, run_id, captured_at = values[len(EDGE_COLUMNS):]
    return edge._replace(masking=bool(edge.masking)), {"query_id": query_id, "run_id": run_id,
                                                        "captured_at": captured_at}


def edge_item(e: DistinctEdge, capture: dict[str, Any]) -> dict[str, Any]:
    """An edge as ``upstream --format json`` writes it, with the capture it was last seen in."""
    return {"item": "edge", "source": _end(e.source_dataset, e.source_column),
            "target": _end(e.target_dataset, e.target_column), **_record(e),
            "dataset_level": e.target_column is None and e.target_dataset is not None, **capture}


def _sort_key(item: dict[str, Any]) -> tuple:
    order = {"dataset": 0, "column": 1, "edge": 2}[item["item"]]
    if item["item"] == "edge":
        t, s = item["target"], item["source"]
        return (order, t["dataset"] or "", t["column"] or "", s["dataset"], s["column"], item.get("transform") or "",
                item.get("expression") or "")
    return (order, item["dataset"], item.get("column") or "")


def _materialize(con: duckdb.DuckDBPyConnection, side: Side) -> str:
    """A temporary table of the side's distinct edges under canonical names, keyed by edge id (``k``)."""
    name = f"lineage_diff_{uuid.uuid4().hex[:12]}"
    aliases = f"{side.db}lineage_dataset_aliases"
    cols = ", ".join(EDGE_COLUMNS)
    con.execute(f"""
        CREATE TEMP TABLE {name} AS
        SELECT *, {EDGE_ID_SQL.format(p="")} AS k FROM (
            SELECT {cols}, arg_max(query_id, captured_at) AS query_id, arg_max(run_id, captured_at) AS run_id,
                   max(captured_at) AS captured_at
            FROM (SELECT coalesce(ta.dataset, r.target_dataset) AS target_dataset, r.target_column,
                         coalesce(sa.dataset, r.source_dataset) AS source_dataset, r.source_column, r.transform,
                         r.kind, r.expression, coalesce(r.masking, false) AS masking, r.query_id, r.run_id,
                         r.captured_at
                  FROM ({side.sql}) r
                  LEFT JOIN {aliases} ta ON ta.alias = rtrim(r.target_dataset, '/')
                  LEFT JOIN {aliases} sa ON sa.alias = rtrim(r.source_dataset, '/'))
            GROUP BY {cols})""", side.params)
    return name


_ENDS = """(SELECT source_dataset AS dataset, source_column AS col FROM {t}
           UNION SELECT target_dataset, target_column FROM {t} WHERE target_dataset IS NOT NULL)"""


def compare(con: duckdb.DuckDBPyConnection, old: Side, new: Side, rows_factor: float | None = None) -> Diff:
    """The :class:`Diff` from ``old`` to ``new``, both read with ``con``; with ``rows_factor``, also
    the datasets whose rows written changed by more than it (:mod:`.volumes`)."""
    o, n = _materialize(con, old), _materialize(con, new)
    try:
        counts = con.execute(f"SELECT (SELECT count(*) FROM {o}), (SELECT count(*) FROM {n})").fetchone()
        added: list[dict[str, Any]] = []
        removed: list[dict[str, Any]] = []
        for change, item, dataset, column in con.execute(f"""
                WITH oe AS {_ENDS.format(t=o)}, ne AS {_ENDS.format(t=n)},
                od AS (SELECT DISTINCT dataset FROM oe), nd AS (SELECT DISTINCT dataset FROM ne)
                SELECT 'added', 'dataset', dataset, NULL FROM (SELECT dataset FROM nd EXCEPT SELECT dataset FROM od)
                UNION ALL SELECT 'removed', 'dataset', dataset, NULL FROM (SELECT dataset FROM od EXCEPT SELECT dataset FROM nd)
                UNION ALL SELECT 'added', 'column', dataset, col
                          FROM (SELECT * FROM ne WHERE col IS NOT NULL EXCEPT SELECT * FROM oe)
                          WHERE dataset IN (SELECT dataset FROM od)
                UNION ALL SELECT 'removed', 'column', dataset, col
                          FROM (SELECT * FROM oe WHERE col IS NOT NULL EXCEPT SELECT * FROM ne)
                          WHERE dataset IN (SELECT dataset FROM nd)""").fetchall():
            entry = {"item": item, "dataset": dataset} | ({"column": column} if item == "column" else {})
            (added if change == "added" else removed).append(entry)
        steps: dict[Pair, tuple[dict, dict]] = {}
        for side, *values in con.execute(f"""
                SELECT 'gone', {", ".join(SIDE_COLUMNS)} FROM {o} WHERE k NOT IN (SELECT k FROM {n})
                UNION ALL SELECT 'came', {", ".join(SIDE_COLUMNS)} FROM {n} WHERE k NOT IN (SELECT k FROM {o})""").fetchall():
            edge, capture = _row(tuple(values))
            pair = (edge.target_dataset, edge.target_column, edge.source_dataset, edge.source_column)
            steps.setdefault(pair, ({}, {}))[side == "came"][edge] = capture
        changed: list[dict[str, Any]] = []
        for pair, (gone, came) in steps.items():
            if gone and came:  # the step is on both sides, made another way
                changed.append(_changed(pair, gone, came))
            else:  # a step, or one of its records, only on one side
                added += [edge_item(e, c) for e, c in came.items()]
                removed += [edge_item(e, c) for e, c in gone.items()]
        reached = diff_labels.labels_reaching(con, o, n)
    finally:
        for table in (o, n):
            con.execute(f"DROP TABLE IF EXISTS {table}")
    moved = volumes.row_changes(volumes.written(con, *old.writes, db=old.db),
                                volumes.written(con, *new.writes, db=new.db), rows_factor) if rows_factor else None
    return Diff(old, new, sorted(added, key=_sort_key), sorted(removed, key=_sort_key),
                sorted(changed, key=_sort_key), reached, (int(counts[0]), int(counts[1])), moved)


def _order(e: DistinctEdge) -> tuple:
    return (e.kind, e.transform, e.expression or "", e.masking)


def _changed(pair: Pair, gone: dict[DistinctEdge, dict], came: dict[DistinctEdge, dict]) -> dict[str, Any]:
    """One step made another way: the records only the old side has, and only the new one has."""
    t_ds, t_col, s_ds, s_col = pair
    before, after = sorted(gone, key=_order), sorted(came, key=_order)
    fields = [f for f in RECORD_FIELDS if {getattr(e, f) for e in before} != {getattr(e, f) for e in after}]
    last = max(came.values(), key=lambda c: c["captured_at"] or datetime.min)
    return {"item": "edge", "source": _end(s_ds, s_col), "target": _end(t_ds, t_col),
            "dataset_level": t_col is None and t_ds is not None, "fields": fields,
            "before": [_record(e) for e in before], "after": [_record(e) for e in after], **last}


# -- the question, over stores -------------------------------------------------------------

def diff(store: LineageStore, app: str | None = None, runs: tuple[str, str] | list[str] | None = None,
         windows: tuple[str, str] | list[str] | None = None, against: LineageStore | None = None,
         rows_factor: float | None = None) -> Diff:
    """Compare two sides of ``store``'s lineage, or ``store`` with ``against``.

    - ``app`` alone: its last run against the run before (a first run: against nothing);
    - ``runs=(A, B)``: run A (old) against run B (new), of ``app`` when given;
    - ``windows=("FROM..TO", "FROM..TO")``: what was captured in each window (by ``app`` when given);
    - ``against=other``: ``other`` is the old side, ``store`` the new one; each side is ``app``'s last
      run when given, else everything the store holds;
    - ``rows_factor=F``: also list the datasets whose rows written changed by more than ``F`` times
      (a write of 0 rows where the other side wrote some, always).

    Raises :class:`~lineage_listener.query.store.UnknownNameError` (an unknown application or run,
    with the closest known names) and ValueError (a bad window, a bad combination).

    >>> d = diff(open_store("lineage.duckdb"), app="daily_orders")         # doctest: +SKIP
    >>> d.counts()                                                           # doctest: +SKIP
    {'added': 2, 'removed': 1, 'changed': 1, 'labels': 0}
    """
    chosen = [name for name, value in (("runs", runs), ("windows", windows), ("against", against))
              if value is not None]
    if len(chosen) > 1:
        raise ValueError(f"choose one of runs, windows or another store to compare with (got {' and '.join(chosen)})")
    if not chosen and app is None:
        raise ValueError("say what to compare: an application (its last two runs), two runs, two windows, "
                         "or another store")
    for name, value in (("runs", runs), ("windows", windows)):
        if value is not None and len(value) != 2:
            raise ValueError(f"{name} needs exactly two values (old, new), got {len(value)}")
    if rows_factor is not None and not rows_factor > 1:
        raise ValueError(f"the rows factor must be more than 1 (got {rows_factor})")
    with store.connect() as con:
        if against is not None:
            con.execute(f"ATTACH '{str(against.path).replace(chr(39), chr(39) * 2)}' AS {OTHER} (READ_ONLY)")
            try:
                old = sides.latest_side(con, app, f"store {against.path}", db=OTHER + ".")
                new = sides.latest_side(con, app, f"store {store.path}")
                return compare(con, old, new, rows_factor)
            finally:
                con.execute(f"DETACH {OTHER}")
        if runs is not None:
            old, new = (sides.run_side(con, run, app) for run in runs)
        elif windows is not None:
            old, new = (sides.window_side(con, Window.parse(w), app) for w in windows)
        else:
            assert app is not None
            known = sides.app_runs(con, app)
            new = sides.run_side(con, known[-1][0], app)
            old = sides.run_side(con, known[-2][0], app) if len(known) > 1 else \
                Side(f"no earlier run of {app}", sides.NOTHING_SQL)
        return compare(con, old, new, rows_factor)


def against_capture(store: LineageStore, edges: Iterable[DistinctEdge], label: str, app: str | None = None) -> Diff:
    """Edges not captured yet (a preview's) against how the store last saw their targets written
    (:func:`~lineage_listener.govern.sides.last_writes`, by ``app`` when given). Reads by the
    driver (no target) are not compared."""
    planned = [e for e in edges if e.target_dataset is not None]
    with store.connect() as con:
        aliases = Aliases(con)
        targets = {aliases.canonical(e.target_dataset) for e in planned}
        return compare(con, sides.last_writes(con, targets, app), edges_side(label, planned))
