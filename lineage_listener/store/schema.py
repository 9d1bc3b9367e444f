"""Create the store's tables, views and macros; migrate older stores in place.

``schema.sql`` and ``views.sql`` are the schema (and its documentation). A store
records the version it was written at in ``schema_version``; opening it:

- at this version: one statement checks that, nothing else runs;
- older, or from before versions were recorded: missing tables come from the DDL
  (``CREATE ... IF NOT EXISTS``), missing columns are added (types read from the
  DDL applied to an in-memory database), the version row is written;
- newer: :class:`NewerStoreError`, the store is left untouched.

>>> import duckdb
>>> con = duckdb.connect()
>>> ensure_schema(con)
'created'
>>> ensure_schema(con)
'current'
>>> con.execute("DELETE FROM schema_version; ALTER TABLE queries DROP COLUMN target_dataset")  # doctest: +ELLIPSIS
<...>
>>> ensure_schema(con)
'migrated'
>>> 'target_dataset' in [r[0] for r in con.execute("DESCRIBE queries").fetchall()]
True
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

import duckdb

#: SQL files applied in order on every connection that writes the store.
SCHEMA_FILES = ("schema.sql", "views.sql")

#: Bump when schema.sql or views.sql change; older stores are migrated to it on first write.
SCHEMA_VERSION = 5  # 4: streams; 5: dataset_columns.ordinal

_VERSION_DDL = """
CREATE TABLE IF NOT EXISTS schema_version (
    version    INTEGER,
    applied_at TIMESTAMP DEFAULT current_timestamp,
    by_package TEXT
);
"""


class NewerStoreError(Exception):
    """The store was written by a newer lineage-listener: this version must not change it."""


@lru_cache(maxsize=1)
def schema_sql() -> str:
    """The full DDL of the store, as one SQL script."""
    parts = []
    for name in SCHEMA_FILES:
        path = resources.files("lineage_listener.store").joinpath(name)
        if path.is_file():
            parts.append(path.read_text(encoding="utf-8"))
    return "\n".join(parts)


@lru_cache(maxsize=1)
def expected_columns() -> dict[str, list[tuple[str, str]]]:
    """Each base table's (column, type), from the DDL applied to an in-memory database."""
    mem = duckdb.connect()
    try:
        mem.execute(schema_sql())
        rows = mem.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                           "JOIN information_schema.tables USING (table_catalog, table_schema, table_name) "
                           "WHERE table_type = 'BASE TABLE' ORDER BY table_name, ordinal_position").fetchall()
    finally:
        mem.close()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, dtype in rows:
        out.setdefault(table, []).append((column, dtype))
    return out


def store_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The version recorded in the store; None when it has no ``schema_version`` (new or pre-versioning)."""
    try:
        return con.execute("SELECT max(version) FROM schema_version").fetchone()[0]
    except duckdb.CatalogException:
        return None


def ensure_schema(con: duckdb.DuckDBPyConnection) -> str:
    """Bring ``con``'s store to :data:`SCHEMA_VERSION`: 'current', 'created' or 'migrated'.

    Raises :class:`NewerStoreError` for a store from a newer version.
    """
    version = store_version(con)
    if version == SCHEMA_VERSION:
        return "current"
    if version is not None and version > SCHEMA_VERSION:
        raise NewerStoreError(f"store schema version {version} is newer than this lineage-listener's "
                              f"({SCHEMA_VERSION}): upgrade lineage-listener to write to it")
    had_tables = con.execute("SELECT count(*) FROM information_schema.tables "
                             "WHERE table_name IN ('queries', 'column_lineage')").fetchone()[0] > 0
    con.execute("BEGIN TRANSACTION")
    try:
        _add_missing_columns(con)
        con.execute(schema_sql())
        con.execute(_VERSION_DDL)
        con.execute("INSERT INTO schema_version (version, by_package) VALUES (?, 'lineage-listener')",
                    [SCHEMA_VERSION])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return "migrated" if had_tables else "created"


def _add_missing_columns(con: duckdb.DuckDBPyConnection) -> None:
    present: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns").fetchall():
        present.setdefault(table, set()).add(column)
    for table, columns in expected_columns().items():
        if table not in present:
            continue  # created by the DDL
        for column, dtype in columns:
            if column not in present[table]:
                con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{column}" {dtype}')
