"""Checking a policy over a store (or a store and edges not captured yet: a preview), one
function per rule kind (:data:`CHECKS`), each returning its violations.

A violation is plain data (the JSON of ``check --format json``)::

    {"rule", "kind", "label", "dataset", "column", "path": [[dataset, column, transform], ...],
     "applications": [...], "last_seen", "message", "hops": [...]}

``scope`` limits a check to some columns (what one batch wrote or read: a lineage server checks
each batch so); ``since`` to what was captured in a window (a path counts when its last hop was).

>>> from lineage_listener.query import open_store                                      # doctest: +SKIP
>>> from lineage_listener.govern.policy import load                                    # doctest: +SKIP
>>> report = check_store(open_store("lineage.duckdb"), load("policy.yml"))             # doctest: +SKIP
>>> [(v["rule"], v["dataset"], v["column"]) for v in report["violations"]]             # doctest: +SKIP
[('no-clear-pii-in-exports', 'file:/data/exports/partner.csv', 'email')]
"""
from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

import duckdb

from lineage_listener.govern import labelstore
from lineage_listener.govern.answers import Propagation, run
from lineage_listener.govern.labelfile import known_datasets
from lineage_listener.govern.labelstore import Declared
from lineage_listener.govern.patterns import any_matches, is_kind_of, kinds_of
from lineage_listener.govern.policy import Policy, PolicyError, Rule
from lineage_listener.govern.propagate import Reached, path_rows
from lineage_listener.query.expand import FAILED_WRITES
from lineage_listener.query.types import LineageStep, Node
from lineage_listener.query.current import Replaces, replaces
from lineage_listener.query.names import Aliases, closest
from lineage_listener.query.store import LineageStore
from lineage_listener.timewindow import utcnow, window, window_sql


