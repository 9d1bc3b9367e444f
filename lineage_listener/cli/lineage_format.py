"""Rendering lineage graphs and reports for the terminal: text, JSON, DOT, Mermaid.

Shared by the ``upstream``, ``downstream``, ``impact`` and ``provenance`` commands.
"""
from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

import networkx as nx

from lineage_listener.cli import CliError, no_lineage_tables
from lineage_listener.cli.render import table
from lineage_listener.query import graph as lg
from lineage_listener.query.store import LineageStore, open_store

Node = tuple[str, str]


def add_common(p: argparse.ArgumentParser) -> None:
    """``--store DATASET COLUMN``: the arguments every lineage command takes."""
    p.add_argument("--store", required=True, help="path of the DuckDB store")
    p.add_argument("dataset", help="canonical dataset name, e.g. spark_catalog.shop.orders, or its path")
    p.add_argument("column", help="column name: s.x is field x of struct s, `s.x` a column named s.x")
    p.add_argument("--include-failed", action="store_true",
                   help="also follow edges of writes that failed (kept for audit; their target may not exist)")


def open_for_cli(path: str) -> LineageStore:
    """The store at ``path`` for a read command; a file that is no lineage store is a one-line error."""
    store = open_store(path)
    empty = no_lineage_tables(path)
    if empty:
        raise CliError(empty)
    return store


def guard(fn, *args, **kwargs):
    """Call ``fn`` turning bad user values (ValueError) into a one-line CliError."""
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def name(node: Node) -> str:
    """``dataset.column`` for catalog names, ``path [column]`` for URIs."""
    dataset, column = node
    return f"{dataset} [{column}]" if ":" in dataset or "/" in dataset else f"{dataset}.{column}"


def when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def to_json(value: Any) -> str:
    return json.dumps(value, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v),
                      indent=2)


# -- graphs ------------------------------------------------------------------------------

graph_data = lg.graph_data


def graph_dot(g: nx.DiGraph) -> str:
    ids = {n: f"n{i}" for i, n in enumerate(sorted(g.nodes))}
    out = ["digraph lineage {", "  rankdir=LR;", "  node [shape=box, fontname=monospace];"]
    for n, i in ids.items():
        style = ", style=bold" if n == g.graph["start"] else ""
        out.append(f"  {i} [label={json.dumps(name(n))}{style}];")
    for u, v, d in sorted(g.edges(data=True)):
        label = d["transform"] + (" (masked)" if d["masking"] else "") + (" (guess)" if d.get("guess") else "") \
            + (" (history)" if d.get("history") else "")
        dash = ", style=dashed" if d["kind"] != "direct" else ", style=dotted" if d.get("history") else ""
        out.append(f"  {ids[u]} -> {ids[v]} [label={json.dumps(label)}{dash}];")
    out.append("}")
    return "\n".join(out)


def graph_mermaid(g: nx.DiGraph) -> str:
    ids = {n: f"n{i}" for i, n in enumerate(sorted(g.nodes))}
    quote = lambda s: s.replace('"', "#quot;")  # noqa: E731
    out = ["flowchart LR"]
    for n, i in ids.items():
        out.append(f'  {i}["{quote(name(n))}"]')
    for u, v, d in sorted(g.edges(data=True)):
        arrow = "-->" if d["kind"] == "direct" else "-.->"
        out.append(f"  {ids[u]} {arrow}|{d['transform']}| {ids[v]}")
    return "\n".join(out)


