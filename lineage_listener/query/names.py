"""Dataset names: aliases (a table and its storage location) and suggestions.

A catalog table and the path it is stored at are one dataset for lineage
(docs/reference/datasets.md). ``datasets`` rows of kind ``table`` carry the storage
URI in ``location``; a job that read ``file:/wh/db.db/t`` by path continues
the lineage of ``spark_catalog.db.t``. Lookups go to DuckDB in batches and are
cached for the life of one :class:`Aliases` object (one question, or the questions asked of an
unchanged store: :meth:`Aliases.bound`).
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable

import duckdb

from lineage_listener.query.lookups import indexed


def _strip(name: str) -> str:
    return name.rstrip("/") if "/" in name else name


class Aliases:
    """Canonical names and alias sets of datasets, looked up lazily.

    >>> a = Aliases(con)                                  # doctest: +SKIP
    >>> a.canonical("file:/wh/db.db/t")                   # doctest: +SKIP
    'spark_catalog.db.t'
    >>> sorted(a.names("spark_catalog.db.t"))             # doctest: +SKIP
    ['file:/wh/db.db/t', 'spark_catalog.db.t']
    """

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self._canonical: dict[str, str] = {}
        self._names: dict[str, set[str]] = {}

    def bound(self, con: duckdb.DuckDBPyConnection) -> "Aliases":
        """These aliases looking up what they do not know over ``con`` (another connection to the same,
        unchanged store): what either learns, both know.

        >>> a = Aliases(None)
        >>> a.learn(["file:/wh/t"], [("db.t", "file:/wh/t")])
        >>> b = a.bound(None)
        >>> b.learn(["x"], [])
        >>> b.canonical("file:/wh/t"), a.canonical("x")
        ('db.t', 'x')
        """
        other = Aliases(con)
        other._canonical, other._names = self._canonical, self._names
        return other

    def resolve(self, names: Iterable[str]) -> None:
        """Look up every not yet known name in one query."""
        todo = sorted({n for n in names if n is not None and n not in self._canonical})
        if todo:
            self.learn(todo, self._con.execute(alias_rows_sql("SELECT unnest($names)"), {"names": todo}).fetchall())

    def learn(self, names: Iterable[str], rows: Iterable[tuple[str, str]]) -> None:
        """Take in the not yet known ``names`` given the ``(dataset, location)`` rows
        :func:`alias_rows_sql` selects for them (or for more names): a caller's query may
        carry the lookup, instead of a query of its own.

        >>> a = Aliases(None)
        >>> a.learn(["file:/wh/t/", "b"], [("db.t", "file:/wh/t")])
        >>> a.canonical("file:/wh/t/"), sorted(a.names("db.t")), a.canonical("b")
        ('db.t', ['db.t', 'file:/wh/t', 'file:/wh/t/'], 'b')
        """
        todo = sorted({n for n in names if n is not None and n not in self._canonical})
        rows = sorted((dataset, _strip(location)) for dataset, location in rows)
        by_location: dict[str, str] = {}
        locations: dict[str, set[str]] = {}
        for dataset, location in rows:
            by_location.setdefault(location, dataset)
            locations.setdefault(dataset, set()).add(location)
        for name in todo:
            canon = by_location.get(_strip(name), name)
            self._canonical[name] = canon
            group = {canon} | locations.get(canon, set())
            # a path name read with a trailing slash is the same dataset
            group |= {loc + "/" for loc in locations.get(canon, set())}
            self._names.setdefault(canon, set()).update(group | {name})

    def learn_from_tables(self, names: Iterable[str], tables: Iterable[tuple[str, str]]) -> None:
        """Take in the not yet known ``names`` given every table's ``(dataset, location)`` row
        (:data:`TABLE_ROWS_SQL`, read once for many names), as :meth:`resolve` would from the rows its
        query selects for them (:func:`alias_rows_sql`).

        >>> a = Aliases(None)
        >>> a.learn_from_tables(["file:/wh/t/", "b"], [("db.t", "file:/wh/t"), ("db.u", "file:/wh/u")])
        >>> a.canonical("file:/wh/t/"), sorted(a.names("db.t")), a.canonical("b"), "db.u" in a._names
        ('db.t', ['db.t', 'file:/wh/t', 'file:/wh/t/'], 'b', False)
        """
        todo = sorted({n for n in names if n is not None and n not in self._canonical})
        wanted = set()
        for n in todo:
            s = _strip(n)
            wanted |= {n, s, s + "/"}
        self.learn(todo, {(d, loc) for d, loc in tables if d in wanted or ("/" in loc and loc in wanted)})

    def canonical(self, name: str) -> str:
        """The dataset's table name if ``name`` is a table's storage location, else ``name``."""
        if name not in self._canonical:
            self.resolve([name])
        return self._canonical[name]

    def names(self, canonical: str) -> set[str]:
        """Every name under which ``canonical`` may appear in ``column_lineage``."""
        if canonical not in self._names:
            self.resolve([canonical])
        return self._names.get(canonical, {canonical})


def alias_rows_sql(names: str) -> str:
    """SQL of the ``(dataset, location)`` rows of the tables that the names ``names`` (SQL of one
    column) select are, or are the storage location of (with or without trailing slashes): what
    :meth:`Aliases.learn` needs. A table's own row comes through the index on ``datasets``; a
    location only a name holding a '/' can be."""
    return f"""
        WITH v AS (SELECT DISTINCT unnest([n, s, s || '/']) AS v
                   FROM (SELECT n, CASE WHEN contains(n, '/') THEN rtrim(n, '/') ELSE n END AS s
                         FROM ({names}) AS q(n)))
        SELECT dataset, location FROM {indexed("datasets", "dataset", "SELECT v FROM v")}
        WHERE kind = 'table' AND location IS NOT NULL
        UNION
        SELECT dataset, location FROM datasets
        WHERE kind = 'table' AND location IN (SELECT v FROM v WHERE contains(v, '/'))"""


#: Every table's ``(dataset, location)`` row: what :meth:`Aliases.learn_from_tables` picks from.
TABLE_ROWS_SQL = "SELECT dataset, location FROM datasets WHERE kind = 'table' AND location IS NOT NULL"


def closest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """The known names nearest to ``name`` (difflib), best first.

    >>> closest("spark_catalog.db.ordrs", ["spark_catalog.db.orders", "x"])
    ['spark_catalog.db.orders']
    """
    pool = list(dict.fromkeys(candidates))
    found = difflib.get_close_matches(name, pool, n=n, cutoff=0.5)
    if not found:
        # a short name typed without its catalog/database prefix
        tail = name.rsplit(".", 1)[-1].rsplit("/", 1)[-1].lower()
        found = [c for c in pool if c.lower().endswith(tail)][:n]
    return found
