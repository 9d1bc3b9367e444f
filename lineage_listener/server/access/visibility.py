"""The one visibility rule of the lineage server (docs/security.md, "What a reader sees").

A dataset a reader may not read does not exist for that reader. Every request of a reader who may
not read everything passes here twice, whatever its route:

- :meth:`Sight.ask`, before the route runs: a dataset, run or application the request names that the
  reader may not read is answered exactly as one that never existed (404, the same body, suggestions
  drawn from what the reader may read);
- :meth:`Sight.show`, on the answer: a hidden dataset's rows leave lists; in a graph or a path each
  hidden dataset becomes one placeholder (no name, no columns, no SQL: ``"placeholder": "w1"``,
  ``"withheld": true``) so the graph keeps its shape; the SQL text, expressions and errors of a query
  are shown only when the reader may read every dataset it read and wrote (else null and
  ``"withheld": true``); the answer counts what it withheld (``"withheld": N``). A last pass nulls
  any other string that names a hidden dataset, and logs the route and key it came under.

Which keys hold what is one table below (:data:`DATASET_KEYS`, :data:`NAME_LISTS`, ...): answers are
shaped by what their fields mean, never route by route. Lists that are too long to filter after the
fact (pages with totals, ``limit``) ask the store for the readable rows only, with the reader's
:attr:`Sight.within` (:mod:`lineage_listener.query.within`).

Every route of the server is declared in :data:`ROUTES`: what it needs (``public``, ``identity``,
``read``, ``write``, ``admin``) and which of its parameters name datasets, runs or applications.
``create_app`` refuses to build a server with a route that is not.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import duckdb

from lineage_listener.govern.patterns import glob_matches, globs_sql_regex
from lineage_listener.query.names import Aliases, closest
from lineage_listener.query.within import dataset_sql, runs_sql
from lineage_listener.server.access.identity import Rights

log = logging.getLogger(__name__)

#: Keys whose string value names a dataset.
DATASET_KEYS = frozenset({"dataset", "source_dataset", "target_dataset"})
#: Keys of the ends of an edge: a dataset name, a column (``[dataset, column]``) or a node
#: (``{"dataset", "column"}``).
END_KEYS = ("source", "target")
#: Keys whose value is a list of dataset names.
NAME_LISTS = frozenset({"upstream", "downstream", "targets", "sources", "datasets"})
#: Keys of lists that are graphs or paths: a hidden dataset in them becomes a placeholder (one per
#: dataset) so they keep their shape. Any other list leaves out what is hidden.
GRAPH_LISTS = frozenset({"nodes", "edges", "downstream", "influenced", "origins", "paths", "steps", "hops",
                         "path", "from"})
#: Keys whose value is a column as ``[dataset, column]`` (labels: where a label comes ``from``).
COLUMN_KEYS = frozenset({"from"})
#: Keys of text a query wrote (its SQL, its edges' expressions, its error): literal values are data.
QUERY_TEXT = ("sql_text", "expression", "error")
#: What a placeholder keeps of the node or row it stands for: its place in the graph, never a name.
PLACE_KEEPS = frozenset({"depth", "hop", "level", "reach", "masking", "via", "before_window", "from",
                         "transform", "kind"})
#: What an edge keeps when one of its ends is a placeholder.
EDGE_KEEPS = frozenset({"item", "hop", "transform", "kind", "masking", "before_window", "dataset_level",
                        "columns", "queries"})
#: Keys of numbers that may count hidden edges (a query's, a side of a diff): withheld unless they are a
#: query's whose datasets may all be read.
EDGE_COUNTS = frozenset({"edges"})
#: Keys of what a query wrote into its target (rows, bytes, files): withheld with a hidden target.
WRITE_COUNTS = frozenset({"rows", "bytes", "files"})
#: Keys of counts of the lists beside them (``{"added": 3, ...}``): counted again once the lists are shaped.
RECOUNTED = frozenset({"counts"})
#: Keys the last pass does not look into (text of queries, shaped by their own rule).
_UNSEARCHED = frozenset(QUERY_TEXT)

_DROP = object()
#: An RE2 expression no name matches.
NOTHING = r"[^\x{0}-\x{10FFFF}]"


@dataclass(frozen=True)
class Route:
    """What a route needs and names (see the module docstring).

    ``datasets``: parameters naming one dataset each (404 when it may not be read); ``dataset_lists``:
    parameters naming several (those that may not be read are left out); ``runs``, ``apps``: the
    same for run ids and application names (a run exists for a reader when it wrote or read a
    dataset the reader may read; an application when one of its runs does). ``unknown``: how the
    route words an unknown name, ``"text"`` (``"unknown dataset 'x'; closest known: ..."``) or
    ``"object"`` (``{"error": ..., "closest": [...]}``). ``shapes_itself``: the route answers other than
    JSON and passes its answer through :meth:`Sight.show` itself (the gate refuses any other non-JSON
    answer to a reader who may not read everything)."""

    needs: str
    datasets: tuple[str, ...] = ()
    dataset_lists: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    apps: tuple[str, ...] = ()
    unknown: str = "text"
    shapes_itself: bool = False


PUBLIC = Route("public")
READ = Route("read")

#: Every route of the server: ``(method, path)`` -> what it needs and names. Public routes hold no
#: lineage: the UI's shell and files (it asks for a login itself), the API's description, the
#: liveness probe, the login itself.
ROUTES: dict[tuple[str, str], Route] = {
    ("GET", "/"): PUBLIC,
    ("GET", "/static"): PUBLIC,
    ("GET", "/docs"): PUBLIC,
    ("GET", "/openapi.json"): PUBLIC,
    ("GET", "/favicon.ico"): PUBLIC,
    ("GET", "/healthz"): PUBLIC,
    ("GET", "/auth/config"): PUBLIC,
    ("GET", "/auth/login"): PUBLIC,
    ("GET", "/auth/callback"): PUBLIC,
    ("POST", "/auth/logout"): PUBLIC,
    ("GET", "/auth/me"): Route("identity"),
    ("GET", "/api/datasets"): READ,
    ("GET", "/api/datasets/{dataset:path}"): Route("read", datasets=("dataset",), unknown="object"),
    ("GET", "/v3/namespaces/default/datasets/{dataset:path}/columns/{column}/lineage"):
        Route("read", datasets=("dataset",)),
    ("GET", "/api/impact"): Route("read", datasets=("dataset",)),
    ("GET", "/api/provenance"): Route("read", datasets=("dataset",)),
    ("GET", "/api/runs"): READ,
    ("GET", "/api/streams"): READ,
    ("GET", "/api/runs/{run_id:path}"): Route("read", runs=("run_id",), unknown="object"),
    ("POST", "/api/batches"): Route("write"),
    ("POST", "/api/v1/lineage"): Route("write"),
    ("GET", "/api/search"): READ,
    ("GET", "/api/schema"): Route("read", datasets=("dataset",), unknown="object"),
    ("GET", "/api/browse/runs"): READ,
    ("GET", "/api/overview"): Route("read", datasets=("dataset",), unknown="object"),
    ("GET", "/api/impact.csv"): Route("read", datasets=("dataset",), shapes_itself=True),
    ("GET", "/api/health"): READ,
    ("GET", "/api/labels"): Route("read", datasets=("dataset",), dataset_lists=("datasets",)),
    ("GET", "/api/labels/history"): READ,
    ("POST", "/api/labels"): Route("admin"),
    ("DELETE", "/api/labels"): Route("admin"),
    ("GET", "/api/violations"): READ,
    ("GET", "/api/diff"): Route("read", runs=("runs",), apps=("app",)),
    ("GET", "/api/diff/history"): Route("read", datasets=("dataset",), apps=("app",)),
    ("GET", "/api/diff/apps"): READ,
    ("GET", "/api/audit"): Route("admin"),
}


class Unknown(LookupError):
    """A name the reader may not read, answered as one that never existed: ``body`` is the 404's."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body["detail"])
        self.body = body


