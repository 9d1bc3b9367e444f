"""Kept paths: the steps of a walk a time window keeps, and what each column is to the start.

A walk's graph (:func:`~lineage_listener.query.graph.build_graph`) holds every step found
around the start column; its records carry their capture bounds (``earliest``/``latest``:
the first and last capture not after the window's end) and whether they were captured in
the window. :func:`keep` returns the graph of the paths the rules keep
(docs/reference/semantics.md, time windows):

- a path never runs backwards in time: a step carries only data its upstream step wrote
  earlier (captures chained oldest to newest, equal times allowed);
- a path is kept when its most downstream write (its last step in data-flow order) was
  captured in the window; the steps upstream of it may be older;
- downstream, a column is *in the window* when a write into it was captured there; a column
  on a kept path whose writes all lie before the window is ``before_window``; upstream,
  the sources of the kept paths appear.

Each column also gets ``reach`` (``start``, ``copy``, ``influenced``) and, for copies in a
downstream walk, ``masking``; influenced columns get ``via`` (the indirect transforms on
their paths), per :mod:`lineage_listener.query.copies`, taking lanes (copy, masked copy,
influence) and their own capture times apart: one graph edge can be a clear copy in one
query and masked in another.

With ``arrivals``, each column also gets the steps :func:`path` follows to tell why a column is
what it is, per path state (``clear``, ``masked``, ``influenced``): the path back to a start,
each step with the capture it uses. Several
start columns walk at once as one (a start is never reached from another).

Times are decided from each record's bounds and its first and last known capture times
(``known``) where they can be; where they cannot (a path arrives among an edge's captures
further from both ends), ``lookup`` answers exactly, for a batch of questions at a time:
``(edge_ids, t, "next")`` the first capture at or after ``t``, ``(edge_ids, t, "prev")`` the
last at or before ``t``. Without ``lookup`` the bounds are trusted (a capture is assumed at
``t``). Records without bounds (graphs built by hand) are usable at any time.

>>> from datetime import datetime as dt
>>> g = nx.DiGraph(start=("s", "a"), direction="downstream")
>>> rec = lambda kind, masking, day: {"kind": kind, "masking": masking, "transform": "identity",
...     "earliest": dt(2026, 1, day), "latest": dt(2026, 1, day), "captured_at": dt(2026, 1, day),
...     "before_window": day < 10, "edge_id": day}
>>> g.add_edge(("s", "a"), ("t", "a"), records=[rec("direct", False, 5)])   # day 5: before the window
>>> g.add_edge(("t", "a"), ("u", "a"), records=[rec("direct", False, 12)])  # day 12: in it
>>> g.add_edge(("u", "a"), ("v", "a"), records=[rec("direct", False, 11)])  # day 11: before day 12's data
>>> k = keep(g, ("s", "a"), "downstream", since=dt(2026, 1, 10))
>>> sorted(k.nodes(data="before_window"))
[(('s', 'a'), False), (('t', 'a'), True), (('u', 'a'), False)]
>>> k.nodes[("u", "a")]["reach"], k.nodes[("u", "a")]["masking"]
('copy', 'unmasked')
>>> k = keep(g, ("s", "a"), "downstream", arrivals=True)
>>> [(u[0], v[0], lane, at.day) for u, v, lane, at in path(k, ("u", "a"), "clear")]
[('s', 't', 'clear', 5), ('t', 'u', 'clear', 12)]
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import networkx as nx

from lineage_listener.query.copies import COPY, INFLUENCED, START, combine, lane, masking, reach
from lineage_listener.query.graph import summarize

Node = tuple[str, str]
#: Exact capture questions: ``(edge_ids, t, "next"|"prev")`` -> the capture time or None.
Lookup = Callable[[list[tuple[tuple[int, ...], datetime, str]]], list[datetime | None]]

_EARLY, _LATE = datetime.min, datetime.max


@dataclass
class Lane:
    """The records of one graph edge in one lane, with their combined capture bounds."""

    name: str
    records: list[dict] = field(default_factory=list)
    earliest: datetime | None = None     # first usable capture (not after the window's end)
    latest: datetime | None = None       # last usable capture
    in_window: datetime | None = None    # last capture in the window
    timed: bool = True                   # False: records without bounds, usable at any time
    ids: tuple[int, ...] = ()
    lows: list[datetime] = field(default_factory=list)    # its first capture times, oldest first
    highs: list[datetime] = field(default_factory=list)   # its last capture times, oldest first
    complete: bool = True                # lows (and highs) hold every usable capture

    def add(self, r: dict) -> None:
        self.records.append(r)
        if "latest" not in r:
            self.timed = False
            return
        if r["latest"] is None:   # captured after the window only
            return
        self.earliest = min(filter(None, (self.earliest, r["earliest"])))
        self.latest = max(filter(None, (self.latest, r["latest"])))
        if not r.get("before_window"):
            self.in_window = max(filter(None, (self.in_window, r["captured_at"])))
        if r.get("edge_id") is not None:
            self.ids = tuple(sorted(set(self.ids) | {r["edge_id"]}))
        known = r.get("known") or ((r["earliest"],), (r["latest"],))   # without them: the bounds only
        self.complete = self.complete and len(known) == 1 and "known" in r
        if not self.lows and not self.highs:   # the first timed record: its times are sorted and distinct
            self.lows, self.highs = list(known[0]), list(known[-1])
            return
        self.lows = sorted(set(self.lows) | set(known[0]))
        self.highs = sorted(set(self.highs) | set(known[-1]))
        if not self.complete:
            self.lows, self.highs = self.lows[:len(known[0])], self.highs[-len(known[-1]):]

    @property
    def usable(self) -> bool:
        return not self.timed or self.latest is not None

    def known_next(self, t: datetime) -> datetime | None | object:
        """The first capture at or after ``t`` when the known times tell it, else :data:`UNKNOWN`."""
        i = bisect_left(self.lows, t)
        if i < len(self.lows):
            return self.lows[i]
        if self.complete:
            return None
        if self.highs and self.highs[0] < t:
            j = bisect_left(self.highs, t)
            return self.highs[j] if j < len(self.highs) else None
        return UNKNOWN

    def known_prev(self, t: datetime) -> datetime | None | object:
        """The last capture at or before ``t`` when the known times tell it, else :data:`UNKNOWN`."""
        j = bisect_right(self.highs, t)
        if j > 0:
            return self.highs[j - 1]
        if self.complete:
            return None
        if self.lows and self.lows[-1] > t:
            i = bisect_right(self.lows, t)
            return self.lows[i - 1] if i > 0 else None
        return UNKNOWN


#: A capture time the known times of a lane cannot tell (the store is asked).
UNKNOWN = object()


def lanes(records: Iterable[dict]) -> dict[str, Lane]:
    """A graph edge's records by lane, usable ones only.

    >>> sorted(lanes([{"kind": "direct", "masking": False}, {"kind": "indirect", "masking": False}]))
    ['clear', 'influenced']
    """
    out: dict[str, Lane] = {}
    for r in records:
        name = lane(r)
        out.setdefault(name, Lane(name)).add(r)
    return {k: v for k, v in out.items() if v.usable}


#: Lanes made from records, by the records' identities (a graph's records are not changed in place).
Lanes = dict[tuple[int, ...], dict[str, Lane]]


def _lanes_of(data: dict, made: Lanes) -> dict[str, Lane]:
    """:func:`lanes` of a graph edge's records, made once per list of the same record objects. A lane
    is only read once made; two graph edges share one only when they share their records, which
    only the columns of one dataset-level edge do (they have distinct ends: a walk keys lanes by edge)."""
    records = data.get("records", [data])
    key = tuple(map(id, records))
    found = made.get(key)
    if found is None:
        found = made[key] = lanes(records)
    return found


class _Times:
    """Capture questions for one walk: answered from bounds, or batched into ``lookup``."""

    def __init__(self, lookup: Lookup | None) -> None:
        self.lookup = lookup
        self.asked: list[tuple[tuple[int, ...], datetime, str]] = []
        self.waiting: list[Callable[[datetime | None], None]] = []

    def next(self, ln: Lane, t: datetime, then: Callable[[datetime | None], None]) -> None:
        """The first capture of ``ln`` at or after ``t`` (to ``then``)."""
        if not ln.timed:
            return then(t)
        if ln.earliest >= t:
            return then(ln.earliest)
        if ln.latest < t:
            return then(None)
        found = ln.known_next(t)
        if found is not UNKNOWN:
            return then(found)
        self._ask(ln, t, "next", then)

    def prev(self, ln: Lane, t: datetime, then: Callable[[datetime | None], None]) -> None:
        """The last capture of ``ln`` at or before ``t`` (to ``then``)."""
        if not ln.timed:
            return then(t)
        if ln.latest <= t:
            return then(ln.latest)
        if ln.earliest > t:
            return then(None)
        found = ln.known_prev(t)
        if found is not UNKNOWN:
            return then(found)
        self._ask(ln, t, "prev", then)

    def _ask(self, ln: Lane, t: datetime, op: str, then: Callable[[datetime | None], None]) -> None:
        if self.lookup is None or not ln.ids:
            return then(t)
        self.asked.append((ln.ids, t, op))
        self.waiting.append(then)

    def answer(self) -> None:
        """Ask ``lookup`` everything waiting, in one batch, and pass the answers on."""
        if not self.asked:
            return
        asked, waiting = self.asked, self.waiting
        self.asked, self.waiting = [], []
        for then, found in zip(waiting, self.lookup(asked)):
            then(found)


@dataclass
class _Step:
    """One lane of one graph edge, walked from ``near`` (in state ``state``) to ``far``."""

    edge: tuple[Node, Node]
    near: Node
    far: Node
    lane: Lane
    state: str
    at: datetime | None = None     # the capture the path uses on this step
    shown: datetime | None = None  # downstream in a window: its first capture in the window


def keep(g: nx.DiGraph, start: Node | list[Node], direction: str, since: datetime | None = None,
         until: datetime | None = None, lookup: Lookup | None = None, arrivals: bool = False,
         made: Lanes | None = None) -> nx.DiGraph:
    """The graph of the paths of ``g`` the window keeps, nodes annotated (see the module).

    ``start``: one column, or a list of columns walked from at once. ``arrivals``: annotate each
    column with the steps :func:`path` follows. ``g.graph["window"]`` says what lies outside the
    window: ``outside`` is None, or the captures of the steps this answer leaves out, with a message.
    ``made``: lanes made before, by their records (:data:`Lanes`), taken and added to: walks over one
    graph (one per label) make each edge's lanes once, and edges sharing their records (the columns
    one dataset-level edge reaches) share their lanes.
    """
    downstream = direction == "downstream"
    starts = set(start) if isinstance(start, list) else {start}
    edge_lanes = {(u, v): _lanes_of(d, made) for u, v, d in g.edges(data=True)} if made is not None else \
        {(u, v): lanes(d.get("records", [d])) for u, v, d in g.edges(data=True)}
    out_of: dict[Node, list[tuple[Node, Node]]] = {}
    for (u, v) in edge_lanes:
        near, far = (u, v) if downstream else (v, u)
        if far not in starts:
            out_of.setdefault(near, []).append((u, v))
    times = _Times(lookup)
    steps, came = _walk(starts, downstream, until, edge_lanes, out_of, times)
    if downstream:
        kept, ending = _downstream_kept(steps, since, times)
    else:
        kept, ending = [s for s in steps.values() if s.at is not None], set()
    out = _annotated(g, start, starts, direction, since, until, kept, ending)
    if arrivals:
        _arrivals(out, starts, downstream, since, came, kept, ending, times)
    return out


def _walk(starts: set[Node], downstream: bool, until: datetime | None,
          edge_lanes: dict[tuple[Node, Node], dict[str, Lane]], out_of: dict[Node, list[tuple[Node, Node]]],
          times: _Times) -> tuple[dict[tuple, _Step], dict[tuple[Node, str], _Step]]:
    """Best times per (column, state), label-correcting in rounds (one batch of lookups each):
    downstream the earliest a path's data can be in the column, upstream the latest it can
    leave it and still reach a start; and the step that gave each its best time."""
    label: dict[tuple[Node, str], datetime] = {(s, "clear"): _EARLY if downstream else (until or _LATE)
                                               for s in sorted(starts)}
    better = (lambda a, b: a < b) if downstream else (lambda a, b: a > b)
    steps: dict[tuple, _Step] = {}
    came: dict[tuple[Node, str], _Step] = {}
    todo = sorted(label)
    while todo:
        improved: set[tuple[Node, str]] = set()

        def reached(step: _Step, at: datetime | None) -> None:
            step.at = at
            if at is None:
                return
            key = (step.far, combine(step.state, step.lane.name))
            if key not in label or better(at, label[key]):
                label[key] = at
                came[key] = step
                improved.add(key)

        for near, state in todo:
            t = label[(near, state)]
            for edge in out_of.get(near, ()):
                for name, ln in edge_lanes[edge].items():
                    far = edge[1] if downstream else edge[0]
                    step = steps.setdefault((edge, state, name), _Step(edge, near, far, ln, state))
                    then = lambda at, step=step: reached(step, at)  # noqa: E731
                    if downstream:
                        times.next(ln, t, then)
                    elif near in starts:   # the start's own write must lie in the window
                        then(ln.in_window if ln.timed else t)
                    else:
                        times.prev(ln, t, then)
        times.answer()
        todo = sorted(improved)
    return steps, came


def _downstream_kept(steps: dict[tuple, _Step], since: datetime | None,
                     times: _Times) -> tuple[list[_Step], set[int]]:
    """Steps on kept paths, and (by ``id``) those whose own write lies in the window."""
    live = [s for s in steps.values() if s.at is not None]
    ending = {id(s) for s in live if since is None or not s.lane.timed or s.lane.latest >= since}
    if since is None:
        return live, ending
    # the latest a path can leave each column and still end with a write in the window
    leave: dict[Node, datetime] = {}
    for s in live:
        if id(s) in ending:
            leave[s.near] = max(leave.get(s.near, _EARLY), s.lane.latest if s.lane.timed else _LATE)
    into: dict[Node, dict[int, tuple[Node, Lane]]] = {}
    for s in live:
        into.setdefault(s.far, {})[id(s.lane)] = (s.near, s.lane)
    todo = set(leave)
    while todo:
        changed: set[Node] = set()

        def later(node: Node, at: datetime | None) -> None:
            if at is not None and (node not in leave or at > leave[node]):
                leave[node] = at
                changed.add(node)

        for w in sorted(todo):
            for u, ln in into.get(w, {}).values():
                times.prev(ln, leave[w], lambda at, u=u: later(u, at))
        times.answer()
        todo = changed
    kept = [s for s in live if id(s) in ending or (s.far in leave and s.at <= leave[s.far])]
    return kept, ending


def _annotated(g: nx.DiGraph, start: Node | list[Node], starts: set[Node], direction: str,
               since: datetime | None, until: datetime | None, kept: list[_Step], ending: set[int]) -> nx.DiGraph:
    downstream = direction == "downstream"
    out = nx.DiGraph(**{**g.graph, "start": start, "direction": direction})
    for s in sorted(starts):
        out.add_node(s, dataset=s[0], column=s[1], reach=START, before_window=False)
    by_edge: dict[tuple[Node, Node], set[str]] = {}
    for s in kept:
        by_edge.setdefault(s.edge, set()).add(s.lane.name)
    for (u, v), names in by_edge.items():
        found = g.edges[u, v].get("records", [g.edges[u, v]])
        records = [r for r in found if lane(r) in names and r.get("latest", True) is not None]
        for n in (u, v):
            if n not in out:
                out.add_node(n, dataset=n[0], column=n[1])
        out.add_edge(u, v, **g.edges[u, v])
        if len(records) < len(found):   # some records are on no kept path: summarise the others
            out.edges[u, v]["records"] = records
            summarize(out.edges[u, v])
    _classify(out, starts, downstream, since, kept, ending)
    _depths(out, starts, downstream)
    out.graph["window"] = window(g, out, direction, since, until)
    return out


def _classify(out: nx.DiGraph, starts: set[Node], downstream: bool, since: datetime | None, kept: list[_Step],
              ending: set[int]) -> None:
    into: dict[Node, list[_Step]] = {}
    writes: dict[Node, list[_Step]] = {}   # upstream: the steps walked from a column are its writes
    for s in kept:
        into.setdefault(s.far, []).append(s)
        writes.setdefault(s.near, []).append(s)
    via: dict[Node, set[str]] = {}
    changed = True
    while changed:   # indirect transforms on the paths into each influenced state, to a fixpoint
        changed = False
        for s in kept:
            if combine(s.state, s.lane.name) != INFLUENCED:
                continue
            found = set(via.get(s.near, ())) if s.state == INFLUENCED else set()
            if s.lane.name == INFLUENCED:
                found |= {r["transform"] for r in s.lane.records}
            if not found <= via.get(s.far, set()):
                via.setdefault(s.far, set()).update(found)
                changed = True
    for node, ss in into.items():
        if node in starts or node not in out:
            continue
        if downstream:
            own = [s for s in ss if id(s) in ending]
            before = not own
        else:
            own = ss
            before = since is not None and node in writes and all(s.at < since for s in writes[node])
        states = {combine(s.state, s.lane.name) for s in (own or ss)}
        attrs: dict[str, Any] = {"reach": reach(states), "before_window": before}
        if downstream and attrs["reach"] == COPY:
            attrs["masking"] = masking(states)
        if attrs["reach"] == INFLUENCED:
            attrs["via"] = sorted(via.get(node, ()))
        out.nodes[node].update(attrs)


def _depths(out: nx.DiGraph, starts: set[Node], downstream: bool) -> None:
    walk = out if downstream else out.reverse(copy=False)
    depth = nx.multi_source_dijkstra_path_length(walk, starts, weight=lambda u, v, d: 1)
    for n, d in out.nodes(data=True):
        d["depth"] = depth.get(n, 0)
    for u, v, d in out.edges(data=True):
        d["hop"] = depth.get(u if downstream else v, 0) + 1


def _arrivals(out: nx.DiGraph, starts: set[Node], downstream: bool, since: datetime | None,
              came: dict[tuple[Node, str], _Step], kept: list[_Step], ending: set[int], times: _Times) -> None:
    """Node attributes ``earliest`` and ``arrivals``: per path state, ``(step edge, lane, capture
    used, state before it)`` of the step the earliest kept path arrives by, and of the step the
    answer shows; they differ downstream in a window, where the step shown is a write in the
    window (at its first capture there) and the path before it is the earliest one."""
    kept_ids = {id(s) for s in kept}
    earliest: dict[Node, dict[str, tuple]] = {}
    for (node, state), s in came.items():
        if id(s) in kept_ids and node in out and node not in starts:
            earliest.setdefault(node, {})[state] = (s.edge, s.lane.name, _used(s), s.state)
    shown = earliest
    if downstream and since is not None:
        own = [s for s in kept if id(s) in ending and s.far not in starts]
        for s in own:   # where the earliest path's last step was captured before the window
            s.shown = s.at
            if s.lane.timed and s.at < since:
                times.next(s.lane, since, lambda at, s=s: setattr(s, "shown", at))
        times.answer()
        shown = {}
        for s in sorted(own, key=lambda s: s.shown or _EARLY):
            shown.setdefault(s.far, {}).setdefault(combine(s.state, s.lane.name),
                                                   (s.edge, s.lane.name, s.shown if s.lane.timed else None,
                                                    s.state))
    for node, by_state in earliest.items():
        out.nodes[node]["earliest"] = by_state
        out.nodes[node]["arrivals"] = shown.get(node, {})


def _used(s: _Step) -> datetime | None:
    """The capture a step's path uses (None for records without capture times)."""
    return s.at if s.lane.timed else None


