"""The Python face of a store: ``open_store(path).upstream(...)`` and friends."""
from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import duckdb
import networkx as nx

from lineage_listener.lineage.column_path import lookups
from lineage_listener.query.current import mark_history, replaces
from lineage_listener.query.expand import Filters, expand, nearest_captures
from lineage_listener.query.types import Direction, Node
from lineage_listener.query.expand import captures as edge_captures
from lineage_listener.query.kept import keep
from lineage_listener.query.names import Aliases, closest
from lineage_listener.timewindow import window
from lineage_listener.query.graph import build_graph
from lineage_listener.store.connection import StoreError, open_readonly
from lineage_listener.store.stamp import Stamp, stamp

log = logging.getLogger(__name__)

TimeBound = str | datetime | None
T = TypeVar("T")


class UnknownNameError(StoreError, LookupError):
    """A dataset or column the store has never seen; the message names the closest known ones."""


class LineageStore:
    """Lineage questions over one DuckDB store file, read-only.

    Graph questions open the file for the duration of the call only, so a
    store object kept in a notebook never holds the file against a capturing
    job; inside :meth:`session` they share one connection instead. What a
    question learnt of the store is kept for the next while the store file is
    unchanged (:meth:`reuse`). ``sql()`` keeps a connection until :meth:`close`.

    >>> store = open_store("lineage.duckdb")                                   # doctest: +SKIP
    >>> g = store.upstream("spark_catalog.shop.report", "total", depth=3)      # doctest: +SKIP
    >>> sorted(g.predecessors(("spark_catalog.shop.report", "total")))         # doctest: +SKIP
    [('spark_catalog.shop.orders', 'amount')]
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._con: duckdb.DuckDBPyConnection | None = None
        self._shared: duckdb.DuckDBPyConnection | None = None
        #: what questions learnt of the store (:meth:`reuse`), and the stamp of the store they read
        self._learnt: tuple[Stamp, dict[str, Any]] | None = None
        self._lock = threading.Lock()
        self._question = threading.local()   # ``kept``: what the running question may reuse
        with self.connect():
            pass  # fail early and clearly on a missing or unreadable store

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived read-only connection (waits briefly while a writer holds the file); inside
        :meth:`session`, the session's connection."""
        if self._shared is not None:
            yield self._shared
            return
        con = open_readonly(self.path)
        try:
            with self._learning():
                yield con
        finally:
            con.close()

    @contextmanager
    def session(self) -> Iterator["LineageStore"]:
        """Ask many questions over one read-only connection: the file is opened once, and what DuckDB
        read for one question stays in its cache for the next. Until the block ends the file is held
        open, so a writer in another process waits (capture retries): for a batch of questions,
        not for a store object kept in a notebook. Nested sessions share the outer one.

        >>> with open_store("lineage.duckdb").session() as store:          # doctest: +SKIP
        ...     answers = [column_labels(store, d) for d in datasets]
        """
        if self._shared is not None:
            yield self
            return
        self._shared = open_readonly(self.path)
        try:
            with self._learning():
                yield self
        finally:
            con, self._shared = self._shared, None
            con.close()

    def reuse(self, name: str, make: Callable[[], T]) -> T:
        """``make()``, made once and kept under ``name`` while the store is unchanged: what a question
        learnt of the store that the next ones may use (names, hops between datasets, declared
        labels). Kept from one connection to the next while the store's
        :func:`~lineage_listener.store.stamp.stamp` stays the same, and through a :meth:`session`
        whatever it is (its open connection keeps writers out); a store changed in the last
        seconds keeps nothing past the question. Outside :meth:`connect`, made anew on each call.
        A question in another thread meanwhile starts from nothing rather than share the objects.

        >>> store.reuse("hops", dict)                                         # doctest: +SKIP
        """
        kept = getattr(self._question, "kept", None)
        if kept is None:
            return make()
        if name not in kept:
            kept[name] = make()
        return kept[name]

    @contextmanager
    def _learning(self) -> Iterator[None]:
        """The block of one question (or session) over a connection just opened: what :meth:`reuse`
        keeps, taken out for it if the store's stamp (taken now, while the connection holds the
        file) is the one it was learnt under, and put back after it unless it failed midway."""
        if getattr(self._question, "kept", None) is not None:   # inside a question: the same file
            yield
            return
        now = stamp(self.path)
        with self._lock:
            learnt, self._learnt = self._learnt, None
        kept = learnt[1] if learnt is not None and now is not None and learnt[0] == now else {}
        self._question.kept = kept
        try:
            yield
        except BaseException:
            self._question.kept = None
            raise
        self._question.kept = None
        if now is not None:
            with self._lock:
                self._learnt = (now, kept)

    def upstream(self, dataset: str, column: str, depth: int | None = None,
                 since: TimeBound = None, until: TimeBound = None,
                 direct_only: bool = False, include_failed: bool = False) -> nx.DiGraph:
        """Columns ``dataset.column`` was computed from, ``depth`` hops back (None: all).

        Edges point source -> target and carry ``transform``, ``kind``,
        ``expression``, ``query_id``, ``run_id``, ``captured_at``, ``masking``
        and ``records`` (every stored edge of that step). Edges of writes that failed
        (``queries.status = 'failed'``) are left out unless ``include_failed``.

        Only paths that run forward in time are kept, and, in a window, those whose
        write into ``dataset.column`` was captured in it (older hops upstream of it
        count). Nodes carry ``reach`` (``copy`` when a path of direct steps leads from
        them, ``influenced`` otherwise) and ``before_window``; ``g.graph["window"]`` says
        what lies outside the window (docs/reference/semantics.md). The answer is over time:
        an edge whose every capture a later replacing write of its target overwrote carries
        ``history`` (that write's ``query_id`` and ``captured_at``; None while its data is there).
        """
        return self._walk("upstream", dataset, column, depth, since, until, direct_only, include_failed)

    def downstream(self, dataset: str, column: str, depth: int | None = None,
                   since: TimeBound = None, until: TimeBound = None,
                   direct_only: bool = False, include_failed: bool = False) -> nx.DiGraph:
        """Columns computed from ``dataset.column`` (the impact direction); see :meth:`upstream`.

        In a window, a column appears when a write into it was captured in the window; data
        written before it and copied inside it counts (the columns it passed through carry
        ``before_window``). Copies carry ``masking`` (``unmasked``, ``partly``, ``masked``),
        influenced columns ``via`` (the indirect transforms on their paths).

        >>> g = store.downstream("spark_catalog.crm.customers", "email", since="7d")  # doctest: +SKIP
        >>> from lineage_listener.query.copies import copies                           # doctest: +SKIP
        >>> [(n, g.nodes[n]["masking"]) for n in copies(g)]                             # doctest: +SKIP
        [(('spark_catalog.crm.customers_hashed', 'email_sha256'), 'masked')]
        """
        return self._walk("downstream", dataset, column, depth, since, until, direct_only, include_failed)

    def captures(self, g: nx.DiGraph) -> dict[tuple[Node, Node], list[dict]]:
        """Every capture of each edge of ``g`` (a graph from :meth:`upstream`/:meth:`downstream`),
        in the graph's time window: ``query_id``, ``run_id``, ``captured_at`` and the ``transform``
        of the record it captured, oldest first. The runs behind a step, where a walk keeps only
        each edge's first and last capture and count.

        >>> g = store.upstream("spark_catalog.shop.report", "total", since="30d")  # doctest: +SKIP
        >>> {c["run_id"] for caps in store.captures(g).values() for c in caps}       # doctest: +SKIP
        """
        filters = Filters(g.graph.get("since"), g.graph.get("until"), g.graph.get("direct_only", False),
                          g.graph.get("include_failed", False))
        by_id: dict[int, list[tuple[tuple[Node, Node], dict]]] = {}
        for u, v, d in g.edges(data=True):
            for r in d["records"]:
                if r.get("edge_id") is not None:
                    by_id.setdefault(r["edge_id"], []).append(((u, v), r))
        with self.connect() as con:
            found = edge_captures(con, list(by_id), filters)
        out: dict[tuple[Node, Node], list[dict]] = {}
        for eid, rows in found.items():
            kept = [(q, run, t) for q, run, t in rows if q is not None]  # not what prune summarised
            for key, record in by_id[eid] if kept else ():
                out.setdefault(key, []).extend(
                    {"query_id": q, "run_id": run, "captured_at": t, "transform": record["transform"],
                     "kind": record["kind"], "expression": record["expression"], "masking": record["masking"]}
                    for q, run, t in kept)
        for caps in out.values():
            caps.sort(key=lambda c: (c["captured_at"], c["query_id"]))
        return out

    def streams(self, limit: int = 100) -> list[dict]:
        """Streaming queries, one per stream: ``name``, ``targets``, ``batch_count``,
        ``first_batch_at``/``last_batch_at``, ``plans`` (query ids; new code adds one)..."""
        from lineage_listener.query.stream_jobs import streams

        with self.connect() as con:
            return streams(con, limit)

    def sql(self, query: str, params: object = None) -> duckdb.DuckDBPyRelation:
        """Run SQL on the store; the relation stays valid until :meth:`close`.

        >>> store.sql("SELECT count(*) FROM column_lineage").fetchall()   # doctest: +SKIP
        [(42,)]
        """
        if self._con is None:
            self._con = open_readonly(self.path)
        if params is None:
            return self._con.sql(query)
        return self._con.sql(query, params=params)

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def __enter__(self) -> "LineageStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LineageStore({str(self.path)!r})"

    # -- helpers shared by the reports ------------------------------------------------

    def _walk(self, direction: Direction, dataset: str, column: str, depth: int | None,
              since: TimeBound, until: TimeBound, direct_only: bool, include_failed: bool = False) -> nx.DiGraph:
        if depth is not None and depth < 0:
            raise ValueError("depth must be >= 0")
        lo, hi = window(since, until)
        filters = Filters(lo, hi, direct_only, include_failed)
        with self.connect() as con:
            aliases = Aliases(con)
            start = resolve_column(con, aliases, dataset, column)
            found = build_graph(start, expand(con, start, direction, depth, filters, aliases), direction)
            g = keep(found, start, direction, lo, hi, lambda asked: nearest_captures(con, asked, filters))
            mark_history(g, replaces(con, aliases, hi, {v[0] for _, v in g.edges}))
        g.graph.update(since=lo, until=hi, depth=depth, direct_only=direct_only, include_failed=include_failed)
        return as_asked(g, dataset)


