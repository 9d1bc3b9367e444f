"""The lineage graphs label propagation needs, read from a store, and the captures behind a path.

A label question about some columns walks upstream from them (where could a label come
from?); a question about the whole store walks downstream from every declared column. Both are
the query layer's multi-hop expansion (:func:`~lineage_listener.query.expand.expand`), many
start columns at once, into the graph :func:`~lineage_listener.query.graph.build_graph` makes.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import TypeVar

import duckdb
import networkx as nx

from lineage_listener.govern.propagate import Hop
from lineage_listener.query.expand import COLUMN_KEY_SQL, Among, Fetch, Filters, captures_at, column_key, expand
from lineage_listener.query.types import Direction, LineageStep, Node
from lineage_listener.query.lookups import indexed
from lineage_listener.query.graph import build_graph
from lineage_listener.query.names import TABLE_ROWS_SQL, Aliases, alias_rows_sql

T = TypeVar("T")


def walk(con: duckdb.DuckDBPyConnection, starts: Iterable[Node], direction: Direction,
         filters: Filters = Filters(), aliases: Aliases | None = None, extra: Iterable[LineageStep] = (),
         within: Callable[[Node], bool] | None = None, among: Fetch | None = None,
         columns: dict[str, list[str]] | None = None) -> nx.DiGraph:
    """The graph of every edge reachable from ``starts`` in ``direction`` (within ``filters``),
    with ``extra`` edges (not in the store: a preview's) joined in and walked on from. ``within``:
    walk on only from the columns it accepts (the rest of the store cannot matter to the question);
    ``among``: the edges among them, read beforehand (no query a hop), or kept from earlier walks;
    ``columns``: the known columns of datasets read before, added to
    (:func:`~lineage_listener.query.expand.expand`)."""
    aliases = aliases or Aliases(con)
    starts = sorted(set(starts))
    far = (lambda e: e.target) if direction == "downstream" else (lambda e: e.source)
    edges: list[LineageStep] = []
    seen = set(starts)
    frontier, extra = starts, list(extra)
    while frontier or extra:
        found = []
        if frontier:  # every hop at once, or one at a time when ``within`` prunes
            found = expand(con, frontier, direction, filters=filters, aliases=aliases,
                           depth=None if within is None else 1, among=among, columns=columns)
            if within is not None:
                found = [e for e in found if within(far(e))]
            seen |= {e.source for e in found} | {e.target for e in found} if within is None else set()
        found += extra
        edges += found
        frontier = sorted({far(e) for e in (found if within is not None else extra)} - seen)
        seen |= set(frontier)
        extra = []
    first = starts[0] if starts else ("", "")
    g = build_graph(first, edges, direction)
    if not starts:
        g.remove_node(first)
    for node in starts:
        g.add_node(node, dataset=node[0], column=node[1], depth=0)
    return g


class AllHops:
    """Every dataset's neighbours one hop ``direction`` (over direct edges only with ``direct_only``),
    canonical names, read in two queries (the distinct pairs of datasets of ``edges``, and every
    table's location, :data:`~lineage_listener.query.names.TABLE_ROWS_SQL`) instead of one a hop:
    what :func:`_hops` reads for a dataset, for all of them (the edges named by any name of it)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, aliases: Aliases, direction: Direction,
                 direct_only: bool) -> None:
        kind = "AND kind = 'direct'" if direct_only else ""
        rows = con.execute(f"""SELECT DISTINCT source_dataset, target_dataset FROM edges
                              WHERE source_dataset IS NOT NULL AND target_dataset IS NOT NULL {kind}""").fetchall()
        if direction == "upstream":
            rows = [(t, s) for s, t in rows]
        aliases.learn_from_tables((far for _, far in rows), con.execute(TABLE_ROWS_SQL).fetchall())
        self._by_name: dict[str, set[str]] = {}    # near name -> far canonical names
        for near, far in rows:
            self._by_name.setdefault(near, set()).add(aliases.canonical(far))
        self._of: dict[str, set[str]] = {}

    def of(self, dataset: str, aliases: Aliases) -> set[str]:
        """The neighbours of ``dataset`` (canonical), through every name of it."""
        if dataset not in self._of:
            self._of[dataset] = set().union(*(self._by_name.get(n, ()) for n in aliases.names(dataset)))
        return self._of[dataset]


#: Hops read from the store, per walk (``(direction, direct_only)``): each canonical dataset's
#: neighbours one hop that way (canonical names), as read for the datasets walked so far, or
#: :class:`AllHops`. Kept across the questions of an unchanged store
#: (:meth:`~lineage_listener.query.store.LineageStore.reuse`).
Hops = dict[tuple[str, bool], "dict[str, set[str]] | AllHops"]


def reachable_datasets(con: duckdb.DuckDBPyConnection, datasets: Iterable[str], aliases: Aliases,
                       direction: Direction = "downstream", direct_only: bool = True,
                       known: Hops | None = None) -> set[str]:
    """The datasets ``direction`` of ``datasets`` (canonical names), them included: at the level of
    datasets and at any time, so a superset of where labels can go (or come from).

    One query per hop, an index lookup of ``edges`` by the near end; no capture is read. ``known``:
    hops read before (by earlier questions of a session), added to."""
    return _hops(con, datasets, aliases, direction, direct_only, known)[0]


KeyEdge = tuple[Node, tuple[str, str | None]]


def upstream_datasets(con: duckdb.DuckDBPyConnection, datasets: Iterable[str], aliases: Aliases,
                      known: Hops | None = None) -> tuple[set[str], nx.DiGraph]:
    """The datasets upstream of ``datasets`` over direct edges (:func:`reachable_datasets`), and the
    graph of them: an edge ``source -> target`` (canonical names) where some direct edge leads so.

    >>> found, g = upstream_datasets(con, ["spark_catalog.db.report"], Aliases(con))  # doctest: +SKIP
    """
    seen, pairs = _hops(con, datasets, aliases, "upstream", True, known)
    g = nx.DiGraph()
    g.add_nodes_from(seen)
    g.add_edges_from(pairs)
    return seen, g


def datasets_between(g: nx.DiGraph, sources: Iterable[str], targets: Iterable[str]) -> set[str]:
    """The datasets on some path of ``g`` (:func:`upstream_datasets`) from one of ``sources`` to one
    of ``targets``, ends included: the only datasets a path of columns between them can go through.

    >>> sorted(datasets_between(nx.DiGraph([("a", "b"), ("b", "c"), ("b", "d"), ("e", "c")]), ["a"], ["c"]))
    ['a', 'b', 'c']
    """
    below = _closure([n for n in sources if n in g], g.successors)
    return below & _closure([n for n in targets if n in g], g.predecessors)


def key_edges_among(con: duckdb.DuckDBPyConnection, datasets: Iterable[str], aliases: Aliases) -> list[KeyEdge]:
    """The direct edges among ``datasets`` (canonical names, every name of each read by the index on
    ``edges``), at any time, as ``(source, target)`` pairs of ``(canonical dataset, column key)``
    (:func:`~lineage_listener.query.expand.column_key`: a struct column stands for its fields; a
    target key None: an edge stored with a null target column, to every column of its dataset).

    >>> edges = key_edges_among(con, ["spark_catalog.db.orders", "spark_catalog.db.report"], Aliases(con))  # doctest: +SKIP
    """
    datasets = sorted(datasets)
    aliases.resolve(datasets)
    names = sorted({n for d in datasets for n in aliases.names(d)})
    if not names:
        return []
    key = COLUMN_KEY_SQL.format
    rows = con.execute(f"""
        SELECT DISTINCT source_dataset, {key('source_column')}, target_dataset,
               CASE WHEN target_column IS NOT NULL THEN {key('target_column')} END
        FROM {indexed("edges", "target_dataset", "SELECT unnest($n)")} e
        WHERE kind = 'direct' AND source_column IS NOT NULL AND source_dataset IN (SELECT unnest($n))""",
                       {"n": names}).fetchall()
    found = {r[0] for r in rows} | {r[2] for r in rows}
    aliases.resolve(found)
    canonical = {n: aliases.canonical(n) for n in found}
    return [((canonical[s_ds], s_key), (canonical[t_ds], t_key)) for s_ds, s_key, t_ds, t_key in rows]


def _hops(con: duckdb.DuckDBPyConnection, datasets: Iterable[str], aliases: Aliases, direction: Direction,
          direct_only: bool, known: Hops | None = None) -> tuple[set[str], list[tuple[str, str]]]:
    """The datasets ``direction`` of ``datasets``, them included, and the ``(source, target)`` pairs
    of datasets one hop apart on the way (canonical names).

    One query a hop, for the frontier's datasets not in ``known``: the edges out of them, and the
    alias rows of their far ends (:func:`~lineage_listener.query.names.alias_rows_sql`) in the
    same answer. A walk that way that ``known`` holds already (an earlier question's, over the
    same unchanged store) reads every hop that way at once instead (:class:`AllHops`): a store
    asked once reads only the hops its question needs, a store asked many questions the whole
    map once."""
    near, far = ("source_dataset", "target_dataset") if direction == "downstream" \
        else ("target_dataset", "source_dataset")
    known = {} if known is None else known
    way = (direction, direct_only)
    if way in known and not isinstance(known[way], AllHops):
        known[way] = AllHops(con, aliases, direction, direct_only)
    hops = known.setdefault(way, {})
    seen = {aliases.canonical(d) for d in datasets}
    if isinstance(hops, AllHops):
        return _closure_pairs(seen, lambda d: hops.of(d, aliases), direction)
    kind = "AND kind = 'direct'" if direct_only else ""
    sql = f"""
        WITH r AS MATERIALIZED (
            SELECT DISTINCT {far}, {near} FROM {indexed("edges", near, "SELECT unnest($n)")} e
            WHERE {far} IS NOT NULL {kind})
        SELECT *, NULL AS alias_row FROM r
        UNION ALL BY NAME
        SELECT (dataset, location) AS alias_row FROM ({alias_rows_sql(f"SELECT DISTINCT {far} FROM r")})"""
    def step(frontier: list[str]) -> None:
        owner = {n: d for d in frontier if d not in hops for n in aliases.names(d)}
        if owner:
            rows, found = [], []
            for r in con.execute(sql, {"n": sorted(owner)}).fetchall():
                if r[-1] is None:
                    rows.append(r[:-1])
                else:
                    found.append(r[-1])
            aliases.learn((r[0] for r in rows), found)
            hops.update((d, set()) for d in owner.values())
            for far_name, near_name in rows:
                hops[owner[near_name]].add(aliases.canonical(far_name))
    return _closure_pairs(seen, lambda d: hops[d], direction, step)


def _closure_pairs(seen: set[str], hop: Callable[[str], set[str]], direction: Direction,
                   ahead: Callable[[list[str]], None] | None = None) -> tuple[set[str], list[tuple[str, str]]]:
    """The datasets reached from ``seen`` (added to it) by ``hop`` one frontier at a time, and the
    ``(source, target)`` pairs on the way; ``ahead``: called with each frontier before it is walked."""
    frontier = sorted(seen)
    pairs: list[tuple[str, str]] = []
    while frontier:
        if ahead is not None:
            ahead(frontier)
        new: set[str] = set()
        for d in frontier:
            for other in hop(d):
                pairs.append((other, d) if direction == "upstream" else (d, other))
                if other not in seen:
                    new.add(other)
        seen |= new
        frontier = sorted(new)
    return seen, pairs


def between(edges: Iterable[KeyEdge], sources: Iterable[Node],
            targets: Iterable[Node]) -> set[Node]:
    """The nodes on some path of ``edges`` (:func:`key_edges_among`) from one of ``sources`` to one of
    ``targets``, ends included; an edge to ``(dataset, None)`` leads to every node of that dataset.

    >>> sorted(between([(("a", "x"), ("b", "x")), (("b", "x"), ("c", "x")), (("b", "x"), ("d", "x")),
    ...                 (("e", "x"), ("c", None))], [("a", "x")], [("c", "x")]))
    [('a', 'x'), ('b', 'x'), ('c', 'x')]
    >>> sorted(between([(("a", "x"), ("c", None))], [("a", "x")], [("c", "y")]))
    [('a', 'x'), ('c', 'y')]
    """
    edges, targets = list(edges), set(targets)
    succ: dict[Node, list[Node]] = {}
    wide: set[str] = set()    # datasets an edge with a null target column goes to
    for source, target in edges:
        succ.setdefault(source, []).append(target)
        if target[1] is None:
            wide.add(target[0])
    of_dataset: dict[str, set[Node]] = {d: set() for d in wide}   # the nodes of those datasets
    if wide:
        for source, target in edges:
            if source[0] in wide:
                of_dataset[source[0]].add(source)
            if target[1] is not None and target[0] in wide:
                of_dataset[target[0]].add(target)
        for node in targets:
            if node[0] in wide:
                of_dataset[node[0]].add(node)

    def forward(n: Node) -> Iterator[Node]:
        for target in succ.get(n, ()):
            if target[1] is None:
                yield from of_dataset[target[0]]
            else:
                yield target
    # what the sources reach first (a labelled column's copies: few), then, among those only,
    # what leads to the targets (every column of a dataset: most of the edges, when walked first)
    below = _closure(sources, forward)
    pred: dict[Node, set[Node]] = {}
    wide_in: dict[str, set[Node]] = {}
    for source in below:
        for target in succ.get(source, ()):
            if target[1] is None:
                wide_in.setdefault(target[0], set()).add(source)
            elif target in below:
                pred.setdefault(target, set()).add(source)
    return _closure(targets & below, lambda n: pred.get(n, set()) | wide_in.get(n[0], set()))


def copies_to(con: duckdb.DuckDBPyConnection, starts: list[Node], seeds: list[Node], datasets: nx.DiGraph,
              filters: Filters, aliases: Aliases) -> nx.DiGraph:
    """The graph of the direct edges on paths from ``seeds`` to ``starts``, ``starts`` in it. The
    datasets on such paths are picked from ``datasets`` (:func:`upstream_datasets` of the starts;
    :func:`datasets_between`), the columns on them at the level of column keys
    (:func:`key_edges_among` those datasets; :func:`between`), the edges among those columns read with
    their captures in one query (:class:`~lineage_listener.query.expand.Among`) and walked in memory."""
    def key(n: Node) -> Node:
        return n[0], column_key(n[1])
    kept: set[Node] = set()
    if seeds:
        on_paths = datasets_between(datasets, {n[0] for n in seeds}, {n[0] for n in starts})
        if on_paths:
            kept = between(key_edges_among(con, on_paths, aliases), map(key, seeds), map(key, starts))
    keys: dict[str, set[str]] = {}
    for dataset, k in kept:
        for name in aliases.names(dataset):
            keys.setdefault(name, set()).add(k)
    if kept:
        g = walk(con, [n for n in seeds if key(n) in kept], "downstream", filters, aliases,
                 within=lambda n: key(n) in kept, among=Among(con, keys, aliases, filters))
    else:
        g = nx.DiGraph()
    g.add_nodes_from(starts)
    return g


def _closure(starts: Iterable[T], step: Callable[[T], Iterable[T]]) -> set[T]:
    seen = set(starts)
    todo = list(seen)
    while todo:
        for n in step(todo.pop()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


class CaptureBook:
    """The captures of the edges on the paths shown: the query and run that made the capture
    each hop uses (read in one query for the hops :meth:`load` names), and their applications."""

    def __init__(self, con: duckdb.DuckDBPyConnection, until: datetime | None = None) -> None:
        self.con = con
        self._filters = Filters(until=until)
        self._pins: dict[tuple[int, datetime], tuple[str, str | None] | None] = {}
        self.apps: dict[str, str | None] = {}

    def load(self, hops: Iterable[Hop]) -> None:
        """Read the capture of every hop not read yet, and the applications of their runs, in one
        query each."""
        hops = list(hops)
        todo = sorted({(h.edge_id, h.captured_at) for h in hops
                       if h.edge_id is not None and h.captured_at is not None} - set(self._pins))
        if todo:
            found = captures_at(self.con, todo, self._filters)
            self._pins.update({k: found.get(k) for k in todo})
        runs = {r for h in hops for r in (h.run_id, self._run(h))} - set(self.apps) - {None}
        if runs:
            self.apps.update(dict.fromkeys(runs))
            self.apps.update(applications(self.con, runs))

    def _run(self, h: Hop) -> str | None:
        pin = self._pins.get((h.edge_id, h.captured_at))
        return pin[1] if pin else None

    def pin(self, hops: Iterable[Hop]) -> list[dict]:
        """Each hop as plain data, with the query, run and application of the capture the path
        goes through."""
        hops = list(hops)
        self.load(hops)
        out = []
        for h in hops:
            query_id, run_id = self._pins.get((h.edge_id, h.captured_at)) or (h.query_id, h.run_id)
            out.append({"source": list(h.source), "target": list(h.target), "transform": h.transform,
                        "kind": h.kind, "expression": h.expression, "masking": h.masking, "query_id": query_id,
                        "run_id": run_id, "captured_at": h.captured_at, "first_seen": h.first_seen,
                        "last_seen": h.last_seen, "application": self.apps.get(run_id)})
        return out


def applications(con: duckdb.DuckDBPyConnection, run_ids: Iterable[str | None]) -> dict[str, str | None]:
    """The application name of each run."""
    ids = sorted({r for r in run_ids if r})
    if not ids:
        return {}
    return dict(con.execute("SELECT run_id, app_name FROM runs WHERE run_id IN (SELECT unnest($r))",
                            {"r": ids}).fetchall())