def path(k: nx.DiGraph, node: Node, state: str) -> list[tuple[Node, Node, str, datetime | None]]:
    """The earliest kept path into ``node`` in ``state`` (a graph :func:`keep` annotated with
    ``arrivals``), in data-flow order: ``(source, target, lane, capture used)`` per step (None for
    records without capture times); [] when no path arrives in that state.

    >>> g = nx.DiGraph()
    >>> g.add_edge(("s", "a"), ("t", "a"), records=[{"kind": "direct", "masking": True}])
    >>> k = keep(g, ("s", "a"), "downstream", arrivals=True)
    >>> path(k, ("t", "a"), "masked"), path(k, ("t", "a"), "clear")
    ([(('s', 'a'), ('t', 'a'), 'masked', None)], [])
    """
    downstream = k.graph["direction"] == "downstream"
    steps: list[tuple[Node, Node, str, datetime | None]] = []
    seen: set[tuple[Node, str]] = set()
    how = "arrivals"   # the step the answer shows, then the earliest path to it
    while (node, state) not in seen:
        seen.add((node, state))
        found = k.nodes[node].get(how, {}).get(state) if node in k else None
        how = "earliest"
        if found is None:
            break
        (u, v), name, at, state = found
        steps.append((u, v, name, at))
        node = u if downstream else v
    return steps[::-1] if downstream else steps


