"""Search over dataset and column names, best matches first: exact, prefix, substring, then fuzzy.

Case-insensitive. A name matches ``q`` *exactly* when it, or its last part (a table's name, a file's
name), is ``q``; by *prefix* when it or its last part starts with ``q``; as a *substring* when it holds
``q``; *fuzzily* when each word of ``q`` (runs of letters: ``custmer_id`` is ``custmer`` and ``id``) is,
or starts, one of its words within :func:`typos` edits of that word, and all of ``q``'s edits together
are within :func:`typos` of ``q`` (DuckDB's ``damerau_levenshtein``: a swap of two neighbouring letters
counts one).

>>> import duckdb
>>> from lineage_listener.store.schema import ensure_schema
>>> con = duckdb.connect()
>>> _ = ensure_schema(con)
>>> _ = con.execute("INSERT INTO datasets (dataset) VALUES ('spark_catalog.shop.customers'), ('file:/data/custom.csv')")
>>> [(d["dataset"], d["match"]) for d in search(con, "custmer")["datasets"]]
[('spark_catalog.shop.customers', 'fuzzy')]
>>> [(d["dataset"], d["match"]) for d in search(con, "custom")["datasets"]]
[('file:/data/custom.csv', 'prefix'), ('spark_catalog.shop.customers', 'prefix')]
>>> [(d["dataset"], d["match"]) for d in search(con, "shop_custmers")["datasets"]]
[('spark_catalog.shop.customers', 'fuzzy')]
"""
from __future__ import annotations

import re
import threading
from typing import Any

import duckdb

from lineage_listener.query.within import dataset_sql

#: How a name matched, best first (``match`` in each hit).
MATCHES = ("exact", "prefix", "substring", "fuzzy")

#: Per kind of name: its rows (``key``; ``n``: the name lowered) and its last part (``short``: a
#: table's or file's own name, a nested field's own name).
DATASET_NAMES = "SELECT dataset AS key, lower(dataset) AS n FROM datasets"
DATASET_SHORT = "CASE WHEN contains(n, '/') THEN regexp_extract(n, '[^/]*$') ELSE regexp_extract(n, '[^.]*$') END"
COLUMN_NAMES = "SELECT key, lower(key) AS n FROM (SELECT DISTINCT column_name AS key FROM dataset_columns)"
COLUMN_SHORT = "regexp_extract(n, '[^.]*$')"
#: The words to try fuzzily against ``q``'s words: of the column names not holding ``$q`` (few distinct
#: ones), or given (``$words``, from :func:`dataset_words`) for dataset names.
COLUMN_WORDS = "SELECT DISTINCT unnest(regexp_extract_all(n, '[a-z]+')) AS word FROM names WHERE NOT contains(n, $q)"
GIVEN_WORDS = "SELECT unnest($words) AS word"


def typos(q: str) -> int:
    """How many edits a fuzzy match may be from ``q``: none for fewer than 4 characters or with a digit
    (``t7995`` is not a typo of ``t7996``), 1 up to 6 characters, 2 from 7.

    >>> [typos(q) for q in ("id", "mail", "custmer", "db35")]
    [0, 1, 2, 0]
    """
    if len(q) < 4 or any(ch.isdigit() for ch in q):
        return 0
    return 1 if len(q) < 7 else 2


def _matches(names: str, short: str, words: str | None) -> str:
    """SQL (CTEs) ranking the rows of ``names`` against ``$q``: ``hits`` holds ``key``, ``rank`` (the index
    in MATCHES) and, for fuzzy hits, ``distance`` (edits). Every exact, prefix or substring match holds
    ``$q``, so only those rows are ranked further; ``short``: a row's last part. ``words``: the distinct
    words to try against each of ``q``'s words (``$qwords``, each with its own budget ``$qk``; all of them
    ``$k`` together) for the other rows (None: no fuzzy matching, ``typos`` is 0; else the names are read
    once for the three uses)."""
    ranked = f"""names AS {"" if words is None else "MATERIALIZED "}({names}),
        holding AS (SELECT key, n, {short} AS short FROM names WHERE contains(n, $q)),
        ranked AS (SELECT key, CASE WHEN n = $q OR short = $q THEN 0
                                    WHEN starts_with(short, $q) OR starts_with(n, $q) THEN 1 ELSE 2 END AS rank,
                          0 AS distance FROM holding)"""
    if words is None:
        return f"{ranked}, hits AS (SELECT * FROM ranked)"
    return f"""{ranked},
        words AS ({words}),
        asked AS (SELECT unnest($qwords) AS qword, unnest($qk) AS k, unnest(range(len($qwords))) AS i),
        near AS (SELECT i, word, distance FROM (
                     SELECT a.i, a.k, w.word, least(damerau_levenshtein(w.word, a.qword),
                                                    damerau_levenshtein(left(w.word, length(a.qword)), a.qword)) AS distance
                     FROM words w, asked a WHERE length(w.word) >= length(a.qword) - a.k)
                 WHERE distance <= k),
        each AS (SELECT r.key, x.i, min(x.distance) AS distance FROM names r JOIN near x ON contains(r.n, x.word)
                 WHERE NOT contains(r.n, $q) AND list_contains(regexp_extract_all(r.n, '[a-z]+'), x.word)
                 GROUP BY r.key, x.i),
        fuzzy AS (SELECT key, 3 AS rank, sum(distance) AS distance FROM each GROUP BY key
                  HAVING count(*) = len($qwords) AND sum(distance) <= $k),
        hits AS (SELECT * FROM ranked UNION ALL SELECT * FROM fuzzy)"""


