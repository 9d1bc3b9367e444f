"""Write captured edges compactly: each edge once, each set of edges once, one row per capture.

A batch's ``column_lineage`` rows are grouped by capture (query, run, time). Each
row's edge gets its id (:mod:`~lineage_listener.store.edge_ids`); the capture's
edges form a set, stored once however many days the job writes it again. What
is new for a query already in the store is only what it did not hold yet: an
OpenLineage run's events (START, RUNNING, COMPLETE) each add what they newly
carry, and a replayed batch adds nothing.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import duckdb

from lineage_listener.store.batch import COLUMNS
from lineage_listener.store.edge_ids import EDGE_COLUMNS, edge_id, set_id

_ROW = COLUMNS["column_lineage"]
_EDGE_IDX = [_ROW.index(c) for c in EDGE_COLUMNS]
_Q, _R, _T = _ROW.index("query_id"), _ROW.index("run_id"), _ROW.index("captured_at")
_MASKING = EDGE_COLUMNS.index("masking")


def _edge(row: Sequence) -> tuple:
    values = [row[i] for i in _EDGE_IDX]
    if values[_MASKING] is not None:
        values[_MASKING] = bool(values[_MASKING])
    return tuple(values)


def query_edges(con: duckdb.DuckDBPyConnection, query_ids: Iterable[str]) -> dict[str, set[int]]:
    """The edge ids each of ``query_ids`` already has in the store."""
    ids = sorted(set(query_ids))
    out: dict[str, set[int]] = {}
    if not ids:
        return out
    for query_id, eid in con.execute(
            """SELECT c.query_id, s.edge_id FROM edge_captures c JOIN edge_sets s ON s.set_id = c.set_id
               WHERE c.query_id IN (SELECT unnest(?))""", [ids]).fetchall():
        out.setdefault(query_id, set()).add(eid)
    return out


def write_edges(con: duckdb.DuckDBPyConnection, rows: list[Sequence]) -> int:
    """Store ``column_lineage`` rows (batch order); the number of (query, edge) pairs that are new."""
    if not rows:
        return 0
    held = query_edges(con, (r[_Q] for r in rows))
    captures: dict[tuple, list[int]] = {}
    edges: dict[int, tuple] = {}
    new = 0
    for r in rows:
        edge = _edge(r)
        eid = edge_id(edge)
        have = held.setdefault(r[_Q], set())
        if eid in have:
            continue
        have.add(eid)
        edges[eid] = edge
        captures.setdefault((r[_Q], r[_R], r[_T]), []).append(eid)
        new += 1
    add_captures(con, [(q, run, t, ids) for (q, run, t), ids in captures.items()], edges)
    return new


def add_captures(con: duckdb.DuckDBPyConnection, captures: list[tuple[str | None, str | None, object, list[int]]],
                 edges: dict[int, tuple], counts: list[int] | None = None) -> None:
    """Insert capture rows ``(query_id, run_id, captured_at, edge ids)``; sets and edges not stored yet too."""
    if not captures:
        return
    sets = {set_id(ids): ids for *_, ids in captures}
    known = {r[0] for r in con.execute("SELECT DISTINCT set_id FROM edge_sets WHERE set_id IN (SELECT unnest(?))",
                                       [list(sets)]).fetchall()}
    members = [(sid, eid) for sid, ids in sets.items() if sid not in known for eid in sorted(set(ids))]
    if members:
        fresh = sorted({eid for _, eid in members})
        con.execute(f"""INSERT INTO edges (edge_id, {', '.join(EDGE_COLUMNS)})
                        SELECT unnest($1), {', '.join(f'unnest(${i + 2})' for i in range(len(EDGE_COLUMNS)))}
                        ON CONFLICT (edge_id) DO NOTHING""",
                    [fresh, *[list(col) for col in zip(*(edges[e] for e in fresh))]])
        con.execute("INSERT INTO edge_sets SELECT unnest(?), unnest(?)",
                    [[m[0] for m in members], [m[1] for m in members]])
    con.execute("INSERT INTO edge_captures SELECT unnest(?), unnest(?), unnest(?), CAST(unnest(?) AS TIMESTAMP), "
                "unnest(?)",
                [[c[0] for c in captures], [c[1] for c in captures], [set_id(c[3]) for c in captures],
                 [c[2] for c in captures], counts or [1] * len(captures)])
    _count_captures(con, captures)


def _count_captures(con: duckdb.DuckDBPyConnection, captures: list[tuple]) -> None:
    """Move each captured edge's first/last time, count and last query: one statement per batch."""
    per_edge: dict[int, list] = {}
    for query_id, run_id, at, ids in captures:
        t = str(at)
        for eid in set(ids):
            old = per_edge.get(eid)
            if old is None:
                per_edge[eid] = [t, t, 1, query_id, run_id]
                continue
            old[0], old[2] = min(old[0], t), old[2] + 1
            if t >= old[1]:
                old[1], old[3], old[4] = t, query_id, run_id
    ids = list(per_edge)
    cols = list(zip(*per_edge.values()))
    con.execute("""UPDATE edges e SET first_seen = least(e.first_seen, x.f), last_seen = greatest(e.last_seen, x.l),
                          captures = coalesce(e.captures, 0) + x.n,
                          last_query_id = CASE WHEN e.last_seen IS NULL OR x.l >= e.last_seen THEN x.q
                                               ELSE e.last_query_id END,
                          last_run_id = CASE WHEN e.last_seen IS NULL OR x.l >= e.last_seen THEN x.r
                                             ELSE e.last_run_id END
                   FROM (SELECT unnest($1) AS id, CAST(unnest($2) AS TIMESTAMP) AS f, CAST(unnest($3) AS TIMESTAMP) AS l,
                                unnest($4) AS n, unnest($5) AS q, unnest($6) AS r) x
                   WHERE e.edge_id = x.id""", [ids, *[list(c) for c in cols]])


