"""Create the store's tables, views and macros (idempotent)."""
from __future__ import annotations

from importlib import resources

import duckdb

#: SQL files applied in order on every connection that writes or reads the store.
SCHEMA_FILES = ("schema.sql", "views.sql")


def schema_sql() -> str:
    """The full DDL of the store, as one SQL script."""
    parts = []
    for name in SCHEMA_FILES:
        path = resources.files("lineage_listener.store").joinpath(name)
        if path.is_file():
            parts.append(path.read_text(encoding="utf-8"))
    return "\n".join(parts)


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Apply the store DDL to ``con``; safe to call on every open."""
    con.execute(schema_sql())
