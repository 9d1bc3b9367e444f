"""Read-only JSON API over the store (parameters bound, never formatted into SQL)."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request

from lineage_listener.query import families, reports
from lineage_listener.query import payload
from lineage_listener.query.names import Aliases, closest
from lineage_listener.query.store import LineageStore, UnknownNameError
from lineage_listener.query.stream_jobs import streams as stream_rows
from lineage_listener.query.within import dataset_sql, queries_sql
from lineage_listener.timewindow import parse_time
from lineage_listener.server.access.gate import sight
from lineage_listener.server.state import ServerState, state
from lineage_listener.store.connection import StoreError

router = APIRouter()

#: Datasets at the other end of ``{near}``'s edges that a capture other than a failed one wrote.
_NEIGHBOURS = """SELECT DISTINCT x.far FROM (
    SELECT {far} AS far, unnest(sets) AS set_id FROM edges
    WHERE {near} IN (SELECT unnest($n)) AND {far} IS NOT NULL) x
JOIN edge_captures c ON c.set_id = x.set_id
WHERE c.query_id IS NULL OR c.query_id NOT IN (SELECT query_id FROM queries WHERE status = 'failed')
ORDER BY 1"""


def _store(st: ServerState) -> LineageStore:
    try:
        return st.lineage_store()
    except StoreError as exc:
        raise HTTPException(503, str(exc)) from None


def _time(value: str | None, end: bool = False) -> datetime | None:
    try:
        return parse_time(value, end=end)
    except ValueError as exc:
        raise HTTPException(400, f"bad time {value!r}: {exc}") from None


def _answer(fn, *args, **kwargs) -> Any:
    try:
        return fn(*args, **kwargs)
    except UnknownNameError as exc:
        raise HTTPException(404, str(exc)) from None
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


def readable(request: Request, name: str) -> tuple[str, dict[str, str]]:
    """SQL true for the datasets named by ``name`` that the request's reader may read, and its parameters
    (docs/security.md; without ``--access``, every dataset)."""
    within = sight(request).within
    return (dataset_sql(name), {"within": within}) if within is not None else ("TRUE", {})


def readable_runs(request: Request, run_id: str, query_id: str) -> tuple[str, str, str, dict[str, str]]:
    """The same for runs and queries, those that wrote or read a dataset the reader may read: a ``WITH``
    clause (the queries, found once), the runs' condition, the queries' condition, their parameters."""
    within = sight(request).within
    if within is None:
        return "", "TRUE", "TRUE", {}
    return (f"WITH seen AS MATERIALIZED ({queries_sql()})",
            f"{run_id} IN (SELECT run_id FROM queries WHERE query_id IN (SELECT query_id FROM seen))",
            f"{query_id} IN (SELECT query_id FROM seen)", {"within": within})


@router.get("/api/datasets")
def datasets(request: Request, q: str = "", kind: str | None = None, limit: int = Query(100, ge=1, le=1000),
             st: ServerState = Depends(state)) -> list[dict]:
    """Datasets whose name contains ``q`` (case-insensitive), with their column count and last capture."""
    where, p = readable(request, "d.dataset")
    with st.read() as con:
        rows = con.execute(
            f"""SELECT d.dataset, d.kind, d.format, d.last_seen,
                      (SELECT count(*) FROM dataset_columns c WHERE c.dataset = d.dataset) AS columns
               FROM datasets d WHERE contains(lower(d.dataset), lower($q)) AND ($kind IS NULL OR d.kind = $kind)
                 AND {where}
               ORDER BY d.last_seen DESC NULLS LAST, d.dataset LIMIT $limit""",
            {"q": q, "kind": kind, "limit": limit, **p}).fetchall()
    return [{"dataset": r[0], "kind": r[1], "format": r[2], "last_seen": r[3], "columns": r[4]} for r in rows]


@router.get("/api/datasets/{dataset:path}")
def dataset(dataset: str, st: ServerState = Depends(state)) -> dict:
    """One dataset: columns, upstream and downstream datasets, recent queries that wrote or read it."""
    with st.read() as con:
        aliases = Aliases(con)
        canonical = aliases.canonical(dataset)
        names = sorted(aliases.names(canonical))
        info = con.execute("SELECT dataset, kind, format, location, first_seen, last_seen FROM datasets "
                           "WHERE dataset = ?", [canonical]).fetchone()
        if info is None:
            known = [r[0] for r in con.execute("SELECT dataset FROM datasets").fetchall()]
            raise HTTPException(404, {"error": f"unknown dataset {dataset!r}", "closest": closest(dataset, known)})
        p = {"n": names}
        columns = con.execute("SELECT column_name, data_type FROM dataset_columns WHERE dataset IN "
                              "(SELECT unnest($n)) ORDER BY ordinal NULLS LAST, column_name", p).fetchall()
        upstream = con.execute(_NEIGHBOURS.format(near="target_dataset", far="source_dataset"), p).fetchall()
        downstream = con.execute(_NEIGHBOURS.format(near="source_dataset", far="target_dataset"), p).fetchall()
        queries = con.execute(
            """SELECT q.query_id, q.run_id, r.app_name, q.action, q.status, q.captured_at,
                      CASE WHEN q.target_dataset IN (SELECT unnest($n)) THEN 'wrote' ELSE 'read' END AS role,
                      CASE WHEN q.target_dataset IN (SELECT unnest($n)) THEN
                           (SELECT w.rows FROM write_statistics w WHERE w.query_id = q.query_id)
                      ELSE (SELECT sum(s.rows) FROM read_statistics s WHERE s.query_id = q.query_id
                            AND s.dataset IN (SELECT unnest($n))) END AS rows
               FROM queries q LEFT JOIN runs r USING (run_id)
               WHERE q.target_dataset IN (SELECT unnest($n))
                  OR q.query_id IN (SELECT c.query_id FROM edge_captures c WHERE c.set_id IN (
                                    SELECT unnest(sets) FROM edges WHERE source_dataset IN (SELECT unnest($n))))
               ORDER BY q.captured_at DESC LIMIT 50""", p).fetchall()
    return {
        "dataset": info[0], "kind": info[1], "format": info[2], "location": info[3], "first_seen": info[4],
        "last_seen": info[5], "columns": [{"name": c, "type": t} for c, t in columns],
        "upstream": [r[0] for r in upstream], "downstream": [r[0] for r in downstream],
        "queries": [dict(zip(("query_id", "run_id", "app_name", "action", "status", "captured_at", "role", "rows"),
                             q)) for q in queries],
    }


@router.get("/v3/namespaces/default/datasets/{dataset:path}/columns/{column}/lineage")
def column_lineage(dataset: str, column: str, start: str | None = None, end: str | None = None,
                   maxLevels: int | None = Query(None, ge=0, le=100),  # noqa: N803 - the design's name
                   direction: Literal["backward", "forward", "both"] = "backward", directOnly: bool = False,  # noqa: N803
                   includeFailed: bool = False,  # noqa: N803
                   st: ServerState = Depends(state)) -> dict:
    """A column's lineage graph in a time window: nodes (``reach``: copy or influenced, ``masking`` of
    copies going forward, ``before_window``) and edges (transform, kind, expression, masking, query,
    time; ``history`` when a later replacing write of the target overwrote what the edge wrote,
    ``replaced``: the transforms only such writes hold), the ``window`` with what lies outside it, and
    ``queries``: the application and run that wrote each edge. ``backward``: where it came from;
    ``forward``: where it went. A path is kept when its last write was captured in the window."""
    return _answer(payload.column_lineage, _store(st), dataset, column, direction, maxLevels, _time(start),
                   _time(end, end=True), directOnly, includeFailed)


@router.get("/api/impact")
def impact(dataset: str, column: str, since: str | None = None, until: str | None = None,
           depth: int | None = Query(None, ge=0), st: ServerState = Depends(state)) -> dict:
    """Who read a column in a window, the columns holding a copy of it (``downstream``, with
    ``masking``), those it only influenced (``influenced``, with ``via``), and the ``window``."""
    return _answer(reports.impact, _store(st), dataset, column, since=_time(since), until=_time(until, True),
                   depth=depth)


@router.get("/api/provenance")
def provenance(dataset: str, column: str, directOnly: bool = True,  # noqa: N803
               st: ServerState = Depends(state)) -> dict:
    """The sources and operations a column came from."""
    return _answer(reports.provenance, _store(st), dataset, column, direct_only=directOnly)


@router.get("/api/runs")
def runs(request: Request, limit: int = Query(50, ge=1, le=1000), st: ServerState = Depends(state)) -> list[dict]:
    """Runs, newest first, with their Spark version, start, end and query count."""
    found, where, seen, p = readable_runs(request, "r.run_id", "q.query_id")
    with st.read() as con:
        rows = con.execute(f"""{found} SELECT r.run_id, r.app_name, r.spark_version, r.started_at, r.ended_at,
                                      (SELECT count(*) FROM queries q WHERE q.run_id = r.run_id AND {seen})
                               FROM runs r WHERE {where} ORDER BY r.started_at DESC NULLS LAST LIMIT $limit""",
                           {"limit": limit, **p}).fetchall()
    keys = ("run_id", "app_name", "spark_version", "started_at", "ended_at", "queries")
    return [dict(zip(keys, r)) for r in rows]


@router.get("/api/streams")
def streams(request: Request, limit: int = Query(100, ge=1, le=1000), st: ServerState = Depends(state)) -> list[dict]:
    """Streaming queries as jobs: batch count, last batch time, sinks, plans."""
    with st.read() as con:
        return stream_rows(con, limit, within=sight(request).within)


def _visible_family(con: Any, request: Request, related: dict[str, Any]) -> dict[str, Any]:
    """A run's parent, root and children as the reader may see them: a linked run or task it may not
    read is unlinked (its name is the visible run's own conf), a child run it may not read left out."""
    with_seen, runs_cond, _, params = readable_runs(request, "run_id", "query_id")
    if not params:
        return related
    linked = [x for x in (related["parent"], related["root"]) if x and x.get("run_id")]
    ids = sorted({x["run_id"] for x in linked} | {c["run_id"] for c in related["children"]})
    seen = {r[0] for r in con.execute(f"{with_seen} SELECT run_id FROM runs WHERE run_id IN (SELECT unnest($ids)) "
                                      f"AND {runs_cond}", {**params, "ids": ids}).fetchall()} if ids else set()
    for x in linked:
        if x["run_id"] not in seen:
            x.update(run_id=None, **({"query_id": None} if "query_id" in x else {}))
    return {**related, "children": [c for c in related["children"] if c["run_id"] in seen]}


@router.get("/api/runs/{run_id:path}")
def run(request: Request, run_id: str, st: ServerState = Depends(state)) -> dict:
    """One run and its queries, with SQL text, status, what each write produced (``rows``, ``bytes``,
    ``files``) and read (``reads``); the scheduler's runs above it (``parent``: the task, ``root``: the
    DAG run) and the runs launched under it (``children``)."""
    with st.read() as con:
        r = con.execute("SELECT run_id, app_name, spark_version, master, started_at, ended_at FROM runs "
                        "WHERE run_id = ?", [run_id]).fetchone()
        if r is None:
            known = [x[0] for x in con.execute("SELECT run_id FROM runs").fetchall()]
            raise HTTPException(404, {"error": f"unknown run {run_id!r}", "closest": closest(run_id, known)})
        qs = con.execute("""SELECT q.query_id, action, command, status, error, sql_text, duration_ms, captured_at,
                                   target_dataset, coalesce(n.edges, 0), w.rows, w.bytes, w.files
                            FROM queries q LEFT JOIN (
                                SELECT c.query_id, count(*) AS edges FROM edge_captures c
                                JOIN edge_sets s ON s.set_id = c.set_id
                                WHERE c.query_id IN (SELECT query_id FROM queries WHERE run_id = $1) GROUP BY 1
                            ) n ON n.query_id = q.query_id
                            LEFT JOIN write_statistics w ON w.query_id = q.query_id
                            WHERE run_id = $1 ORDER BY captured_at""", [run_id]).fetchall()
        reads: dict[str, list[dict[str, Any]]] = {}
        for qid, ds, n, size, files in con.execute(
                """SELECT query_id, dataset, rows, bytes, files FROM read_statistics
                   WHERE query_id IN (SELECT query_id FROM queries WHERE run_id = ?) ORDER BY dataset""",
                [run_id]).fetchall():
            reads.setdefault(qid, []).append({"dataset": ds, "rows": n, "bytes": size, "files": files})
        related = _visible_family(con, request, families.family(con, run_id))
    keys = ("query_id", "action", "command", "status", "error", "sql_text", "duration_ms", "captured_at",
            "target_dataset", "edges", "rows", "bytes", "files")
    return {**dict(zip(("run_id", "app_name", "spark_version", "master", "started_at", "ended_at"), r)),
            **related, "queries": [{**dict(zip(keys, q)), "reads": reads.get(q[0], [])} for q in qs]}
