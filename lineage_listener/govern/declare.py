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

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import duckdb

from lineage_listener.govern import labelfile, labelstore
from lineage_listener.govern.patterns import check_label, parse_label
from lineage_listener.query.names import Aliases
from lineage_listener.query.store import open_store, resolve_column
from lineage_listener.store.batch import Batch
from lineage_listener.store.writer import StoreWriter
from lineage_listener.store.writer import __name__ as writer_log

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


class NotDeclared(ValueError):
    """A label to remove that the column does not have (from that source); the message says what it has."""


def resolve_unset(con: duckdb.DuckDBPyConnection, items: Iterable[tuple[str, str, str]],
                  source: str = "set") -> list[tuple[str, str, str]]:
    """Each removal on the store's canonical names, or :class:`NotDeclared` for a label the column
    does not have from ``source``."""
    aliases = Aliases(con)
    declared = labelstore.declared(con, aliases)
    out = []
    for dataset, column, text in items:
        node = resolve_column(con, aliases, dataset, column)
        label = check_label(text.lstrip("!"))
        has = [d for d in declared.get(node, []) if d.source == source]
        if not any(d.label == label for d in has):
            what = ", ".join(sorted({("" if d.value else "!") + d.label for d in has})) or "none"
            raise NotDeclared(f"{node[0]} [{node[1]}] has no label {label!r} declared by {source} "
                              f"(declared by {source}: {what}): nothing to unset")
        out.append((node[0], node[1], label))
    return out


class Written(NamedTuple):
    """Whether a declaration reached the store now (true), and if not, why and the spool file it
    waits in (None: held nowhere; the next write puts what was spooled in)."""

    ok: bool
    reason: str | None = None
    spooled: Path | None = None

    def __bool__(self) -> bool:
        return self.ok


def write(path: str | Path, batch: Batch) -> Written:
    """Write ``batch`` to the store at ``path``: written now, or spooled (the store was busy or not
    writable; the next write puts it in)."""
    writer = StoreWriter(path)
    said = logging.getLogger(writer_log)
    level = said.level
    said.setLevel(logging.ERROR)   # the caller says why and where in its own words (capture's are about jobs)
    try:
        written = writer.write(batch)
    finally:
        said.setLevel(level)
    if written:
        return Written(True)
    reason, spooled = writer.parked or ("not written", None)
    return Written(False, reason, spooled)


def set_labels(path: str | Path, items: Iterable[Request], by: str | None = None) -> Written:
    """Declare labels (source ``set``) on the store at ``path``."""
    with open_store(path).connect() as con:
        resolved = resolve(con, items)
    return write(path, labelstore.set_batch(resolved, labelstore.who(by)))


def unset_labels(path: str | Path, items: Iterable[tuple[str, str, str]], by: str | None = None,
                 source: str = "set") -> Written:
    """Remove labels declared with ``source`` (``set``; ``spark``: one Spark's metadata no longer has)."""
    with open_store(path).connect() as con:
        resolved = resolve_unset(con, items, source)
    return write(path, labelstore.unset_batch(resolved, labelstore.who(by), source))


def load_file(path: str | Path, file: str | Path, by: str | None = None,
              strict: bool = False) -> tuple[labelfile.Classifications, Written]:
    """Load a classifications file into the store (what it declared before and no longer does goes).
    An entry or column that matches nothing of the store is in ``skipped`` (``strict``:
    :class:`~lineage_listener.govern.labelfile.ClassificationsError`, nothing loaded)."""
    with open_store(path).connect() as con:
        found = labelfile.load(con, file, strict=strict)
    return found, write(path, labelstore.file_batch(found.origin, found.labels, found.masking_functions,
                                                 labelstore.who(by)))
