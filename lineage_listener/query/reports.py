"""Reports built on the graphs: who read a sensitive column, and where a column comes from.

Both return plain dicts and lists (JSON-ready apart from datetimes), so the CLI
and notebooks render them as they like.
"""
from __future__ import annotations

from typing import Any

import networkx as nx

from lineage_listener.query.expand import FAILED_WRITES
from lineage_listener.query.types import Node
from lineage_listener.query.copies import COPY, INFLUENCED
from lineage_listener.query.graph import origins
from lineage_listener.query.names import Aliases
from lineage_listener.query.store import LineageStore, TimeBound, resolve_column
from lineage_listener.timewindow import window, window_sql


def _app_names(store: LineageStore, run_ids: set[str]) -> dict[str, str | None]:
    if not run_ids:
        return {}
    with store.connect() as con:
        return dict(con.execute("SELECT run_id, app_name FROM runs WHERE run_id IN (SELECT unnest($r))",
                                {"r": sorted(run_ids)}).fetchall())


def reads(store: LineageStore, dataset: str, column: str, since: TimeBound = None,
          until: TimeBound = None, include_failed: bool = False) -> list[dict[str, Any]]:
    """Every query that read ``dataset.column`` in the window, writes and driver reads alike
    (writes Spark rejected only with ``include_failed``; ``status`` tells them apart).

    >>> reads(store, "spark_catalog.crm.customers", "ssn", since="30d")   # doctest: +SKIP
    [{'query_id': 'app-1:4', 'run_id': 'app-1', 'app_name': 'export', 'action': 'collect',
      'target_dataset': None, 'transforms': ['identity'], 'captured_at': ...}]
    """
    within, bounds = window_sql("e.captured_at", *window(since, until))
    with store.connect() as con:
        aliases = Aliases(con)
        ds, col = resolve_column(con, aliases, dataset, column)
        rows = con.execute(
            f"""
            SELECT e.query_id, e.run_id, r.app_name, q.action, q.status, e.target_dataset,
                   list(DISTINCT e.transform ORDER BY e.transform) AS transforms,
                   bool_or(e.masking) AS masking, min(e.captured_at) AS captured_at
            FROM column_lineage e
            LEFT JOIN queries q USING (query_id)
            LEFT JOIN runs r ON r.run_id = e.run_id
            WHERE e.source_dataset IN (SELECT unnest($n)) AND e.source_column = $c
              AND {within}
              AND ($all OR e.query_id NOT IN ({FAILED_WRITES}))
            GROUP BY ALL ORDER BY captured_at, e.query_id
            """, {"n": sorted(aliases.names(ds)), "c": col, **bounds, "all": include_failed}).fetchall()
        names = [d[0] for d in con.description]
        out = [dict(zip(names, r)) for r in rows]
        aliases.resolve(r["target_dataset"] for r in out)
        for r in out:
            if r["target_dataset"] is not None:
                r["target_dataset"] = aliases.canonical(r["target_dataset"])
    return out


#: Copies listed most exposed first.
MASKING_ORDER = {"unmasked": 0, "partly": 1, "masked": 2}