def window(g: nx.DiGraph, kept: nx.DiGraph, direction: str, since: datetime | None,
           until: datetime | None) -> dict[str, Any]:
    """``{"since", "until", "outside"}``: ``outside`` counts the captures outside the window of
    the steps of ``g`` that ``kept`` leaves out (each stored edge once), or is None."""
    if since is None and until is None:
        return {"since": since, "until": until, "outside": None}
    used = {r.get("edge_id") for _, _, d in kept.edges(data=True) for r in d.get("records", ())}
    left: dict[Any, tuple[int, datetime, datetime]] = {}
    for _, _, d in g.edges(data=True):
        for r in d.get("records", ()):
            if r.get("outside") and r.get("edge_id") not in used:
                key = r["edge_id"] if r.get("edge_id") is not None else id(r)
                left[key] = (r["outside"], r["outside_first"], r["outside_last"])
    if not left:
        return {"since": since, "until": until, "outside": None}
    n = sum(c for c, _, _ in left.values())
    first, last = min(f for _, f, _ in left.values()), max(x for _, _, x in left.values())
    return {"since": since, "until": until,
            "outside": {"captures": n, "first": first, "last": last,
                        "message": outside_message(n, first, last, since, until, kept.number_of_edges() == 0,
                                                   direction)}}