_words: dict[str, tuple[tuple, list[str]]] = {}
_words_lock = threading.Lock()


def dataset_words(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The distinct words (runs of letters) of every dataset name, kept per store until its datasets
    change: splitting 90,000 names again for every keystroke would be most of a fuzzy search's time."""
    path = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    key = (path[0] if path else None) or ":memory:"
    stamp = con.execute("SELECT count(*), bit_xor(hash(dataset)) FROM datasets").fetchone()
    with _words_lock:
        known = _words.get(key)
        if known and known[0] == stamp:
            return known[1]
    words = [w for (w,) in con.execute(
        "SELECT DISTINCT unnest(regexp_extract_all(lower(dataset), '[a-z]+')) FROM datasets").fetchall()]
    with _words_lock:
        _words[key] = (stamp, words)
    return words


def _hits(con: duckdb.DuckDBPyConnection, sql: str, count_sql: str, p: dict[str, Any]) -> tuple[list[dict], int]:
    """The page of hits ``sql`` selects (with ``rank`` and ``count(*) OVER () AS total``) and the total;
    ``count_sql`` counts them when the page is past the end."""
    cur = con.execute(sql, p)
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r)) for r in cur.fetchall()]
    if rows:
        total = rows[0]["total"]
    else:
        total = 0 if p["offset"] == 0 else con.execute(count_sql, {k: p[k] for k in ("q", "k", "qwords", "qk", "words",
                                                                                  "within") if k in p}).fetchone()[0]
    for r in rows:
        r["match"] = MATCHES[r.pop("rank")]
        del r["total"]
    return rows, total


def search(con: duckdb.DuckDBPyConnection, q: str, what: str = "all", offset: int = 0, limit: int = 20,
           within: str | None = None) -> dict:
    """Datasets and columns matching ``q``, each list paged by ``offset``/``limit`` with its total and each
    hit's ``match``. Among equal matches (and fewer typos), datasets most recently seen come first, columns
    by name then dataset; an empty ``q`` lists everything. ``within``: among the datasets a reader may
    read only (:mod:`lineage_listener.query.within`)."""
    text = q.strip().lower()
    k = typos(text)
    qwords = re.findall("[a-z]+", text)
    if not qwords:
        k = 0
    p: dict[str, Any] = {"q": text, "limit": limit, "offset": offset,
                         **({"k": k, "qwords": qwords, "qk": [min(k, typos(w)) for w in qwords]} if k else {})}
    if within is not None:
        p["within"] = within
    out: dict[str, Any] = {"q": q, "offset": offset, "limit": limit}
    dataset_names, column_names = DATASET_NAMES, COLUMN_NAMES
    if within is not None:
        dataset_names = f"{DATASET_NAMES} WHERE {dataset_sql('dataset')}"
        column_names = (f"SELECT key, lower(key) AS n FROM (SELECT DISTINCT column_name AS key FROM dataset_columns "
                        f"WHERE {dataset_sql('dataset')})")
    if what in ("all", "datasets"):
        dp = {**p, "words": dataset_words(con)} if k else p
        order = "h.rank, h.distance, d.last_seen DESC NULLS LAST, d.dataset"
        matches = _matches(dataset_names, DATASET_SHORT, GIVEN_WORDS if k else None)
        out["datasets"], out["datasets_total"] = _hits(con, f"""WITH {matches},
            page AS (SELECT h.key, h.rank, h.distance, count(*) OVER () AS total
                     FROM hits h JOIN datasets d ON d.dataset = h.key ORDER BY {order} LIMIT $limit OFFSET $offset)
            SELECT d.dataset, d.kind, d.format, d.last_seen,
                   (SELECT count(*) FROM dataset_columns c WHERE c.dataset = d.dataset) AS columns, h.rank, h.total
            FROM page h JOIN datasets d ON d.dataset = h.key ORDER BY {order}""",
            f"WITH {matches} SELECT count(*) FROM hits", dp)
    if what in ("all", "columns"):
        matches = _matches(column_names, COLUMN_SHORT, COLUMN_WORDS if k else None)
        readable = f"WHERE {dataset_sql('c.dataset')}" if within is not None else ""
        out["columns"], out["columns_total"] = _hits(con, f"""WITH {matches}
            SELECT c.dataset, c.column_name AS column, c.data_type AS type, h.rank, count(*) OVER () AS total
            FROM hits h JOIN dataset_columns c ON c.column_name = h.key {readable}
            ORDER BY h.rank, h.distance, lower(c.column_name), c.column_name, c.dataset LIMIT $limit OFFSET $offset""",
            f"WITH {matches} SELECT count(*) FROM hits h JOIN dataset_columns c ON c.column_name = h.key {readable}", p)
    return out
