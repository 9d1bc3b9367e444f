"""The label questions, over a store: which labels a column, a dataset or the whole store carries,
declared or propagated, and why (the path of edges back to the labelled column).

>>> from lineage_listener.query import open_store                                  # doctest: +SKIP
>>> answer = column_labels(open_store("lineage.duckdb"), "file:/data/exports/partner.csv")  # doctest: +SKIP
>>> [(c["column"], [x["label"] for x in c["labels"]]) for c in answer["columns"]]  # doctest: +SKIP
[('email', ['pii.email'])]
"""
from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb
import networkx as nx

from lineage_listener.govern import labelstore
from lineage_listener.govern.labelfile import known_columns
from lineage_listener.govern.labelstore import Declared, effective
from lineage_listener.govern.propagate import Reached, path_rows, propagate
from lineage_listener.govern.reach import CaptureBook, copies_to, reachable_datasets, upstream_datasets, walk
from lineage_listener.query.current import Replaces, edge_times, replaces, split_ids
from lineage_listener.query.expand import Filters, Remembered, columns_of, nearest_captures
from lineage_listener.query.types import LineageStep, Node
from lineage_listener.query.names import Aliases
from lineage_listener.query.store import LineageStore, UnknownNameError, resolve_column
from lineage_listener.timewindow import window


#: ``reuse(name, make)``: ``make()``, or what an earlier question over the same unchanged store made
#: under ``name`` (:meth:`~lineage_listener.query.store.LineageStore.reuse`).
Reuse = Callable[[str, Callable[[], Any]], Any]


def fresh(name: str, make: Callable[[], Any]) -> Any:
    """Nothing reused: ``make()``."""
    return make()


@dataclass
class Propagation:
    """One propagation over a store: the graph walked, the declarations on it, what reached where."""

    graph: nx.DiGraph
    declared: dict[Node, list[Declared]]
    reached: dict[str, dict[Node, Reached]]
    book: CaptureBook
    aliases: Aliases
    masking: frozenset[str]
    since: datetime | None = None
    until: datetime | None = None
    #: the replacing writes it judged the current state by (None: the labels over all time)
    current: Replaces | None = None

    def carried(self, node: Node) -> dict[str, Reached | Declared]:
        """The labels ``node`` carries: declared (true) ones and propagated copies."""
        out: dict[str, Reached | Declared] = {}
        for label, d in effective(self.declared.get(node, [])).items():
            if d.value:
                out[label] = d
        for label, found in self.reached.items():
            r = found.get(node)
            if r is not None and r.state == "copy" and label not in out:
                out[label] = r
        return out

    def hops(self, reached: Reached) -> list[dict]:
        """The path's hops as data, each with its query, run, application and capture times."""
        return self.book.pin(reached.hops)


