"""Declaring labels on a store: check every name first, then write all of it or nothing.

The CLI and the lineage server share these: names are checked against the store (an unknown
dataset or column raises :class:`~lineage_listener.query.store.UnknownNameError` with the
closest known names), labels against :func:`~lineage_listener.govern.patterns.check_label`,
and the rows are one :class:`~lineage_listener.store.batch.Batch`.

>>> store = "lineage.duckdb"                                                            # doctest: +SKIP
>>> set_labels(store, [("file:/data/raw/customers.csv", "email", "pii.email", None)], by="ann")  # doctest: +SKIP
True
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import duckdb

from lineage_listener.govern import classfile, labelstore
from lineage_listener.govern.patterns import check_label, parse_label
from lineage_listener.query.names import Aliases
from lineage_listener.query.store import open_store, resolve_column
from lineage_listener.store.batch import Batch
from lineage_listener.store.writer import StoreWriter

#: (dataset, column, label text, value): ``value`` None reads it from the label (``!pii``: False).
Request = tuple[str, str, str, bool | None]


def resolve(con: duckdb.DuckDBPyConnection, items: Iterable[Request]) -> list[tuple[str, str, str, bool]]:
    """Each request on the store's canonical names: ``(dataset, column, label, value)``."""
    aliases = Aliases(con)
    out = []
    for dataset, column, text, value in items:
        label, parsed = parse_label(text)
        node = resolve_column(con, aliases, dataset, column)
        out.append((node[0], node[1], label, parsed if value is None else (value and parsed)))
    return out


def resolve_unset(con: duckdb.DuckDBPyConnection, items: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    aliases = Aliases(con)
    out = []
    for dataset, column, text in items:
        node = resolve_column(con, aliases, dataset, column)
        out.append((node[0], node[1], check_label(text.lstrip("!"))))
    return out


def write(path: str | Path, batch: Batch) -> bool:
    """Write ``batch`` to the store at ``path``: True when written now, False when spooled beside it
    (the store was busy; the next write puts it in)."""
    return StoreWriter(path).write(batch)


def set_labels(path: str | Path, items: Iterable[Request], by: str | None = None) -> bool:
    """Declare labels (source ``set``) on the store at ``path``."""
    with open_store(path).connect() as con:
        resolved = resolve(con, items)
    return write(path, labelstore.set_batch(resolved, labelstore.who(by)))


def unset_labels(path: str | Path, items: Iterable[tuple[str, str, str]], by: str | None = None,
                 source: str = "set") -> bool:
    """Remove labels declared with ``source`` (``set``; ``spark``: one Spark's metadata no longer has)."""
    with open_store(path).connect() as con:
        resolved = resolve_unset(con, items)
    return write(path, labelstore.unset_batch(resolved, labelstore.who(by), source))


def load_file(path: str | Path, file: str | Path, by: str | None = None) -> tuple[classfile.Classifications, bool]:
    """Load a classifications file into the store (what it declared before and no longer does goes)."""
    with open_store(path).connect() as con:
        found = classfile.load(con, file)
    return found, write(path, labelstore.file_batch(found.origin, found.labels, found.masking_functions,
                                                 labelstore.who(by)))
