"""Declared classifications: the rows that set or remove them, and reading them back.

A label is *declared* on a column by a person (CLI ``classify set``, REST, the UI: source
``set``), by a classifications file (``file``) or by Spark's own metadata read at capture
(``spark``). Each keeps who set it and when. A column can hold a label with value false: a
review saying it does not carry it, which wins over a propagated label and over what a file or
Spark declares (``set`` outranks ``file``, which outranks ``spark``).

Writes are :class:`~lineage_listener.store.batch.Batch` rows, so they go through the store's
one door (the writer's transaction, its spool, a lineage server's queue):

>>> b = set_batch([("t", "email", "pii.email", True)], by="ann", source="set")
>>> [r[:6] for r in b.rows["column_labels"]]
[('t', 'email', 'pii.email', True, 'set', None)]
"""
from __future__ import annotations

import getpass
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import duckdb

from lineage_listener.query.names import Aliases
from lineage_listener.query.within import dataset_sql
from lineage_listener.timewindow import utcnow
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import LabelFile, LabelRow, LabelUnset, MaskingFunctionRow

log = logging.getLogger(__name__)

Node = tuple[str, str]

#: Which declaration wins on one column and label: a person's, then a file's, then Spark's.
SOURCE_RANK = {"set": 0, "file": 1, "spark": 2}


@dataclass(frozen=True)
class Declared:
    """One declared label of a column."""

    label: str
    value: bool
    source: str                 # set | file | spark
    origin: str | None
    set_by: str | None
    set_at: datetime | None


def who(by: str | None = None) -> str:
    """``by`` when given, else the OS user running this process."""
    if by:
        return by
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return os.environ.get("USER") or "unknown"


def set_batch(labels: Iterable[tuple[str, str, str, bool]], by: str, source: str = "set",
              origin: str | None = None) -> Batch:
    """Rows setting each ``(dataset, column, label, value)``."""
    now = utcnow().isoformat()
    batch = Batch()
    for dataset, column, label, value in labels:
        batch.add(LabelRow(dataset=dataset, column_name=column, label=label, value=bool(value), source=source,
                           origin=origin, set_by=by, set_at=now))
    return batch


def unset_batch(labels: Iterable[tuple[str, str, str]], by: str, source: str = "set") -> Batch:
    """Rows removing each ``(dataset, column, label)`` of ``source``."""
    now = utcnow().isoformat()
    batch = Batch()
    for dataset, column, label in labels:
        batch.add(LabelUnset(dataset=dataset, column_name=column, label=label, source=source, changed_by=by,
                             changed_at=now))
    return batch


def file_batch(origin: str, labels: Iterable[tuple[str, str, str, bool]], functions: Iterable[str],
               by: str) -> Batch:
    """A classifications file's whole declaration: what it declared before and no longer does goes."""
    batch = set_batch(labels, by, source="file", origin=origin)
    now = utcnow().isoformat()
    batch.add(LabelFile(origin=origin, changed_by=by, changed_at=now))
    for name in sorted(set(functions)):
        batch.add(MaskingFunctionRow(name=name, origin=origin, added_at=now))
    return batch


def _table_exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether the store has ``table`` (a store from before classifications has none of them)."""
    return bool(con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [table]).fetchone()[0])


def declared(con: duckdb.DuckDBPyConnection, aliases: Aliases | None = None,
             datasets: Iterable[str] | None = None) -> dict[Node, list[Declared]]:
    """Every declared label per column (canonical dataset names), best source first; only those of
    ``datasets`` (canonical names) when given. A store from before classifications has none."""
    if not _table_exists(con, "column_labels"):
        return {}
    aliases = aliases or Aliases(con)
    sql = "SELECT dataset, column_name, label, value, source, origin, set_by, set_at FROM column_labels"
    params: dict = {}
    if datasets is not None:
        names = sorted({n for d in datasets for n in aliases.names(d)})
        sql += " WHERE dataset IN (SELECT unnest($n))"
        params["n"] = names
    rows = con.execute(sql, params).fetchall()
    aliases.resolve(r[0] for r in rows)
    out: dict[Node, list[Declared]] = {}
    for dataset, column, label, value, source, origin, set_by, set_at in rows:
        out.setdefault((aliases.canonical(dataset), column), []).append(
            Declared(label, bool(value), source, origin, set_by, set_at))
    for items in out.values():
        items.sort(key=lambda d: (SOURCE_RANK.get(d.source, 9), d.label))
    return out


def known_labels(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The labels some column is declared to carry (a review saying a column does not is no carrier)."""
    if not _table_exists(con, "column_labels"):
        return set()
    return {r[0] for r in con.execute("SELECT DISTINCT label FROM column_labels WHERE value").fetchall()}


def effective(items: list[Declared]) -> dict[str, Declared]:
    """Per label, the declaration that counts (the best-ranked source)."""
    out: dict[str, Declared] = {}
    for d in sorted(items, key=lambda d: SOURCE_RANK.get(d.source, 9)):
        out.setdefault(d.label, d)
    return out


def masking_functions(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """Functions the store's classifications files declared as masking."""
    if not _table_exists(con, "masking_functions"):
        return frozenset()
    return frozenset(r[0] for r in con.execute("SELECT name FROM masking_functions").fetchall())


def history(con: duckdb.DuckDBPyConnection, dataset: str | None = None, column: str | None = None,
            limit: int = 200, within: str | None = None) -> list[dict]:
    """The latest changes of declared labels (of one column when given), newest first; ``within``: of the
    datasets a reader may read only (:mod:`lineage_listener.query.within`)."""
    if not _table_exists(con, "label_changes"):
        return []
    readable = dataset_sql("dataset") if within is not None else "TRUE"
    rows = con.execute(
        f"""SELECT changed_at, action, dataset, column_name, label, value, source, origin, changed_by
            FROM label_changes WHERE ($d IS NULL OR dataset = $d) AND ($c IS NULL OR column_name = $c)
              AND {readable}
            ORDER BY changed_at DESC LIMIT $l""",
        {"d": dataset, "c": column, "l": limit, **({"within": within} if within is not None else {})}).fetchall()
    keys = ("changed_at", "action", "dataset", "column", "label", "value", "source", "origin", "changed_by")
    return [dict(zip(keys, r)) for r in rows]
