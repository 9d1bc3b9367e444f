"""A column's lineage as the JSON the REST API returns and the UI draws (nodes and edges)."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from lineage_listener.query.graph import graph_data
from lineage_listener.query.store import LineageStore

Direction = Literal["backward", "forward", "both"]
WALKS = {"backward": ("upstream",), "forward": ("downstream",), "both": ("upstream", "downstream")}


def column_lineage(store: LineageStore, dataset: str, column: str, direction: Direction = "backward",
                   depth: int | None = None, since: datetime | None = None, until: datetime | None = None,
                   direct_only: bool = False, include_failed: bool = False) -> dict[str, Any]:
    """``{"start", "direction", "nodes": [{dataset, column, depth}], "edges": [{source, target, transform,
    kind, expression, masking, query_id, captured_at, ...}]}``; ``both`` merges the two walks."""
    out: dict[str, Any] = {"dataset": dataset, "column": column, "direction": direction, "nodes": [], "edges": []}
    nodes: dict[tuple, dict] = {}
    seen: set[tuple] = set()
    for walk in WALKS[direction]:
        data = graph_data(getattr(store, walk)(dataset, column, depth=depth, since=since, until=until,
                                               direct_only=direct_only, include_failed=include_failed))
        out["start"] = data["start"]
        for n in data["nodes"]:
            nodes.setdefault((n["dataset"], n["column"]), n)
        for e in data["edges"]:
            key = (e["source"]["dataset"], e["source"]["column"], e["target"]["dataset"], e["target"]["column"])
            if key not in seen:
                seen.add(key)
                out["edges"].append(e)
    out["nodes"] = list(nodes.values())
    return out
