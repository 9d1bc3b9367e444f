"""Write captured edges compactly: each edge once, each set of edges once, one row per capture.

A batch's ``column_lineage`` rows are grouped by capture (query, run, time). Each
row's edge gets its id (:mod:`~lineage_listener.store.edge_ids`); the capture's
edges form a set, stored once however many days the job writes it again. What
is new for a query already in the store is only what it did not hold yet: an
OpenLineage run's events (START, RUNNING, COMPLETE) each add what they newly
carry, and a replayed batch adds nothing. A capture of a known set is one row: no edge
row is touched, so a year of daily runs costs a year of capture rows, not of edge rows.

Ids are computed in Python (:mod:`~lineage_listener.store.edge_ids`, the same digest the
migration computes in SQL).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import duckdb

from lineage_listener.store.rows import EdgeRow
from lineage_listener.store.edge_ids import EDGE_COLUMNS, edge_id, set_id

_ROW = EdgeRow._fields
_EDGE_IDX = [_ROW.index(c) for c in EDGE_COLUMNS]
_Q, _R, _T = _ROW.index("query_id"), _ROW.index("run_id"), _ROW.index("captured_at")
_GUESS = _ROW.index("guess")
_MASKING = EDGE_COLUMNS.index("masking")
_COLS = ", ".join(EDGE_COLUMNS)

#: A new set's edges: new ones inserted, known ones list the set too (rare: most captures reuse a set).
_ADD_EDGES = f"""
INSERT INTO edges (edge_id, {_COLS}, guess, sets)
SELECT {", ".join(f"unnest(${i + 1})" for i in range(len(EDGE_COLUMNS) + 2))}, CAST([] AS UBIGINT[])
ON CONFLICT (edge_id) DO NOTHING"""

#: Each edge lists the sets holding it (``{members}``: a relation of set_id, edge_id).
LIST_SETS = """
UPDATE edges e SET sets = list_distinct(list_concat(coalesce(e.sets, CAST([] AS UBIGINT[])), m.sets))
FROM (SELECT edge_id, list(set_id) AS sets FROM {members} GROUP BY edge_id) m
WHERE e.edge_id = m.edge_id"""


def _edge(row: Sequence) -> tuple:
    """The edge's :data:`EDGE_COLUMNS` values, then whether it is a guess (a short row: not)."""
    values = [row[i] for i in _EDGE_IDX]
    if values[_MASKING] is not None:
        values[_MASKING] = bool(values[_MASKING])
    values.append(bool(row[_GUESS]) if len(row) > _GUESS and row[_GUESS] is not None else False)
    return tuple(values)


def _group(rows: Iterable[Sequence], held: dict[str, set[int]], edges: dict[int, tuple]
           ) -> dict[tuple, list[int]]:
    """Capture (query, run, time) -> its edge ids, each (query, edge) once and not already ``held``."""
    captures: dict[tuple, list[int]] = {}
    have: dict[str, set[int]] = {}
    for r in rows:
        edge = _edge(r)
        eid = edge_id(edge[:-1], edge[-1])
        mine = have.setdefault(r[_Q], set(held.get(r[_Q], ())))
        if eid in mine:
            continue
        mine.add(eid)
        edges[eid] = edge
        captures.setdefault((r[_Q], r[_R], r[_T]), []).append(eid)
    return captures


def write_edges(con: duckdb.DuckDBPyConnection, rows: list[Sequence]) -> int:
    """Store ``column_lineage`` rows (batch order); the number of (query, edge) pairs that are new.

    Two statements for the usual capture (a query not seen before, a set seen before): the
    check and the capture row; a new set adds its members and edges.
    """
    if not rows:
        return 0
    edges: dict[int, tuple] = {}
    captures = _group(rows, {}, edges)
    sets = {key: set_id(ids) for key, ids in captures.items()}
    held_sets, known = con.execute(
        """SELECT (SELECT list(DISTINCT set_id) FROM edge_captures WHERE query_id IN (SELECT unnest($q))),
                  (SELECT list(DISTINCT set_id) FROM edge_captures WHERE set_id IN (SELECT unnest($s)))""",
        {"q": sorted({q for q, _, _ in captures}), "s": sorted(set(sets.values()))}).fetchone()
    known = set(known or ())
    if held_sets:  # a query seen before (an OpenLineage run event by event, a replayed batch)
        held: dict[str, set[int]] = {}
        for query_id, eid in con.execute(
                """SELECT c.query_id, s.edge_id FROM edge_captures c JOIN edge_sets s ON s.set_id = c.set_id
                   WHERE c.set_id IN (SELECT unnest($s)) AND c.query_id IN (SELECT unnest($q))""",
                {"s": held_sets, "q": sorted({q for q, _, _ in captures})}).fetchall():
            held.setdefault(query_id, set()).add(eid)
        edges = {}
        captures = _group(rows, held, edges)
        sets = {key: set_id(ids) for key, ids in captures.items()}
        known = {r[0] for r in con.execute("SELECT DISTINCT set_id FROM edge_captures WHERE set_id IN "
                                           "(SELECT unnest($1))", [sorted(set(sets.values()))]).fetchall()}
    if not captures:
        return 0
    unknown = sorted(set(sets.values()) - known)
    if unknown:  # never captured; a retarget (store/retarget.py) may have left its members behind
        known |= {r[0] for r in con.execute("SELECT DISTINCT set_id FROM edge_sets WHERE set_id IN "
                                            "(SELECT unnest($1))", [unknown]).fetchall()}
        members = sorted({(sid, eid) for key, sid in sets.items() if sid not in known for eid in captures[key]})
        if members:
            _add_members(con, members, edges)
    keys = list(captures)
    con.execute("INSERT INTO edge_captures SELECT unnest(?), unnest(?), unnest(?), CAST(unnest(?) AS TIMESTAMP), 1",
                [[k[0] for k in keys], [k[1] for k in keys], [sets[k] for k in keys], [k[2] for k in keys]])
    return sum(len(ids) for ids in captures.values())


def _add_members(con: duckdb.DuckDBPyConnection, members: list[tuple[int, int]], edges: dict[int, tuple]) -> None:
    """Store new sets: their members, edges not seen before, and each edge's list of sets."""
    ids = sorted({eid for _, eid in members})
    con.execute(_ADD_EDGES, [ids, *[list(c) for c in zip(*(edges[e] for e in ids))]])
    con.execute("INSERT INTO edge_sets SELECT unnest(?), unnest(?)",
                [[m[0] for m in members], [m[1] for m in members]])
    con.execute(LIST_SETS.format(members="(SELECT unnest($1) AS set_id, unnest($2) AS edge_id)"),
                [[m[0] for m in members], [m[1] for m in members]])

