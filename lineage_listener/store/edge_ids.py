"""Stable ids for edges and sets of edges: the first 8 bytes of an MD5 digest.

The same digest is computed in Python (the writer) and in SQL (the migration of
stores written before edges were stored once), so both must agree:

>>> edge_id(("t", "a", "s", "a", "identity", "direct", "a", False))
12312366324238408143
>>> import duckdb
>>> duckdb.connect().execute("SELECT " + EDGE_ID_SQL.format(p="") + " FROM (SELECT 't' AS target_dataset, 'a' AS target_column, "
...            "'s' AS source_dataset, 'a' AS source_column, 'identity' AS transform, 'direct' AS kind, "
...            "'a' AS expression, false AS masking)").fetchone()[0]
12312366324238408143
>>> set_id([3, 1, 2]) == set_id([1, 2, 3])
True
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

#: What makes an edge: every column of ``column_lineage`` but the capture's query, run and time.
EDGE_COLUMNS = ("target_dataset", "target_column", "source_dataset", "source_column", "transform", "kind",
                "expression", "masking")

_SEP, _NULL = "\x1f", "\x00"


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:8], "big")


def _text(value: Any) -> str:
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


#: What the digest of a guessed edge ends with (an edge read from the code keeps the id it always had).
GUESS = _SEP + "guess"


def edge_id(values: Iterable[Any], guess: bool = False) -> int:
    """The id of the edge with these :data:`EDGE_COLUMNS` values; a guessed edge (``guess``) is
    another edge than the same one read from the code.

    >>> edge_id(("t", "a", "s", "a", "derived", "direct", "f(a)", False), guess=True) != \\
    ...     edge_id(("t", "a", "s", "a", "derived", "direct", "f(a)", False))
    True
    """
    return _digest(_SEP.join(v if v.__class__ is str else _text(v) for v in values) + (GUESS if guess else ""))


def set_id(edge_ids: Iterable[int]) -> int:
    """The id of a set of edges (order and repeats do not matter)."""
    return _digest(",".join(str(i) for i in sorted(set(edge_ids))))


#: :func:`edge_id` in DuckDB SQL over the columns of a relation (``{p}``: a column prefix such as ``l.``)
#: holding no guessed edge (edges stored before the ``guess`` column, a diff's sides).
EDGE_ID_SQL = ("CAST('0x' || left(md5(concat_ws(chr(31), "
               + ", ".join(f"coalesce(CAST({{p}}{c} AS TEXT), chr(0))" for c in EDGE_COLUMNS)
               + ")), 16) AS UBIGINT)")

#: :func:`set_id` in DuckDB SQL, an aggregate over distinct ``edge_id`` values.
SET_ID_SQL = "CAST('0x' || left(md5(string_agg(CAST(edge_id AS TEXT), ',' ORDER BY edge_id)), 16) AS UBIGINT)"