def graph_text(g: nx.DiGraph, path_limit: int = 50) -> str:
    """Each path from the column to its sources (or impacts), then every edge as a table with what
    its far column is to the start (copy or influenced, masking, written before the window)."""
    start, direction = g.graph["start"], g.graph["direction"]
    window = _window_text(g.graph.get("since"), g.graph.get("until"))
    outside = (g.graph.get("window") or {}).get("outside")
    if g.number_of_edges() == 0:
        what = "comes from no captured column" if direction == "upstream" else "feeds no captured column"
        return f"{name(start)} {what}{window}" + (f": {outside['message']}." if outside else ".")
    ends = lg.origins(g) if direction == "upstream" else lg.leaves(g)
    ends = [e for e in ends if e != start]
    noun = "source" if direction == "upstream" else "impacted"
    out = [f"{direction.capitalize()} of {name(start)}: {g.number_of_nodes() - 1} columns, "
           f"{len(ends)} {noun} end column{'s' if len(ends) != 1 else ''}, "
           f"{max(d for _, d in g.nodes(data='depth'))} hops{window}.", COPY_MEANS, ""]
    shown = 0
    for shown, path in enumerate(lg.paths(g, start, direction, limit=path_limit), 1):
        steps = path[::-1] if direction == "upstream" else path
        out.append(f"path {shown}: {name(steps[0])}")
        for a, b in zip(steps, steps[1:]):
            d = g.edges[(b, a) if direction == "upstream" else (a, b)]
            arrow = "<-" if direction == "upstream" else "->"
            expr = f"  {d['expression']}" if d["expression"] else ""
            mask = "  [masked]" if d["masking"] else ""
            guess = "  [guess]" if d.get("guess") else ""
            out.append(f"    {arrow} {name(b)}   {d['transform']}{expr}{mask}{guess}{_history(d)}")
    if shown >= path_limit:
        out.append(f"... more paths not shown (first {path_limit}); see --format json")
    far = (lambda u, v: u) if direction == "upstream" else (lambda u, v: v)
    out += ["", table(
        ["hop", "source", "target", "transform", "kind", "expression", "captures", "last query", "captured_at",
         "reach"],
        [(d["hop"], name(u), name(v), ",".join(d["transforms"]) + (" (guess)" if d.get("guess") else "")
          + _history(d), d["kind"], d["expression"],
          d["captures"], d["query_id"], when(d["captured_at"]), _reach(g.nodes[far(u, v)]))
         for u, v, d in sorted(g.edges(data=True), key=lambda e: (e[2]["hop"], e[0], e[1]))])]
    if outside:
        out += ["", f"Outside the window: {outside['message']}."]
    return "\n".join(out)


def _history(edge: dict[str, Any]) -> str:
    """`` [history: replaced ...]`` for an edge a later replacing write of its target overwrote (or for
    those of its transforms only such writes hold)."""
    replaced = edge.get("history")
    if replaced:
        return f"  [history: replaced {when(replaced['captured_at'])}]"
    return f"  [history: {','.join(edge['replaced'])}]" if edge.get("replaced") else ""


def _reach(node: dict[str, Any]) -> str:
    """What a column is to the start, in a few words: ``copy (masked)``, ``influenced (join)``..."""
    reach = node.get("reach") or ""
    detail = node.get("masking") or ",".join(node.get("via", ()))
    text = f"{reach} ({detail})" if detail else reach
    return text + (", before the window" if node.get("before_window") else "")


def _window_text(since: datetime | None, until: datetime | None) -> str:
    """The window, said as the rule that applies: a path's last write was captured in it."""
    if since and until:
        return f" (paths whose last write was captured {when(since)} .. {when(until)})"
    if since:
        return f" (paths whose last write was captured since {when(since)})"
    if until:
        return f" (paths whose last write was captured until {when(until)})"
    return ""


def render_graph(g: nx.DiGraph, fmt: str) -> str:
    if fmt == "json":
        return to_json(graph_data(g))
    if fmt == "dot":
        return graph_dot(g)
    if fmt == "mermaid":
        return graph_mermaid(g)
    return graph_text(g)


# -- reports -----------------------------------------------------------------------------

#: What "copy" means, said once in every text answer that lists copies.
COPY_MEANS = ("copy: a column holding the start's values through direct steps only (identity, rename, derived, "
              "aggregate); influenced: reached only through a filter, join, group, sort, window or condition key")