def merge_windows(windows: list[dict[str, Any]], empty: bool) -> dict[str, Any]:
    """One window object for the walks of one answer (both directions): their ``outside``
    captures added up, the message said again for the whole (``empty``: the answer has no step).

    >>> from datetime import datetime as dt
    >>> w = {"since": dt(2026, 1, 9), "until": None, "outside": None}
    >>> merge_windows([w, {**w, "outside": {"captures": 2, "first": dt(2026, 1, 1), "last": dt(2026, 1, 2),
    ...                                     "message": "..."}}], empty=True)["outside"]["message"]
    "2 captures of this column's lineage, from 2026-01-01 00:00:00 to 2026-01-02 00:00:00, all before 2026-01-09 00:00:00"
    """
    if len(windows) == 1:
        return windows[0]
    first = windows[0]
    parts = [w["outside"] for w in windows if w["outside"]]
    if not parts:
        return {**first, "outside": None}
    n = sum(p["captures"] for p in parts)
    lo, hi = min(p["first"] for p in parts), max(p["last"] for p in parts)
    return {**first, "outside": {"captures": n, "first": lo, "last": hi,
                                 "message": outside_message(n, lo, hi, first["since"], first["until"], empty, None)}}


def outside_message(n: int, first: datetime, last: datetime, since: datetime | None, until: datetime | None,
                    empty: bool, direction: str | None) -> str:
    """One line on the captures a window leaves out, with when the first and last were made
    (``direction`` None: of both walks).

    >>> from datetime import datetime as dt
    >>> outside_message(3, dt(2026, 11, 1), dt(2026, 11, 3), dt(2026, 11, 20), None, True, "downstream")
    "3 captures of this column's downstream lineage, from 2026-11-01 00:00:00 to 2026-11-03 00:00:00, all before 2026-11-20 00:00:00"
    >>> outside_message(1, dt(2026, 11, 21), dt(2026, 11, 21), None, dt(2026, 11, 20), False, "upstream")
    '1 capture of steps this answer leaves out, at 2026-11-21 00:00:00, all after 2026-11-20 00:00:00'
    """
    if since is not None and last < since:
        where = f"all before {_when(since)}"
    elif until is not None and first > until:
        where = f"all after {_when(until)}"
    else:
        where = "outside the window"
    when = f"at {_when(first)}" if first == last else f"from {_when(first)} to {_when(last)}"
    lineage = f"{direction} lineage" if direction else "lineage"
    what = f"of this column's {lineage}" if empty else "of steps this answer leaves out"
    return f"{n} capture{'s' if n != 1 else ''} {what}, {when}, {where}"


def _when(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


