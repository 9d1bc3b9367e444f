"""A column's lineage as the JSON the REST API returns and the UI draws (nodes and edges)."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from lineage_listener.query.graph import graph_data
from lineage_listener.query.kept import merge_windows
from lineage_listener.query.store import LineageStore

Direction = Literal["backward", "forward", "both"]
WALKS = {"backward": ("upstream",), "forward": ("downstream",), "both": ("upstream", "downstream")}


def column_lineage(store: LineageStore, dataset: str, column: str, direction: Direction = "backward",
                   depth: int | None = None, since: datetime | None = None, until: datetime | None = None,
                   direct_only: bool = False, include_failed: bool = False) -> dict[str, Any]:
    """``{"start", "direction", "window", "nodes": [{dataset, column, depth, reach, ...}], "edges":
    [{source, target, transform, kind, expression, masking, query_id, captured_at, ...}], "queries"}``.

    Each node's ``reach`` (``start``, ``copy``, ``influenced``) is relative to the start in the
    direction of the walk that found it; ``both`` merges the two walks (a column found by both
    keeps what the backward walk says) and their windows' ``outside`` captures. ``queries``: for
    each edge's ``query_id``, the job that wrote it (``app_name``, ``run_id``, ``action``,
    ``captured_at``), which the UI draws between datasets.
    """
    out: dict[str, Any] = {"dataset": dataset, "column": column, "direction": direction, "nodes": [], "edges": []}
    nodes: dict[tuple, dict] = {}
    seen: set[tuple] = set()
    windows = []
    for walk in WALKS[direction]:
        data = graph_data(getattr(store, walk)(dataset, column, depth=depth, since=since, until=until,
                                               direct_only=direct_only, include_failed=include_failed))
        out["start"] = data["start"]
        windows.append(data["window"])
        for n in data["nodes"]:
            nodes.setdefault((n["dataset"], n["column"]), n)
        for e in data["edges"]:
            key = (e["source"]["dataset"], e["source"]["column"], e["target"]["dataset"], e["target"]["column"])
            if key not in seen:
                seen.add(key)
                out["edges"].append(e)
    out["nodes"] = list(nodes.values())
    out["window"] = merge_windows(windows, empty=not out["edges"])
    out["queries"] = queries(store, {e["query_id"] for e in out["edges"] if e.get("query_id")})
    return out


def queries(store: LineageStore, ids: set[str]) -> dict[str, dict[str, Any]]:
    """The job behind each query of ``ids``: ``{query_id: {app_name, run_id, action, captured_at}}``."""
    if not ids:
        return {}
    with store.connect() as con:
        rows = con.execute("""SELECT q.query_id, r.app_name, q.run_id, q.action, q.captured_at
                              FROM queries q LEFT JOIN runs r USING (run_id)
                              WHERE q.query_id IN (SELECT unnest($ids))""", {"ids": sorted(ids)}).fetchall()
    return {r[0]: dict(zip(("app_name", "run_id", "action", "captured_at"), r[1:])) for r in rows}
