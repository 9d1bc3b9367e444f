"""Labels that newly reach columns: what a lineage diff reports (``labels`` of ``lineage-listener diff``).

Two sides of a diff are two sets of edges (two runs of an application, two windows, two
stores). Each side's source columns carry what the store says they carry (declared labels,
and copies propagated to them); the labels travel along each side's own edges by the rules of
docs/reference/semantics.md (copies only, stopped by masking and by reviews). A label that
reaches a column on the new side and did not on the old one is reported: a refactor that
starts copying a labelled column somewhere.

>>> labels_reaching(duckdb.connect(), "old_edges", "new_edges")    # a store without labels
[]
"""
from __future__ import annotations

from typing import Any

import duckdb
import networkx as nx

from lineage_listener.govern import labelstore
from lineage_listener.govern.answers import run
from lineage_listener.govern.labelstore import effective
from lineage_listener.govern.propagate import propagate
from lineage_listener.query.names import Aliases

Node = tuple[str, str]
_COLUMNS = "target_dataset, target_column, source_dataset, source_column, transform, kind, expression, masking"


def side_graph(rows: list[tuple]) -> nx.DiGraph:
    """A graph of one side's edges (rows in ``_COLUMNS`` order), usable at any time (no captures)."""
    g = nx.DiGraph()
    for t_ds, t_col, s_ds, s_col, transform, kind, expression, masking in rows:
        if t_ds is None or t_col is None or s_col is None:
            continue  # a read, or a filter over a whole target: carries no label
        record = {"transform": transform, "kind": kind, "expression": expression, "masking": bool(masking),
                  "edge_id": None, "query_id": None, "run_id": None}  # no capture times: usable at any time
        if g.has_edge((s_ds, s_col), (t_ds, t_col)):
            g.edges[(s_ds, s_col), (t_ds, t_col)]["records"].append(record)
        else:
            g.add_edge((s_ds, s_col), (t_ds, t_col), records=[record])
    return g


def labels_reaching(con: duckdb.DuckDBPyConnection | None, old_edges: str, new_edges: str) -> list[dict[str, Any]]:
    """Labels that reach a column through the new side's edges and did not through the old side's.

    ``old_edges`` / ``new_edges``: temporary tables of ``con`` holding each side's distinct edges
    under canonical dataset names (``target_dataset``, ``target_column``, ``source_dataset``,
    ``source_column``, ``transform``, ``kind``, ``expression``, ``masking``); ``con`` also reads
    the store. Each item: ``{"label", "dataset", "column", "from": {"dataset", "column"}}`` (the
    column of the side it was copied from). Empty while the store holds no classifications.
    """
    if con is None:
        return []
    aliases = Aliases(con)
    declared = labelstore.declared(con, aliases)
    if not declared:
        return []
    sides = {name: con.execute(f"SELECT {_COLUMNS} FROM {table}").fetchall()
             for name, table in (("old", old_edges), ("new", new_edges))}
    graphs = {name: side_graph(rows) for name, rows in sides.items()}
    sources = sorted({n for g in graphs.values() for n in g.nodes if g.in_degree(n) == 0})
    p = run(con, sources, influence=False, aliases=aliases)
    start: dict[Node, dict[str, bool]] = {n: {lb: d.value for lb, d in effective(items).items()}
                                          for n, items in declared.items()}
    for node in sources:
        for label in p.carried(node):
            start.setdefault(node, {})[label] = True
    reached = {name: propagate(g, start, p.masking) for name, g in graphs.items()}
    out = []
    for label, found in sorted(reached["new"].items()):
        before = reached["old"].get(label, {})
        for node, r in sorted(found.items()):
            if r.state == "copy" and (node not in before or before[node].state != "copy"):
                out.append({"label": label, "dataset": node[0], "column": node[1],
                            "from": {"dataset": r.origin[0], "column": r.origin[1]}})
    return out