def impact(store: LineageStore, dataset: str, column: str, since: TimeBound = None,
           until: TimeBound = None, depth: int | None = None, include_failed: bool = False) -> dict[str, Any]:
    """Who read a sensitive column in a window, which columns hold a copy of it, and which it
    only influenced (docs/reference/semantics.md: copies and influence, masking, time windows).

    ``downstream`` lists the copies (reached by direct steps only), unmasked first, each with
    ``masking`` (``unmasked`` / ``partly`` / ``masked``); ``influenced`` the columns reached only
    through some indirect step (filter, join, group_by, sort, window, conditional), each with
    ``via`` (those transforms). A column is listed when a write into it was captured in the
    window; ``window`` gives the window and what lies outside it (``outside``). Each column says
    which steps wrote it (``from``) and the applications and runs that did, in the window.

    >>> report = impact(store, "spark_catalog.crm.customers", "ssn", since="7d")  # doctest: +SKIP
    >>> [(d["dataset"], d["column"], d["masking"]) for d in report["downstream"]]  # doctest: +SKIP
    [('spark_catalog.crm.customers_hashed', 'ssn_hash', 'masked')]
    """
    g = store.downstream(dataset, column, depth=depth, since=since, until=until, include_failed=include_failed)
    start: Node = g.graph["start"]
    caps = store.captures(g)
    runs = {c["run_id"] for edge_caps in caps.values() for c in edge_caps}
    read_rows = reads(store, start[0], start[1], since, until, include_failed)
    apps = _app_names(store, runs)
    listed: dict[str, list[dict[str, Any]]] = {COPY: [], INFLUENCED: []}
    for node, d in sorted(g.nodes(data=True), key=lambda x: (x[1]["depth"], x[0])):
        if d.get("reach") not in listed or d.get("before_window"):
            continue
        into = sorted(g.in_edges(node, data=True), key=lambda e: e[0])
        writers = sorted({c["run_id"] for u, v, _ in into for c in caps.get((u, v), []) if c["run_id"]})
        entry = {"hop": d["depth"], "dataset": node[0], "column": node[1],
                 "from": [{"dataset": u[0], "column": u[1], "transform": e["transform"], "kind": e["kind"],
                           "expression": e["expression"], "masking": e["masking"],
                           "before_window": e["before_window"], "query_id": e.get("query_id"),
                           "guess": e.get("guess", False)}
                          for u, _, e in into]}
        entry.update({"masking": d["masking"]} if d["reach"] == COPY else {"via": d["via"]})
        entry.update(runs=writers, applications=sorted({apps.get(r) or r for r in writers}))
        listed[d["reach"]].append(entry)
    listed[COPY].sort(key=lambda c: MASKING_ORDER[c["masking"]])
    return {"dataset": start[0], "column": start[1], "since": g.graph["since"], "until": g.graph["until"],
            "window": g.graph["window"], "reads": read_rows, "downstream": listed[COPY],
            "influenced": listed[INFLUENCED]}


def provenance(store: LineageStore, dataset: str, column: str, direct_only: bool = True,
               path_limit: int = 100, include_failed: bool = False) -> dict[str, Any]:
    """The origin columns of ``dataset.column`` and the operations applied on the way.

    Follows direct edges only by default (where the values came from; filter
    and join keys are not origins). ``origins`` lists each origin with its
    paths, each path a list of steps origin -> target; ``runs`` lists, per
    contributing run, the steps it performed.

    >>> p = provenance(store, "spark_catalog.shop.report", "total")     # doctest: +SKIP
    >>> [(o["dataset"], o["column"]) for o in p["origins"]]            # doctest: +SKIP
    [('file:/data/raw/orders.csv', 'amount')]
    """
    g = store.upstream(dataset, column, direct_only=direct_only, include_failed=include_failed)
    start: Node = g.graph["start"]
    caps = store.captures(g)
    runs = {c["run_id"] for edge_caps in caps.values() for c in edge_caps}
    apps = _app_names(store, runs)
    found = []
    count = 0
    for origin in origins(g):
        if origin == start:
            continue
        chains = []
        for path in nx.all_simple_paths(g, origin, start):
            chains.append([_step(g, u, v, apps) for u, v in zip(path, path[1:])])
            count += 1
            if count >= path_limit:
                break
        found.append({"dataset": origin[0], "column": origin[1], "paths": chains})
    per_run: dict[str, list[dict[str, Any]]] = {}
    for (u, v), edge_caps in caps.items():
        for r in edge_caps:
            per_run.setdefault(r["run_id"], []).append(
                {"source": list(u), "target": list(v), "transform": r["transform"],
                 "expression": r["expression"], "query_id": r["query_id"],
                 "captured_at": r["captured_at"], "masking": r["masking"]})
    return {
        "dataset": start[0], "column": start[1],
        "origins": found,
        "runs": [{"run_id": run, "app_name": apps.get(run),
                  "steps": sorted(steps, key=lambda s: (s["captured_at"], s["query_id"]))}
                 for run, steps in sorted(per_run.items(),
                                          key=lambda kv: min(s["captured_at"] for s in kv[1]))],
    }


def _step(g: nx.DiGraph, u: Node, v: Node, apps: dict[str, str | None]) -> dict[str, Any]:
    d = g.edges[u, v]
    return {"source": list(u), "target": list(v), "transform": d["transform"],
            "expression": d["expression"], "masking": d["masking"], "query_id": d["query_id"],
            "run_id": d["run_id"], "app_name": apps.get(d["run_id"]),
            "captured_at": d["captured_at"], "captures": d["captures"]}