#: Recompute ``edges``' history columns from the capture rows (``{where}``: which edges).
_REFRESH = """
    UPDATE edges e SET first_seen = h.f, last_seen = h.l, captures = h.n, last_query_id = h.q, last_run_id = h.r
    FROM (SELECT e2.edge_id, min(c.captured_at) AS f, max(c.captured_at) AS l, sum(c.captures) AS n,
                 arg_max(c.query_id, c.captured_at) AS q, arg_max(c.run_id, c.captured_at) AS r
          FROM edges e2 LEFT JOIN edge_sets s ON s.edge_id = e2.edge_id
          LEFT JOIN edge_captures c ON c.set_id = s.set_id
          WHERE {where} GROUP BY e2.edge_id) h
    WHERE e.edge_id = h.edge_id"""


def refresh_history(con: duckdb.DuckDBPyConnection, edge_ids: Iterable[int] | None = None) -> None:
    """Recompute the history columns of ``edge_ids`` (None: every edge) from their capture rows."""
    if edge_ids is None:
        con.execute(_REFRESH.format(where="true"))
        return
    ids = sorted(set(edge_ids))
    if ids:
        con.execute(_REFRESH.format(where="e2.edge_id IN (SELECT unnest($1))"), [ids])


def retarget(con: duckdb.DuckDBPyConnection, query_id: str, target: str) -> None:
    """Every edge of ``query_id`` now names ``target`` as its target dataset (a table seen after
    its path); captures keep their time, and an edge the query then holds twice is kept once."""
    rows = con.execute(
        f"""SELECT c.run_id, c.captured_at, c.rowid, e.edge_id, {', '.join('e.' + c for c in EDGE_COLUMNS)}
           FROM edge_captures c
           JOIN edge_sets s ON s.set_id = c.set_id JOIN edges e ON e.edge_id = s.edge_id
           WHERE c.query_id = ? ORDER BY c.captured_at, c.rowid""", [query_id]).fetchall()
    if not rows:
        return
    captures: dict[tuple, list[int]] = {}
    edges: dict[int, tuple] = {}
    seen: set[int] = set()
    for run_id, captured_at, rowid, _old, *values in rows:
        edge = (target, *values[1:])
        eid = edge_id(edge)
        captures.setdefault((run_id, captured_at, rowid), [])
        if eid not in seen:
            seen.add(eid)
            edges[eid] = edge
            captures[(run_id, captured_at, rowid)].append(eid)
    con.execute("DELETE FROM edge_captures WHERE query_id = ?", [query_id])
    add_captures(con, [(query_id, run, t, ids) for (run, t, _), ids in captures.items() if ids], edges)
    refresh_history(con, [r[3] for r in rows])  # the edges under the old name lost these captures