class Sight:
    """What one reader sees of the store. ``rights`` None: no access control, everything."""

    def __init__(self, rights: Rights | None = None) -> None:
        self.everything = rights is None or rights.everything
        self.globs: tuple[str, ...] = () if rights is None else rights.read
        #: RE2 of the readable names, for lists asked of the store (``$within``); None: every dataset.
        self.within: str | None = None
        if not self.everything:
            self.within = globs_sql_regex(self.globs) if self.globs else NOTHING

    def readable(self, names: Iterable[str]) -> bool:
        """Whether a dataset known by ``names`` (its canonical name and aliases) may be read."""
        return self.everything or any(glob_matches(g, n) for g in self.globs for n in names)

    # -- before the route runs ---------------------------------------------------------------
    def ask(self, con: duckdb.DuckDBPyConnection, route: Route, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with what the reader may not read left out of lists; :class:`Unknown` for one
        dataset, run or application it may not read or that does not exist."""
        if self.everything:
            return params
        out = dict(params)
        aliases = Aliases(con)
        for key in route.datasets:
            if out.get(key) is not None and not self._dataset_exists(con, aliases, out[key]):
                raise Unknown(self._unknown("dataset", out[key], self._dataset_names(con), route.unknown))
        for key in route.dataset_lists:
            if out.get(key):
                out[key] = [n for n in out[key] if self._dataset_exists(con, aliases, n)]
        for key in route.runs:
            for run_id in _listed(out.get(key)):
                if not self._run_exists(con, run_id):
                    raise Unknown(self._unknown("run", run_id, self._run_ids(con), route.unknown))
        for key in route.apps:
            if out.get(key) is not None and not self._app_exists(con, out[key]):
                raise Unknown(self._unknown("application", out[key], self._apps(con), route.unknown))
        return out

    def _dataset_exists(self, con: duckdb.DuckDBPyConnection, aliases: Aliases, name: str) -> bool:
        canonical = aliases.canonical(name)
        names = sorted(aliases.names(canonical))
        if not self.readable(names):
            return False
        return con.execute("""SELECT 1 FROM datasets WHERE dataset IN (SELECT unnest($n))
                              UNION ALL SELECT 1 FROM edges WHERE source_dataset IN (SELECT unnest($n))
                              UNION ALL SELECT 1 FROM edges WHERE target_dataset IN (SELECT unnest($n)) LIMIT 1""",
                           {"n": names}).fetchone() is not None

    def _dataset_names(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        return [r[0] for r in con.execute(
            f"""SELECT n FROM (SELECT dataset AS n FROM datasets UNION SELECT source_dataset FROM edges
                               UNION SELECT target_dataset FROM edges)
                WHERE n IS NOT NULL AND {dataset_sql('n')} ORDER BY n""", {"within": self.within}).fetchall()]

    def _run_ids(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        return [r[0] for r in con.execute(f"SELECT run_id FROM runs WHERE run_id IN ({runs_sql()}) ORDER BY 1",
                                          {"within": self.within}).fetchall()]

    def _run_exists(self, con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
        return con.execute(f"SELECT 1 FROM runs WHERE run_id = $r AND run_id IN ({runs_sql()})",
                           {"r": run_id, "within": self.within}).fetchone() is not None

    def _apps(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        return [r[0] for r in con.execute(
            f"SELECT DISTINCT app_name FROM runs WHERE app_name IS NOT NULL AND run_id IN ({runs_sql()}) ORDER BY 1",
            {"within": self.within}).fetchall()]

    def _app_exists(self, con: duckdb.DuckDBPyConnection, app: str) -> bool:
        return con.execute(f"SELECT 1 FROM runs WHERE app_name = $a AND run_id IN ({runs_sql()}) LIMIT 1",
                           {"a": app, "within": self.within}).fetchone() is not None

    @staticmethod
    def _unknown(kind: str, name: str, known: list[str], wording: str) -> dict[str, Any]:
        hint = closest(name, known)
        if wording == "object":
            return {"detail": {"error": f"unknown {kind} {name!r}", "closest": hint}}
        return {"detail": f"unknown {kind} {name!r}"
                          + (f"; closest known: {', '.join(hint)}" if hint else "; the store has none like it")}

    # -- on the answer --------------------------------------------------------------------------
    def show(self, con: duckdb.DuckDBPyConnection, answer: Any, route: str = "") -> tuple[Any, int]:
        """``answer`` as this reader may see it, and how many datasets and rows it withheld."""
        if self.everything:
            return answer, 0
        known = _Known(self, con)
        known.learn(answer)
        shaper = _Shaper(known, route)
        out = shaper.value(answer, None, graph=False)
        if out is _DROP:  # an answer about a hidden dataset: none of the routes gives one after ask()
            raise Unknown({"detail": "not found"})
        out = shaper.net(out, None)
        return out, shaper.withheld


def _listed(value: Any) -> list[str]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


class _Known:
    """Readability of the names and queries of one answer, looked up in two queries."""

    def __init__(self, sight: Sight, con: duckdb.DuckDBPyConnection) -> None:
        self.sight, self.con = sight, con
        self.aliases = Aliases(con)
        self._readable: dict[str, bool] = {}
        self._datasets: set[str] = set()          # the strings that name a dataset of the store
        self._queries: dict[str, tuple[bool, bool]] = {}  # query id -> (touches a readable dataset, all readable)
        self._strings: set[str] = set()
        self._hidden: list[str] | None = None

    def learn(self, answer: Any) -> None:
        strings: set[str] = set()
        queries: set[str] = set()
        for key, value in _walk(answer, None):
            if isinstance(value, str) and key not in QUERY_TEXT:
                if key == "query_id":
                    queries.add(value)
                elif _named(value) and len(value) < 4096 and not _TIME.match(value):
                    strings.add(value)
                    if " " in value:  # a message naming datasets among its words
                        strings.update(w for w in _WORDS.findall(value) if _named(w))
        names = sorted(strings)
        self._strings = strings
        self.aliases.resolve(names)
        if names:
            canon = sorted({self.aliases.canonical(n) for n in names})
            self._datasets = {r[0] for r in self.con.execute(
                """SELECT dataset FROM datasets WHERE dataset IN (SELECT unnest($n))
                   UNION SELECT source_dataset FROM edges WHERE source_dataset IN (SELECT unnest($n))
                   UNION SELECT target_dataset FROM edges WHERE target_dataset IN (SELECT unnest($n))""",
                {"n": canon}).fetchall()}
        if queries:
            touched: dict[str, set[str]] = {q: set() for q in queries}
            rows = self.con.execute(
                """SELECT query_id, target_dataset FROM queries WHERE query_id IN (SELECT unnest($q))
                   UNION SELECT c.query_id, unnest([e.source_dataset, e.target_dataset])
                   FROM edge_captures c JOIN edge_sets s ON s.set_id = c.set_id JOIN edges e ON e.edge_id = s.edge_id
                   WHERE c.query_id IN (SELECT unnest($q))""", {"q": sorted(queries)}).fetchall()
            for q, name in rows:
                if name is not None:
                    touched[q].add(name)
            self.aliases.resolve({n for ns in touched.values() for n in ns})
            for q, ns in touched.items():
                flags = [self.readable(n) for n in ns]
                self._queries[q] = (any(flags), bool(flags) and all(flags))

    def readable(self, name: str) -> bool:
        if name not in self._readable:
            canonical = self.aliases.canonical(name)
            self._readable[name] = self.sight.readable(self.aliases.names(canonical) | {name})
        return self._readable[name]

    def canonical(self, name: str) -> str:
        return self.aliases.canonical(name)

    def is_dataset(self, name: str) -> bool:
        """Whether ``name`` names a dataset of the store (every such string of the answer was learned)."""
        return name in self._strings and self.aliases.canonical(name) in self._datasets

    def hidden_names(self) -> list[str]:
        """The names of hidden datasets this answer holds somewhere (canonical and as they appear)."""
        if self._hidden is None:
            found = {n for n in self._strings if self.is_dataset(n) and not self.readable(n)}
            found |= {self.aliases.canonical(n) for n in found}
            self._hidden = sorted(found, key=len, reverse=True)
        return self._hidden

    def query(self, query_id: Any) -> tuple[bool, bool]:
        """(the query touched a readable dataset, every dataset it touched is readable); an unknown or
        missing query: neither."""
        return self._queries.get(query_id, (False, False)) if isinstance(query_id, str) else (False, False)


def _walk(value: Any, key: str | None) -> Iterator[tuple[str | None, Any]]:
    """Every ``(key, value)`` of a JSON value, depth first; list items carry their list's key."""
    yield key, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)