@dataclass
class Context:
    """What every rule of one check shares: the store, the window, the scope, the propagations.

    Without a window and without ``history``, the rules judge the data as it is now
    (docs/reference/semantics.md, "Current state"): a copy that a later replacing write of its
    dataset overwrote is gone; ``planned`` are datasets a preview's statements replace."""

    con: duckdb.DuckDBPyConnection
    policy: Policy
    since: datetime | None = None
    until: datetime | None = None
    scope: set[Node] | None = None      # the columns written (None: every column)
    reads: set[Node] | None = None      # the columns read (with a scope: for ``readers``)
    extra: list[LineageStep] = field(default_factory=list)
    history: bool = False
    planned: tuple[str, ...] = ()
    aliases: Aliases = field(init=False)
    _matches: dict[tuple[tuple[str, ...], str], bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.aliases = Aliases(self.con)

    @property
    def current(self) -> bool:
        """Whether the rules judge the current state (no window, no ``history``)."""
        return not self.history and self.since is None and self.until is None

    @cached_property
    def replaced(self) -> Replaces | None:
        """The replacing writes the current state is judged by (None: judging the past)."""
        if not self.current:
            return None
        found = replaces(self.con, self.aliases)
        if self.planned:
            found = found.with_replaced({self.aliases.canonical(d) for d in self.planned}, utcnow(), "preview")
        return found

    def _run(self, since: datetime | None) -> Propagation:
        starts = sorted(self.scope | (self.reads or set())) if self.scope is not None else None
        return run(self.con, starts, since, self.until, self.policy.masking_functions, influence=False,
                   extra=self.extra, aliases=self.aliases, current=self.replaced or False)

    @cached_property
    def carrying(self) -> Propagation:
        """Labels as they are (no window)."""
        return self._run(None) if self.since is not None else self.recent

    @cached_property
    def recent(self) -> Propagation:
        """Labels along paths whose last hop lies in the window."""
        return self._run(self.since)

    def nodes(self, p: Propagation, reads: bool = False) -> list[Node]:
        found = set(p.graph.nodes) | set(p.declared)
        if self.scope is not None:
            found &= (self.reads or set()) if reads else self.scope
        return sorted(found)

    def matches(self, globs: tuple[str, ...], dataset: str) -> bool:
        key = (globs, dataset)
        if key not in self._matches:
            self._matches[key] = any_matches(globs, self.aliases.names(dataset))
        return self._matches[key]


def _violation(rule: Rule, label: str | None, node: Node, path: list[list], applications: list[str],
               last_seen: datetime | None, message: str, hops: list[dict] | None = None) -> dict[str, Any]:
    return {"rule": rule.name, "kind": rule.kind, "label": label, "dataset": node[0], "column": node[1],
            "path": path, "applications": applications, "last_seen": last_seen, "message": message,
            "hops": hops or []}


def _apps(hops: list[dict]) -> list[str]:
    return list(dict.fromkeys(h["application"] or h["run_id"] for h in hops if h["application"] or h["run_id"]))


def _copies(rule: Rule, ctx: Context, declared_too: bool) -> Iterable[tuple[Node, str, Reached | Declared]]:
    p = ctx.recent
    for node in ctx.nodes(p):
        if rule.datasets and not ctx.matches(rule.datasets, node[0]):
            continue
        for label, how in sorted(p.carried(node).items()):
            if not is_kind_of(label, rule.label or ""):
                continue
            if isinstance(how, Declared):
                if not declared_too or (ctx.since is not None and (how.set_at is None or how.set_at < ctx.since)):
                    continue
            yield node, label, how


def _copy_violation(rule: Rule, ctx: Context, node: Node, label: str, how: Reached | Declared,
                    what: str) -> dict[str, Any]:
    if isinstance(how, Declared):
        return _violation(rule, label, node, [[node[0], node[1], None]], [], how.set_at,
                          f"{node[0]} [{node[1]}] is declared {label} ({how.source}, by {how.set_by})")
    hops = ctx.recent.hops(how)
    origin = f"{how.origin[0]} [{how.origin[1]}]"
    v = _violation(rule, label, node, path_rows(how), _apps(hops), how.hops[-1].last_seen,
                   f"{label} of {origin} reaches {node[0]} [{node[1]}] {what} ({len(how.hops)} hop"
                   f"{'s' if len(how.hops) != 1 else ''})", hops)
    return {**v, "written_by": _written_by(ctx, node, hops)}


def _written_by(ctx: Context, node: Node, hops: list[dict]) -> dict[str, Any] | None:
    """The write the path's last hop goes through (the one that put the data where it is now), and
    whether it replaced the dataset (the current state began with it)."""
    if not hops:
        return None
    last = hops[-1]
    replaced = ctx.replaced.last(node[0]) if ctx.replaced else None
    return {"query_id": last["query_id"], "application": last["application"], "captured_at": last["captured_at"],
            "replaced": replaced is not None and replaced[1] == last["query_id"]}


def forbid(rule: Rule, ctx: Context) -> list[dict[str, Any]]:
    """A copy of label L (declared there, or propagated unmasked) in a dataset matching G."""
    return [_copy_violation(rule, ctx, node, label, how, "as a clear copy")
            for node, label, how in _copies(rule, ctx, declared_too=True)]


def require_masking(rule: Rule, ctx: Context) -> list[dict[str, Any]]:
    """A path from a column labelled L into G with no masking edge (a column with masked and clear
    paths is a violation: its clear path is given)."""
    return [_copy_violation(rule, ctx, node, label, how, "along a path without masking")
            for node, label, how in _copies(rule, ctx, declared_too=False)]


def readers(rule: Rule, ctx: Context) -> list[dict[str, Any]]:
    """Reads of a column carrying L (queries with the column as an edge's source, driver reads
    included) by an application the rule does not list."""
    p = ctx.carrying
    carriers: dict[Node, tuple[str, Reached | Declared]] = {}
    for node in ctx.nodes(p, reads=True):
        if rule.datasets and not ctx.matches(rule.datasets, node[0]):
            continue
        for label, how in sorted(p.carried(node).items()):
            if is_kind_of(label, rule.label or ""):
                carriers.setdefault(node, (label, how))
    if not carriers:
        return []
    names, columns, keys, cuts = [], [], [], []
    for node in carriers:
        last = ctx.replaced.last(node[0]) if ctx.replaced else None
        for name in ctx.aliases.names(node[0]):
            names.append(name)
            columns.append(node[1])
            keys.append(f"{node[0]}\x00{node[1]}")
            cuts.append(last[0] if last else None)  # now: reads of the data there since its last replace
    within, bounds = window_sql("c.captured_at", ctx.since, ctx.until)
    rows = ctx.con.execute(
        f"""WITH wanted AS (SELECT unnest($d) AS d, unnest($c) AS c, unnest($k) AS k, unnest($x) AS x),
            e AS (SELECT w.k, w.x, unnest(e.sets) AS set_id FROM edges e
                  JOIN wanted w ON e.source_dataset = w.d AND e.source_column = w.c
                  WHERE e.source_dataset IN (SELECT d FROM wanted))
            SELECT e.k, coalesce(r.app_name, c.run_id) AS app, max(c.captured_at) AS last_read,
                   count(DISTINCT c.query_id) AS queries
            FROM e JOIN edge_captures c ON c.set_id = e.set_id
            LEFT JOIN runs r ON r.run_id = c.run_id
            WHERE c.query_id IS NOT NULL AND c.query_id NOT IN ({FAILED_WRITES})
              AND {within} AND (e.x IS NULL OR c.captured_at >= e.x)
            GROUP BY ALL""",
        {"d": names, "c": columns, "k": keys, "x": cuts, **bounds}).fetchall()
    rows += [(f"{e.source[0]}\x00{e.source[1]}", e.run_id, e.captured_at, 1)
             for e in ctx.extra if e.source in carriers]
    bad: dict[Node, list[tuple[str, datetime, int]]] = {}
    for key, app, last_read, queries in rows:
        if app is None or any(fnmatch.fnmatchcase(app, a) for a in rule.applications):
            continue
        dataset, column = key.split("\x00", 1)
        bad.setdefault((dataset, column), []).append((app, last_read, queries))
    out = []
    for node, reads in sorted(bad.items()):
        label, how = carriers[node]
        path = [[node[0], node[1], None]] if isinstance(how, Declared) else path_rows(how)
        hops = [] if isinstance(how, Declared) else p.hops(how)
        apps = sorted(a for a, _, _ in reads)
        out.append(_violation(rule, label, node, path, apps, max(t for _, t, _ in reads),
                              f"{', '.join(apps)} read {node[0]} [{node[1]}], which carries {label} "
                              f"({_queries(sum(q for _, _, q in reads))}); allowed: {', '.join(rule.applications)}",
                              hops))
    return out


def protect(rule: Rule, ctx: Context) -> list[dict[str, Any]]:
    """An upstream edge of a protected column written in the last ``days`` days by an application but
    missing from that application's latest write of the dataset (or from a preview's edges)."""
    now = ctx.until or utcnow()
    start = now - timedelta(days=rule.days)
    datasets = sorted({d for d in _dataset_names(ctx) if ctx.matches(rule.datasets, d)})
    out: list[dict[str, Any]] = []
    for dataset in datasets:
        names = sorted(ctx.aliases.names(dataset))
        rows = ctx.con.execute(
            f"""WITH e AS (SELECT target_column, source_dataset, source_column, transform, kind,
                                  unnest(sets) AS set_id FROM edges WHERE target_dataset IN (SELECT unnest($n)))
                SELECT e.target_column, e.source_dataset, e.source_column, e.transform, e.kind, c.query_id,
                       coalesce(r.app_name, c.run_id) AS app, max(c.captured_at) AS at
                FROM e JOIN edge_captures c ON c.set_id = e.set_id LEFT JOIN runs r ON r.run_id = c.run_id
                WHERE c.query_id IS NOT NULL AND c.query_id NOT IN ({FAILED_WRITES})
                  AND c.captured_at >= $start AND c.captured_at <= $now
                GROUP BY ALL""", {"n": names, "start": start, "now": now}).fetchall()
        ctx.aliases.resolve(r[1] for r in rows)
        writes: dict[str, dict[str, tuple[datetime, dict]]] = {}  # app -> query -> (time, edges)
        for t_col, s_ds, s_col, transform, kind, query_id, app, at in rows:
            if rule.columns and t_col not in rule.columns:
                continue
            key = (t_col, ctx.aliases.canonical(s_ds), s_col, kind)
            latest, edges = writes.setdefault(app, {}).get(query_id, (at, {}))
            edges[key] = (transform, at)
            writes[app][query_id] = (max(latest, at), edges)
        previews = {(e.target[1], ctx.aliases.canonical(e.source[0]), e.source[1], e.kind)
                    for e in ctx.extra if ctx.aliases.canonical(e.target[0]) == dataset}
        comparisons = []  # (application, latest write's time, its edges, earlier writes, who wrote them)
        if previews:  # the edges previewed against the dataset's latest write, whoever made it
            newest = max(((app, w) for app, by_query in writes.items() for w in by_query.values()),
                         key=lambda x: x[1][0], default=None)
            if newest is not None:
                comparisons.append(("preview", utcnow(), previews, [newest[1]], newest[0]))
        else:
            for app, by_query in sorted(writes.items()):
                ordered = sorted(by_query.values(), key=lambda x: x[0])
                if len(ordered) >= 2:
                    comparisons.append((app, ordered[-1][0], set(ordered[-1][1]), ordered[:-1], app))
        for app_name, latest_at, latest, earlier, writer in comparisons:
            if ctx.since is not None and latest_at < ctx.since:
                continue
            gone: dict[tuple, tuple[str, datetime]] = {}
            for _, edges in earlier:
                for key, (transform, at) in edges.items():
                    if key not in latest and (key not in gone or gone[key][1] < at):
                        gone[key] = (transform, at)
            for (t_col, s_ds, s_col, kind), (transform, at) in sorted(gone.items(), key=lambda kv: str(kv[0])):
                out.append(_violation(
                    rule, None, (dataset, t_col), [[s_ds, s_col, None], [dataset, t_col, transform]], [app_name], at,
                    f"{dataset} [{t_col or '*'}] no longer gets {s_ds} [{s_col}] ({transform}): written so by "
                    f"{writer} until {at:%Y-%m-%d %H:%M:%S}, not by "
                    + ("the previewed SQL" if app_name == "preview" else
                       f"its latest run ({latest_at:%Y-%m-%d %H:%M:%S})")))
    return out


def _dataset_names(ctx: Context) -> list[str]:
    if ctx.scope is not None:
        return sorted({n[0] for n in ctx.scope})
    names = known_datasets(ctx.con) + [e.target[0] for e in ctx.extra]
    ctx.aliases.resolve(names)
    return sorted({ctx.aliases.canonical(n) for n in names})


#: The check of each rule kind.
CHECKS: dict[str, Callable[[Rule, Context], list[dict[str, Any]]]] = {
    "forbid": forbid, "require_masking": require_masking, "readers": readers, "protect": protect,
}


def unmatched(con: duckdb.DuckDBPyConnection, policy: Policy, extra_names: Iterable[str] = ()) -> list[str]:
    """One line per rule glob that matches no dataset of the store (nor of ``extra_names``), and per
    rule label declared on no column (a rule about ``pii`` is about ``pii.email`` too), with the
    closest known label."""
    aliases = Aliases(con)
    names = known_datasets(con) + list(extra_names)
    aliases.resolve(names)
    pool = {n for d in {aliases.canonical(x) for x in names} for n in aliases.names(d)} | set(names)
    declared = labelstore.known_labels(con)
    problems = []
    for rule in policy.rules:
        for glob in rule.datasets:
            if not any_matches([glob], pool):
                problems.append(f"{policy.origin}: rule {rule.name!r}: dataset pattern {glob!r} matches no "
                                f"dataset of the store")
        if rule.label and not any(is_kind_of(label, rule.label) for label in declared):
            hint = closest(rule.label, sorted({p for label in declared for p in kinds_of(label)}))
            problems.append(f"{policy.origin}: rule {rule.name!r}: label {rule.label!r} is declared on no column"
                            + (f" (closest known: {', '.join(hint)})" if hint else ""))
    return problems


def check(con: duckdb.DuckDBPyConnection, policy: Policy, since: datetime | None = None,
          until: datetime | None = None, scope: set[Node] | None = None, extra: Iterable[LineageStep] = (),
          strict: bool = False, reads: set[Node] | None = None, history: bool = False,
          planned: Iterable[str] = ()) -> dict[str, Any]:
    """``{"violations": [...], "checked": {"rules", "columns"}, "warnings": [...], "notes": [...]}`` of
    ``policy`` over the store of ``con``.

    Without ``since``/``until`` and without ``history`` the rules judge the data as it is now
    (:class:`Context`); ``planned``: datasets a preview's statements replace. ``warnings``: rule
    globs that match no dataset and labels declared on no column (:func:`unmatched`): everything
    else is still checked, unless ``strict`` (then :class:`PolicyError`, nothing checked).
    ``notes``: what the store cannot tell about a violation (a partition overwrite)."""
    extra = list(extra)
    warnings = unmatched(con, policy, [n for e in extra for n in (e.source[0], e.target[0])])
    if strict and warnings:
        raise PolicyError(warnings[0])
    ctx = Context(con, policy, since, until, scope, reads, extra, history, tuple(planned))
    violations: list[dict[str, Any]] = []
    for rule in policy.rules:
        violations += CHECKS[rule.kind](rule, ctx)
    columns = set(ctx.nodes(ctx.recent))
    if "carrying" in ctx.__dict__:
        columns |= set(ctx.nodes(ctx.carrying))
    return {"violations": violations, "checked": {"rules": len(policy.rules), "columns": len(columns)},
            "warnings": warnings, "notes": _window_notes(ctx) + _notes(ctx, violations)}


def _window_notes(ctx: Context) -> list[str]:
    """A window in which nothing was captured says so, and when the store's captures were made."""
    if ctx.since is None and ctx.until is None:
        return []
    within, params = window_sql("captured_at", ctx.since, ctx.until)
    inside, n, first, last = ctx.con.execute(
        f"""SELECT count(*) FILTER (WHERE {within}), count(*), min(captured_at), max(captured_at)
            FROM edge_captures WHERE query_id IS NOT NULL""", params).fetchone()
    if inside:
        return []
    bounds = " and ".join(f"{word} {t:%Y-%m-%d %H:%M:%S}" for word, t in (("since", ctx.since), ("until", ctx.until))
                          if t is not None)
    future = ", a time still to come" if ctx.since is not None and ctx.since > utcnow() else ""
    if not n:
        return [f"the window ({bounds}{future}) is empty: the store holds no capture"]
    made = f"at {first:%Y-%m-%d %H:%M:%S}" if first == last else \
        f"from {first:%Y-%m-%d %H:%M:%S} to {last:%Y-%m-%d %H:%M:%S}"
    return [f"the window ({bounds}{future}) is empty: nothing was captured in it; the store's "
            f"{n} capture{'s were' if n != 1 else ' was'} made {made}"]


def _notes(ctx: Context, violations: list[dict[str, Any]]) -> list[str]:
    """What the store cannot tell about the datasets of ``violations``: one whose last write
    overwrote some of its partitions keeps the edges of the writes before it."""
    if not ctx.replaced:
        return []
    out = []
    for dataset in sorted({v["dataset"] for v in violations}):
        partial = ctx.replaced.partial.get(dataset)
        if partial is not None:
            out.append(f"{dataset} was last written by an overwrite of some of its partitions (query {partial[1]}, "
                       f"{partial[0]:%Y-%m-%d %H:%M:%S}): the store cannot tell which, so the edges of the "
                       f"writes before it still count")
    return out


def check_store(store: LineageStore, policy: Policy, since: str | datetime | None = None,
                until: str | datetime | None = None, history: bool = False, strict: bool = False) -> dict[str, Any]:
    """:func:`check` over a whole store, ``since``/``until`` as the CLI takes them (``1d``, a date)."""
    lo, hi = window(since, until)
    with store.connect() as con:
        return check(con, policy, lo, hi, history=history, strict=strict)


def check_edges(store: LineageStore, policy: Policy, edges: Iterable[dict[str, Any]],
                application: str = "preview", history: bool = False, strict: bool = False) -> dict[str, Any]:
    """:func:`check` of edges not captured yet (a preview of SQL: dicts with ``target_dataset``,
    ``target_column``, ``source_dataset``, ``source_column``, ``transform``, ``kind``,
    ``expression``, ``masking``, and the statement's ``write_mode``), as if captured now on top of
    the store: the columns they write are checked (forbid, require_masking, protect), and what they
    read (readers, as ``application``). A statement that replaces its target (``write_mode``
    ``replace``) makes the store's edges into it history."""
    edges = list(edges)
    planned = {e["target_dataset"] for e in edges if e.get("write_mode") == "replace" and e.get("target_dataset")}
    now = utcnow()
    extra = [LineageStep((e["source_dataset"], e["source_column"]), (e["target_dataset"], e["target_column"]), 1,
                  e["transform"], e["kind"], e.get("expression"), bool(e.get("masking")), "preview", application,
                  now, False, now, 1, None, earliest=now, latest=now, known=((now,),))
             for e in edges if e.get("target_dataset") and e.get("target_column") and e.get("source_column")]
    with store.connect() as con:
        aliases = Aliases(con)
        aliases.resolve(n for e in extra for n in (e.source[0], e.target[0]))
        extra = [replace(e, source=(aliases.canonical(e.source[0]), e.source[1]),
                         target=(aliases.canonical(e.target[0]), e.target[1])) for e in extra]
        return check(con, policy, scope={e.target for e in extra}, reads={e.source for e in extra}, extra=extra,
                     history=history, strict=strict, planned=planned)


def _queries(n: int) -> str:
    return f"{n} quer{'y' if n == 1 else 'ies'}"
