"""Read routes the web UI's views need beyond the core API: search over datasets and columns,
paged lists with totals, a dataset's columns, a dataset-level overview graph, impact as CSV.

Numbers come from the query layer (``lineage_listener.query``), as in the CLI; SQL here only lists
and counts what the store holds (parameters bound, never formatted into SQL).
"""
from __future__ import annotations

import csv
import io
from collections import deque
from typing import Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response

from lineage_listener.query import reports
from lineage_listener.query.expand import FAILED_WRITES
from lineage_listener.query.names import Aliases, closest
from lineage_listener.query.search import search as name_search
from lineage_listener.server.access.gate import shown, sight
from lineage_listener.server.api import _answer, _store, _time, readable_runs
from lineage_listener.server.state import ServerState, state

router = APIRouter(tags=["ui"])

MAX_OVERVIEW = 300  # datasets in one overview graph


def _rows(cur) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


@router.get("/api/search")
def search(request: Request, q: str = "", what: Literal["all", "datasets", "columns"] = "all",
           offset: int = Query(0, ge=0), limit: int = Query(20, ge=1, le=500),
           st: ServerState = Depends(state)) -> dict:
    """Datasets and columns whose name matches ``q`` (case-insensitive), best matches first: exact (the
    name, or a dataset's table or file name), prefix, substring, then fuzzy (each word of ``q`` a word
    of the name within a typo or two, for ``q`` of 4 characters or more without digits); each hit's
    ``match`` says which. Each list is paged by ``offset``/``limit`` with its ``total``; an empty ``q``
    lists everything."""
    with st.read() as con:
        return name_search(con, q, what, offset, limit, within=sight(request).within)


@router.get("/api/schema")
def schema(dataset: str, st: ServerState = Depends(state)) -> dict:
    """A dataset's columns in schema order (``dataset_columns.ordinal``; columns of stores written before
    it was recorded come last, by name), with type and nullability."""
    with st.read() as con:
        aliases = Aliases(con)
        canonical = aliases.canonical(dataset)
        names = sorted(aliases.names(canonical))
        rows = con.execute(
            """SELECT column_name, any_value(data_type), any_value(nullable), min(ordinal)
               FROM dataset_columns WHERE dataset IN (SELECT unnest($n)) GROUP BY column_name
               ORDER BY min(ordinal) NULLS LAST, column_name""",
            {"n": names}).fetchall()
        if not rows and con.execute("SELECT count(*) FROM datasets WHERE dataset IN (SELECT unnest($n))",
                                    {"n": names}).fetchone()[0] == 0:
            known = [r[0] for r in con.execute("SELECT dataset FROM datasets").fetchall()]
            raise HTTPException(404, {"error": f"unknown dataset {dataset!r}",
                                      "closest": closest(dataset, known)})
    return {"dataset": canonical,
            "columns": [{"position": i + 1, "name": n, "type": t, "nullable": nl} for i, (n, t, nl, _) in
                        enumerate(rows)]}


@router.get("/api/browse/runs")
def runs(request: Request, offset: int = Query(0, ge=0), limit: int = Query(50, ge=1, le=1000),
         st: ServerState = Depends(state)) -> dict:
    """Runs, newest first, with their duration, query count and failed queries; paged with a total."""
    found, where, seen, p = readable_runs(request, "r.run_id", "q.query_id")
    with st.read() as con:
        total = con.execute(f"{found} SELECT count(*) FROM runs r WHERE {where}", p).fetchone()[0]
        rows = _rows(con.execute(
            f"""{found} SELECT r.run_id, r.app_name, r.spark_version, r.started_at, r.ended_at,
                      CAST(date_diff('millisecond', r.started_at, r.ended_at) AS BIGINT) AS duration_ms,
                      count(q.query_id) AS queries,
                      count(q.query_id) FILTER (WHERE q.status <> 'succeeded') AS failed
               FROM runs r LEFT JOIN queries q ON q.run_id = r.run_id AND {seen} WHERE {where}
               GROUP BY ALL ORDER BY r.started_at DESC NULLS LAST, r.run_id LIMIT $limit OFFSET $offset""",
            {"limit": limit, "offset": offset, **p}))
    for r in rows:
        r["status"] = "running" if r["ended_at"] is None else ("failed queries" if r["failed"] else "ended")
    return {"total": total, "offset": offset, "limit": limit, "rows": rows}


