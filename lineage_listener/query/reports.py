"""Reports built on the graphs: who read a sensitive column, and where a column comes from.

Both return plain dicts and lists (JSON-ready apart from datetimes), so the CLI
and notebooks render them as they like.
"""
from __future__ import annotations

from typing import Any

import networkx as nx

from lineage_listener.query.expand import FAILED_WRITES, Node
from lineage_listener.query.graph import masking_status, origins
from lineage_listener.query.names import Aliases
from lineage_listener.query.store import LineageStore, TimeBound, resolve_column
from lineage_listener.query.timewindow import window


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
    lo, hi = window(since, until)
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
              AND ($lo IS NULL OR e.captured_at >= $lo) AND ($hi IS NULL OR e.captured_at <= $hi)
              AND ($all OR e.query_id NOT IN ({FAILED_WRITES}))
            GROUP BY ALL ORDER BY captured_at, e.query_id
            """, {"n": sorted(aliases.names(ds)), "c": col, "lo": lo, "hi": hi, "all": include_failed}).fetchall()
        names = [d[0] for d in con.description]
        out = [dict(zip(names, r)) for r in rows]
        aliases.resolve(r["target_dataset"] for r in out)
        for r in out:
            if r["target_dataset"] is not None:
                r["target_dataset"] = aliases.canonical(r["target_dataset"])
    return out


def impact(store: LineageStore, dataset: str, column: str, since: TimeBound = None,
           until: TimeBound = None, depth: int | None = None, include_failed: bool = False) -> dict[str, Any]:
    """Who read a sensitive column in a window and every column derived from it, hop by hop.

    Each derived column says whether its paths from the start passed through a
    masking function (``masked`` / ``partly`` / ``unmasked``) and which
    applications wrote it.

    >>> report = impact(store, "spark_catalog.crm.customers", "ssn", since="7d")  # doctest: +SKIP
    >>> [(d["dataset"], d["column"], d["masking"]) for d in report["downstream"]]  # doctest: +SKIP
    [('spark_catalog.crm.customers_hashed', 'ssn_hash', 'masked')]
    """
    g = store.downstream(dataset, column, depth=depth, since=since, until=until, include_failed=include_failed)
    start: Node = g.graph["start"]
    status = masking_status(g, start)
    caps = store.captures(g)
    runs = {c["run_id"] for edge_caps in caps.values() for c in edge_caps}
    read_rows = reads(store, start[0], start[1], since, until, include_failed)
    apps = _app_names(store, runs)
    derived = []
    for node in sorted(status, key=lambda n: (g.nodes[n]["depth"], n)):
        into = list(g.in_edges(node, data=True))
        writers = sorted({c["run_id"] for u, v, _ in into for c in caps.get((u, v), []) if c["run_id"]})
        derived.append({
            "hop": g.nodes[node]["depth"],
            "dataset": node[0], "column": node[1],
            "from": [{"dataset": u[0], "column": u[1], "transform": d["transform"],
                      "kind": d["kind"], "expression": d["expression"], "masking": d["masking"]}
                     for u, _, d in sorted(into, key=lambda e: e[0])],
            "masking": status[node],
            "runs": writers,
            "applications": sorted({apps.get(r) or r for r in writers}),
        })
    return {"dataset": start[0], "column": start[1], "since": g.graph["since"],
            "until": g.graph["until"], "reads": read_rows, "downstream": derived}


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