def run(con: duckdb.DuckDBPyConnection, starts: Iterable[Node] | None = None, since: datetime | None = None,
        until: datetime | None = None, masking: Iterable[str] = (), influence: bool = True,
        extra: Iterable[LineageStep] = (), aliases: Aliases | None = None, reuse: Reuse = fresh,
        current: bool | Replaces = False) -> Propagation:
    """Propagate every declared label: to ``starts`` (the labels those columns get: from the
    declared columns upstream of them), or downstream of every declared column when ``starts`` is
    None. ``extra``: edges not in the store (a preview) walked as if captured; ``reuse``: what
    earlier questions read of the same store (:data:`Reuse`): the declared labels, the masking
    functions, the hops between datasets (:data:`~lineage_listener.govern.reach.Hops`), the
    hops between columns a walk with influence read
    (:class:`~lineage_listener.query.expand.Remembered`), the known columns of datasets.

    ``current``: the labels the columns carry now (docs/reference/semantics.md, "Current state"):
    a hop into a dataset a later write replaced carries nothing there any more. True reads the
    store's replacing writes; :class:`~lineage_listener.query.current.Replaces` gives them (a
    preview adds the writes it plans)."""
    aliases = aliases or Aliases(con)
    starts = None if starts is None else list(starts)
    decl = reuse("declared", lambda: labelstore.declared(con, aliases))
    names = reuse("masking", lambda: labelstore.masking_functions(con)) | frozenset(m.lower() for m in masking)
    hops = reuse("hops", dict)
    extra = list(extra)
    if not decl:  # no label anywhere: nothing to walk for
        g = nx.DiGraph()
        g.add_nodes_from(starts or [])
        return Propagation(g, {}, {}, CaptureBook(con, until), aliases, names, since, until)
    # every capture up to ``until``: a path may use data written before the window (keep decides)
    filters = Filters(until=until, direct_only=not influence)
    if starts is None:
        seeds = [n for n, items in decl.items() if any(d.value for d in items)]
        g = walk(con, seeds, "downstream", filters, aliases, extra)
    elif extra:
        g = walk(con, starts, "upstream", filters, aliases, extra)
    elif not influence:
        # From the declared columns upstream of the question (its copies travel along direct edges
        # only) down to it, through the columns on those paths only.
        above, datasets = upstream_datasets(con, {n[0] for n in starts}, aliases, hops)
        seeds = [n for n, items in decl.items() if n[0] in above and any(d.value for d in items)]
        g = copies_to(con, starts, seeds, datasets, filters, aliases)
    else:
        # With influence, through the datasets upstream (an indirect edge reaches a whole dataset).
        above = reachable_datasets(con, {n[0] for n in starts}, aliases, "upstream", direct_only=False, known=hops)
        seeds = [n for n, items in decl.items() if n[0] in above and any(d.value for d in items)]
        rows = reuse(f"rows {filters}", lambda: Remembered(filters))
        g = walk(con, seeds, "downstream", filters, aliases, within=lambda node: node[0] in above,
                 among=rows.over(con), columns=reuse("columns", dict))
        g.add_nodes_from(starts)
    on_graph = {n: items for n, items in decl.items() if n in g}
    eff = {n: {label: d.value for label, d in effective(items).items()} for n, items in on_graph.items()}
    replaced = (replaces(con, aliases, until) if current is True else current) or None
    times = edge_times(con, split_ids(g, replaced), filters) if replaced else None
    reached = propagate(g, eff, names, lambda asked: nearest_captures(con, asked, filters), since, until,
                        at=None if starts is None else starts, current=replaced, times=times)
    return Propagation(g, on_graph, reached, CaptureBook(con, until), aliases, names, since, until, replaced)


def _declared_row(d: Declared, node: Node) -> dict[str, Any]:
    return {"label": d.label, "value": d.value, "source": d.source, "origin": d.origin, "set_by": d.set_by,
            "set_at": d.set_at, "path": [[node[0], node[1], None]]}


def _reached_row(p: Propagation, r: Reached) -> dict[str, Any]:
    row = {"label": r.label, "value": True, "source": "propagated", "from": list(r.origin),
           "path": path_rows(r), "hops": p.hops(r)}
    if r.state == "influenced":
        row["via"] = r.via
    return row


def column_row(p: Propagation, node: Node, propagated: bool = True) -> dict[str, Any]:
    """One column's answer: ``labels`` it carries (declared, propagated), ``masked`` (labels that
    reach it only through masking), ``influenced_by`` (labels past an indirect edge)."""
    carried = p.carried(node) if propagated else {}
    labels = [_declared_row(d, node) for d in effective(p.declared.get(node, [])).values()]
    if propagated:
        labels += [_reached_row(p, r) for lb, r in sorted(carried.items()) if isinstance(r, Reached)]
    labels.sort(key=lambda x: (x["label"], x["source"] != "propagated"))
    row: dict[str, Any] = {"dataset": node[0], "column": node[1], "labels": labels}
    if propagated:
        row["masked"] = [_reached_row(p, found[node]) for label, found in sorted(p.reached.items())
                         if node in found and found[node].state == "masked" and label not in carried]
        row["influenced_by"] = [_reached_row(p, found[node]) for label, found in sorted(p.reached.items())
                                if node in found and found[node].state == "influenced" and label not in carried]
    return row


def _has_any(row: dict) -> bool:
    return bool(row["labels"] or row.get("masked") or row.get("influenced_by"))


@contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, back on after it if it was on. A label
    question makes hundreds of thousands of small objects (key edges, capture times, graph records),
    few of them in cycles; the collections they would trigger each scan every live object again (a
    quarter of the CPU of a large question, docs/performance.md); cycles made in the block are
    collected after it.

    >>> with collection_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def column_labels(store: LineageStore, dataset: str | None = None, column: str | None = None,
                  propagated: bool = True, since: str | datetime | None = None,
                  until: str | datetime | None = None, masking: Iterable[str] = (),
                  influence: bool = True, history: bool = False) -> dict[str, Any]:
    """``{"columns": [{"dataset", "column", "labels": [{"label", "source", "path", ...}], "masked",
    "influenced_by"}]}``: every labelled column of the store, of ``dataset``, or one column.

    ``source`` is ``set``, ``file``, ``spark`` (declared) or ``propagated``; ``path`` runs
    ``[[dataset, column, transform], ...]`` from the labelled column to this one. ``influence=False``
    leaves out what only indirect edges reach (a walk over direct edges only: quicker). What one
    question learnt of the store (names, hops between datasets, declared labels) serves the next
    while the store is unchanged (:meth:`~lineage_listener.query.store.LineageStore.reuse`). Python's cyclic
    garbage collector waits while it runs (:func:`collection_paused`).

    Without a window, the labels the columns carry now: a copy a later replacing write of its
    dataset overwrote is gone (docs/reference/semantics.md, "Current state"); ``history``, or a
    window (``since``/``until``), looks at the past: every path captured in it."""
    lo, hi = window(since, until)
    current = not history and lo is None and hi is None
    with collection_paused(), store.connect() as con:
        aliases = store.reuse("aliases", lambda: Aliases(con)).bound(con)
        if dataset is None:
            if not propagated:
                decl = store.reuse("declared", lambda: labelstore.declared(con, aliases))
                p = Propagation(nx.DiGraph(), decl, {}, CaptureBook(con), aliases, frozenset())
                rows = [column_row(p, n, propagated=False) for n in sorted(decl)]
                return {"columns": [r for r in rows if r["labels"]]}
            p = run(con, None, lo, hi, masking, influence, aliases=aliases, reuse=store.reuse, current=current)
            nodes = sorted(set(p.graph.nodes) | set(p.declared))
        else:
            nodes = columns(con, aliases, dataset, column, store.reuse("columns", dict))
            p = run(con, nodes, lo, hi, masking, influence, aliases=aliases, reuse=store.reuse, current=current)
        wanted = set(nodes)
        p.book.load(h for found in p.reached.values() for n, r in found.items() if n in wanted for h in r.hops)
        rows = [column_row(p, n, propagated) for n in nodes]
        return {"columns": [r for r in rows if _has_any(r) or dataset is not None]}


def columns(con: duckdb.DuckDBPyConnection, aliases: Aliases, dataset: str, column: str | None = None,
            known: dict[str, list[str]] | None = None) -> list[Node]:
    """The columns a question names: one (``column``) or every known column of ``dataset``;
    :class:`~lineage_listener.query.store.UnknownNameError` for a name the store does not know.
    ``known``: the known columns of datasets read before (:func:`~lineage_listener.query.expand.columns_of`)."""
    if column is not None:
        return [resolve_column(con, aliases, dataset, column)]
    canonical = aliases.canonical(dataset)
    cols = columns_of(con, {canonical}, aliases, known).get(canonical)
    if not cols:
        cols = sorted(known_columns(con, sorted(aliases.names(canonical))))
    if not cols:
        resolve_column(con, aliases, dataset, "\0")  # raises with the closest known datasets
        raise UnknownNameError(f"dataset {canonical} has no known columns")
    return [(canonical, c) for c in cols]


def dataset_labels(con: duckdb.DuckDBPyConnection, datasets: Iterable[str]
                   ) -> dict[str, list[tuple[str, str, bool, str]]]:
    """Per dataset (as named in ``datasets``), ``(column, label, value, source)`` of its columns' labels:
    declared ones (a review with value False) and propagated copies (source ``propagated``). What the
    exports put on datasets (OpenLineage tags, DataHub tags); nothing is walked when no label exists."""
    aliases = Aliases(con)
    if not labelstore.declared(con, aliases):
        return {}
    wanted = sorted({d for d in datasets if d})
    aliases.resolve(wanted)
    nodes: dict[str, list[Node]] = {}
    for name in wanted:
        canonical = aliases.canonical(name)
        nodes[name] = [(canonical, c) for c in columns_of(con, {canonical}, aliases).get(canonical, [])]
    p = run(con, sorted({n for ns in nodes.values() for n in ns}), influence=False, aliases=aliases, current=True)
    out: dict[str, list[tuple[str, str, bool, str]]] = {}
    for name, ns in nodes.items():
        rows = []
        for node in ns:
            for label, d in sorted(effective(p.declared.get(node, [])).items()):
                if not d.value:
                    rows.append((node[1], label, False, d.source))
            for label, how in sorted(p.carried(node).items()):
                rows.append((node[1], label, True, "propagated" if isinstance(how, Reached) else how.source))
        if rows:
            out[name] = rows
    return out