def as_asked(g: nx.DiGraph, asked: str) -> nx.DiGraph:
    """``g`` with its start's dataset named as the question named it: asked by a table's location,
    the answer starts at that location; every other dataset keeps its primary name
    (docs/reference/datasets.md).

    >>> g = nx.DiGraph([(("spark_catalog.db.s", "a"), ("spark_catalog.db.t", "a"))], start=("spark_catalog.db.t", "a"))
    >>> h = as_asked(g, "file:/wh/db.db/t")
    >>> h.graph["start"], sorted(h.nodes)
    (('file:/wh/db.db/t', 'a'), [('file:/wh/db.db/t', 'a'), ('spark_catalog.db.s', 'a')])
    """
    primary = g.graph["start"][0]
    if asked == primary:
        return g
    renamed = {n: (asked, n[1]) for n in g if n[0] == primary}
    g = nx.relabel_nodes(g, renamed)
    for node in renamed.values():
        if "dataset" in g.nodes[node]:
            g.nodes[node]["dataset"] = asked
    g.graph["start"] = (asked, g.graph["start"][1])
    return g


def resolve_column(con: duckdb.DuckDBPyConnection, aliases: Aliases, dataset: str, column: str) -> Node:
    """The canonical node for user input, or :class:`UnknownNameError` with suggestions.

    ``column`` is a stored name (``s.x`` the field ``x`` of struct ``s``, ```s.x``` a
    top-level column named ``s.x``); ``s.x`` also finds ```s.x``` when there is no field
    ``s.x`` (:func:`~lineage_listener.lineage.column_path.lookups`).
    """
    canonical = aliases.canonical(dataset)
    names = sorted(aliases.names(canonical))
    for stored in lookups(column):
        found = con.execute(
            "SELECT 1 FROM dataset_columns WHERE dataset IN (SELECT unnest($n)) AND column_name = $c LIMIT 1",
            {"n": names, "c": stored}).fetchone() or con.execute(
            """SELECT 1 FROM edges
               WHERE (source_dataset IN (SELECT unnest($n)) AND source_column = $c)
                  OR (target_dataset IN (SELECT unnest($n)) AND target_column = $c)
               LIMIT 1""", {"n": names, "c": stored}).fetchone()
        if found:
            return canonical, stored
    known_columns = [r[0] for r in con.execute(
        """SELECT column_name FROM dataset_columns WHERE dataset IN (SELECT unnest($n))
           UNION SELECT source_column FROM edges WHERE source_dataset IN (SELECT unnest($n))
           UNION SELECT target_column FROM edges WHERE target_dataset IN (SELECT unnest($n))""",
        {"n": names}).fetchall() if r[0] is not None]
    if known_columns:
        hint = closest(column, known_columns) or sorted(known_columns)[:5]
        raise UnknownNameError(f"dataset {canonical} has no column {column!r}; "
                               f"closest known: {', '.join(hint)}")
    datasets = [r[0] for r in con.execute(
        """SELECT dataset FROM datasets UNION SELECT source_dataset FROM edges
           UNION SELECT target_dataset FROM edges""").fetchall() if r[0] is not None]
    hint = closest(dataset, datasets)
    raise UnknownNameError(f"unknown dataset {dataset!r}"
                           + (f"; closest known: {', '.join(hint)}" if hint else "; the store has none like it"))


def open_store(path: str | os.PathLike) -> LineageStore:
    """Open a lineage store for questions; raises StoreError when there is none at ``path``.

    >>> store = open_store("lineage.duckdb")                       # doctest: +SKIP
    >>> g = store.downstream("spark_catalog.crm.customers", "email", since="7d")  # doctest: +SKIP
    """
    return LineageStore(path)