def impact_text(report: dict[str, Any]) -> str:
    start = (report["dataset"], report["column"])
    out = [f"Impact of {name(start)}{_window_text(report['since'], report['until'])}", COPY_MEANS, ""]
    reads = report["reads"]
    out.append(f"Read by {len(reads)} quer{'y' if len(reads) == 1 else 'ies'} in "
               f"{len({r['run_id'] for r in reads})} run(s):")
    if reads:
        out.append(table(["captured_at", "application", "run", "query", "action", "result", "as"],
                         [(when(r["captured_at"]), r["app_name"], r["run_id"], r["query_id"], r["action"],
                           r["target_dataset"] or "driver (read only)", ",".join(r["transforms"]))
                          for r in reads]))
    copies, influenced = report["downstream"], report["influenced"]
    counts = ", ".join(f"{sum(c['masking'] == m for c in copies)} {word}"
                       for m, word in (("unmasked", "unmasked"), ("partly", "partly masked"),
                                       ("masked", "masked on every path")))
    out += ["", f"Copies: {len(copies)}" + (f" ({counts})" if copies else "")]
    if copies:
        out.append(table(["hop", "dataset", "column", "masking", "from", "transform", "written by"],
                         [(c["hop"], c["dataset"], c["column"], c["masking"], _sources(c, "direct"),
                           ",".join(sorted({f["transform"] for f in c["from"] if f["kind"] == "direct"})),
                           ", ".join(c["applications"])) for c in copies]))
    out += ["", f"Influenced by it, not copies: {len(influenced)}"]
    if influenced:
        out.append(table(["hop", "dataset", "column", "via", "from", "written by"],
                         [(c["hop"], c["dataset"], c["column"], ",".join(c["via"]), _sources(c),
                           ", ".join(c["applications"])) for c in influenced]))
    outside = report["window"]["outside"]
    if outside:
        out += ["", f"Outside the window: {outside['message']}."]
    return "\n".join(out)


def _sources(entry: dict[str, Any], kind: str | None = None) -> str:
    """The columns an impact entry was written from (of one ``kind`` of step, or all); a step that is
    a conservative guess says so."""
    return ", ".join(name((f["dataset"], f["column"])) + (" (guess)" if f.get("guess") else "")
                     for f in entry["from"] if kind in (None, f["kind"]))


def provenance_text(report: dict[str, Any]) -> str:
    start = (report["dataset"], report["column"])
    origins = report["origins"]
    if not origins:
        return f"{name(start)} is itself an origin: no captured column flows into it."
    out = [f"{name(start)} comes from {len(origins)} origin column{'s' if len(origins) != 1 else ''}:", ""]
    for o in origins:
        out.append(f"origin {name((o['dataset'], o['column']))}")
        for path in o["paths"]:
            for s in path:
                expr = f"  {s['expression']}" if s["expression"] else ""
                mask = "  [masked]" if s["masking"] else ""
                out.append(f"    -> {name(tuple(s['target']))}   {s['transform']}{expr}{mask}"
                           f"   ({s['app_name'] or s['run_id']}, {when(s['captured_at'])})")
            out.append("")
    out.append(f"Contributing runs: {len(report['runs'])}")
    out.append(table(["run", "application", "step", "transform", "expression", "query", "captured_at"],
                     [(r["run_id"], r["app_name"], f"{name(tuple(s['source']))} -> {name(tuple(s['target']))}",
                       s["transform"], s["expression"], s["query_id"], when(s["captured_at"]))
                      for r in report["runs"] for s in r["steps"]]))
    return "\n".join(out)


def register_graph_command(p: argparse.ArgumentParser, direction: str) -> None:
    """The options of ``upstream`` or ``downstream``: the same, one graph method of the store each."""
    add_common(p)
    p.add_argument("--depth", type=int, default=None, help="hops to follow (default: all)")
    p.add_argument("--since", help="only edges captured at or after: 2025-03-01, 2025-03-01T12:00, 7d, 24h, 30m")
    p.add_argument("--until", help="only edges captured at or before (same forms; a bare date includes that day)")
    p.add_argument("--direct-only", action="store_true", help="follow direct edges only (no filter/join keys)")
    p.add_argument("--format", choices=("table", "json", "dot", "mermaid"), default="table")

    def run(args: argparse.Namespace) -> int:
        store = open_for_cli(args.store)
        g = guard(getattr(store, direction), args.dataset, args.column, depth=args.depth, since=args.since,
                  until=args.until, direct_only=args.direct_only, include_failed=args.include_failed)
        print(render_graph(g, args.format))
        return 0

    p.set_defaults(func=run)