@router.get("/api/overview")
def overview(dataset: str, depth: int = Query(3, ge=0, le=50), st: ServerState = Depends(state)) -> dict:
    """The datasets upstream and downstream of ``dataset`` (``depth`` hops each way) and, per dataset pair,
    how many column edges and queries link them (failed writes left out)."""
    with st.read() as con:
        # Per set of edges, not per capture row: as cheap after a year of daily runs as after one.
        pairs = con.execute(
            f"""WITH live AS (SELECT set_id, query_id FROM edge_captures
                              WHERE query_id IS NULL OR query_id NOT IN ({FAILED_WRITES})),
                     pe AS (SELECT DISTINCT s.set_id, e.source_dataset, e.target_dataset, e.source_column,
                                   e.target_column
                            FROM edges e JOIN edge_sets s ON s.edge_id = e.edge_id
                            WHERE e.target_dataset IS NOT NULL AND s.set_id IN (SELECT set_id FROM live)),
                     cols AS (SELECT source_dataset, target_dataset,
                                     count(DISTINCT (source_column, target_column)) AS n FROM pe GROUP BY ALL),
                     qs AS (SELECT p.source_dataset, p.target_dataset, count(DISTINCT l.query_id) AS n
                            FROM (SELECT DISTINCT set_id, source_dataset, target_dataset FROM pe) p
                            JOIN live l ON l.set_id = p.set_id GROUP BY ALL)
                SELECT c.source_dataset, c.target_dataset, c.n, coalesce(q.n, 0) FROM cols c
                LEFT JOIN qs q ON q.source_dataset IS NOT DISTINCT FROM c.source_dataset
                              AND q.target_dataset = c.target_dataset""").fetchall()
        aliases = Aliases(con)
        aliases.resolve([dataset] + [p[0] for p in pairs] + [p[1] for p in pairs])
        start = aliases.canonical(dataset)
        if not con.execute("SELECT count(*) FROM datasets WHERE dataset = ?", [start]).fetchone()[0]:
            known = [r[0] for r in con.execute("SELECT dataset FROM datasets").fetchall()]
            raise HTTPException(404, {"error": f"unknown dataset {dataset!r}",
                                      "closest": closest(dataset, known)})
    links: dict[tuple[str, str], list[int]] = {}
    for s, t, cols, queries in pairs:
        key = (aliases.canonical(s), aliases.canonical(t))
        if key[0] != key[1]:
            agg = links.setdefault(key, [0, 0])
            agg[0] += cols
            agg[1] += queries
    up: dict[str, set[str]] = {}
    down: dict[str, set[str]] = {}
    for s, t in links:
        down.setdefault(s, set()).add(t)
        up.setdefault(t, set()).add(s)
    level = {start: 0}
    for step, neighbours in ((-1, up), (1, down)):
        todo = deque([(start, 0)])
        while todo and len(level) < MAX_OVERVIEW:
            node, hops = todo.popleft()
            if hops >= depth:
                continue
            for nxt in sorted(neighbours.get(node, ())):
                if nxt not in level:
                    level[nxt] = step * (hops + 1)
                    todo.append((nxt, hops + 1))
    edges = [{"source": s, "target": t, "columns": c, "queries": q}
             for (s, t), (c, q) in sorted(links.items()) if s in level and t in level]
    return {"dataset": start, "depth": depth,
            "nodes": [{"dataset": d, "level": lv} for d, lv in sorted(level.items(), key=lambda kv: (kv[1], kv[0]))],
            "edges": edges}


def _column(f: dict) -> str:
    return f"{f['dataset']}.{f['column']}" if f["dataset"] is not None else "(withheld)"


IMPACT_CSV = ("hop", "dataset", "column", "reach", "masking", "via", "from", "applications", "runs")


@router.get("/api/impact.csv")
def impact_csv(request: Request, dataset: str, column: str, since: str | None = None, until: str | None = None,
               depth: int | None = Query(None, ge=0), st: ServerState = Depends(state)) -> Response:
    """The ``/api/impact`` report's columns as CSV (one row per column), for spreadsheets: the copies
    (``reach`` copy, with ``masking``), then the columns only influenced (``via``: the indirect
    transforms on their paths)."""
    report = shown(request, _answer(reports.impact, _store(st), dataset, column, since=_time(since),
                                    until=_time(until, True), depth=depth))
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(IMPACT_CSV)
    for reach, rows in (("copy", report["downstream"]), ("influenced", report["influenced"])):
        for d in rows:
            w.writerow([d["hop"], d["dataset"] or "(withheld)", d["column"], reach, d.get("masking", ""),
                        "; ".join(d.get("via", ())),
                        "; ".join(f"{_column(f)} ({f['transform']}{', masked' if f['masking'] else ''})"
                                  for f in d.get("from", ())),
                        "; ".join(d.get("applications", ())), "; ".join(d.get("runs", ()))])
    name = f"impact-{report['column']}.csv".replace('"', "")
    return Response(buf.getvalue(), media_type="text/csv",
                    headers={"content-disposition": f'attachment; filename="{name}"'})