class _Shaper:
    """One answer shaped for one reader (see the module docstring)."""

    def __init__(self, known: _Known, route: str) -> None:
        self.known, self.route = known, route
        self.placeholders: dict[str, str] = {}
        self.dropped = 0
        self.nulled = 0

    @property
    def withheld(self) -> int:
        return len(self.placeholders) + self.dropped + self.nulled

    def hidden(self, name: Any) -> bool:
        return isinstance(name, str) and not self.known.readable(name)

    def placeholder(self, name: str) -> str:
        canonical = self.known.canonical(name)
        if canonical not in self.placeholders:
            self.placeholders[canonical] = f"w{len(self.placeholders) + 1}"
        return self.placeholders[canonical]

    # -- values -----------------------------------------------------------------------------------
    def value(self, v: Any, key: str | None, graph: bool) -> Any:
        if isinstance(v, dict):
            return self.mapping(v, graph)
        if isinstance(v, list):
            return self.items(v, key)
        return v

    def items(self, items: list, key: str | None) -> list:
        if key in COLUMN_KEYS and _is_column(items):
            return self.column(items)[0]
        if key in NAME_LISTS and all(isinstance(i, str) or i is None for i in items):
            kept = [n for n in items if not (self.known.is_dataset(n) and self.hidden(n))]
            self.dropped += len(items) - len(kept)
            return kept
        graph = key in GRAPH_LISTS
        out, seen = [], set()
        for item in items:
            if isinstance(item, list) and _is_column(item):
                shaped = self.column(item)[0]
            else:
                shaped = self.value(item, key, graph)
            if shaped is _DROP:
                self.dropped += 1
                continue
            if isinstance(shaped, dict) and shaped.get("withheld") is True and ("placeholder" in shaped or any(
                    f"{end}_placeholder" in shaped for end in END_KEYS)):
                same = tuple(str(shaped.get(k)) for k in ("placeholder", "source_placeholder", "target_placeholder",
                                                           "source", "target", "transform", "kind"))
                if same in seen:
                    continue
                seen.add(same)
            out.append(shaped)
        return out

    def column(self, ref: list) -> tuple[list, str | None]:
        """A ``[dataset, column, ...]`` reference: a hidden dataset's is ``[null, null, ...]``."""
        if self.hidden(ref[0]):
            return [None, None, *ref[2:]], self.placeholder(ref[0])
        return list(ref), None

    def end(self, v: Any) -> tuple[Any, str | None]:
        if isinstance(v, str):  # a dataset's name (or a word: a label's "source")
            return (None, self.placeholder(v)) if self.known.is_dataset(v) and self.hidden(v) else (v, None)
        if isinstance(v, list) and _is_column(v):
            return self.column(v)
        if isinstance(v, dict) and self.hidden(v.get("dataset")):
            pid = self.placeholder(v["dataset"])
            return {"dataset": None, "column": None, "placeholder": pid}, pid
        return v, None

    def mapping(self, d: dict, graph: bool) -> Any:
        if self.hidden(d.get("dataset")):
            if not graph:
                return _DROP
            pid = self.placeholder(d["dataset"])
            kept = {k: self.value(v, k, True) for k, v in d.items() if k in PLACE_KEEPS}
            return {"dataset": None, **({"column": None} if "column" in d else {}), **kept, "placeholder": pid,
                    "withheld": True}
        out = dict(d)
        ends = {}
        for end in END_KEYS:
            if end in out:
                out[end], pid = self.end(out[end])
                if pid is not None:
                    ends[end] = pid
        if ends:
            readable = [e for e in END_KEYS if e in out and e not in ends and _dataset_of(out[e]) is not None]
            if not graph and not readable:
                return _DROP  # a row about hidden datasets (and the driver) only
            for e in END_KEYS:  # the driver's end of a hidden query: its columns are the query's
                if e in out and e not in ends and _dataset_of(out[e]) is None:
                    out[e] = _driver(out[e])
            out = {k: v for k, v in out.items() if k in EDGE_KEEPS or k in END_KEYS}
            out.update({f"{end}_placeholder": pid for end, pid in ends.items()}, withheld=True)
            return out
        query_id = out.get("query_id")
        touched, clear = self.known.query(query_id)
        if query_id is not None and not graph and "target_dataset" in out and not touched:
            return _DROP  # a query that wrote and read only what is hidden
        for k in ("source_dataset", "target_dataset"):
            if self.hidden(out.get(k)):
                out[k] = None
                out["withheld"] = True
                if k == "target_dataset":
                    out.update({c: None for c in WRITE_COUNTS & out.keys()})
        if not clear:
            for k in QUERY_TEXT:
                if out.get(k) is not None:
                    out[k] = None
                    out["withheld"] = True
        for k, v in out.items():
            if k in COLUMN_KEYS and isinstance(v, dict):
                out[k] = self.end(v)[0]
            elif k in EDGE_COUNTS and isinstance(v, int) and not isinstance(v, bool) and not clear:
                out[k] = None
            elif isinstance(v, (dict, list)) and k not in END_KEYS:
                out[k] = self.value(v, k, graph if k in PLACE_KEEPS else False)
                if out[k] is _DROP:
                    out[k] = None
        for k in RECOUNTED & out.keys():
            if isinstance(out[k], dict):
                out[k] = {c: len(out[c]) if isinstance(out.get(c), list) else n for c, n in out[k].items()}
        return out

    # -- the last pass ------------------------------------------------------------------------------
    def net(self, v: Any, key: str | None) -> Any:
        """Any string left that names a hidden dataset, nulled (and logged: a field this rule does not
        know yet)."""
        if isinstance(v, dict):
            return {k: (x if k in _UNSEARCHED else self.net(x, k)) for k, x in v.items()}
        if isinstance(v, list):
            return [self.net(x, key) for x in v]
        if isinstance(v, str) and ((self.known.is_dataset(v) and self.hidden(v))
                                   or (" " in v and any(n in v for n in self.known.hidden_names()))):
            self.nulled += 1
            log.warning("lineage-listener serve: %s answered a hidden dataset's name under %r; withheld",
                        self.route or "a route", key)
            return None
        return v


_WORDS = re.compile(r"[^\s\[\](){},;'\"`]+")
_TIME = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?$")


def _named(value: str) -> bool:
    """Whether ``value`` could be a dataset's name (they all hold a ``.``, ``:`` or ``/``)."""
    return ":" in value or "." in value or "/" in value


def _dataset_of(end: Any) -> Any:
    """The dataset an edge's end names (None: the driver, a query's result)."""
    if isinstance(end, dict):
        return end.get("dataset")
    if isinstance(end, list):
        return end[0] if end else None
    return end


def _driver(end: Any) -> Any:
    """The driver's end of an edge, its column withheld."""
    if isinstance(end, dict):
        return {**end, "column": None}
    if isinstance(end, list):
        return [None, None, *end[2:]]
    return end


def _is_column(v: list) -> bool:
    return 2 <= len(v) <= 3 and (v[0] is None or isinstance(v[0], str)) and (v[1] is None or isinstance(v[1], str))
