"""Create the store's tables, views and macros; migrate older stores in place.

``schema.sql`` and ``views.sql`` are the schema (and its documentation). A store
records the version it was written at in ``schema_version``; opening it:

- at this version: one statement checks that, nothing else runs;
- older, or with no version recorded: missing tables come from the DDL
  (``CREATE ... IF NOT EXISTS``), missing columns are added (types read from the
  DDL applied to an in-memory database), a ``column_lineage`` that is a table of
  one row per edge per capture is stored once per edge and set
  (:func:`move_edges`), the version row is written;
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

import time
from functools import lru_cache
from importlib import resources

import duckdb

from lineage_listener import redact
from lineage_listener.store.captures import LIST_SETS
from lineage_listener.store.edge_ids import EDGE_COLUMNS, EDGE_ID_SQL, SET_ID_SQL

log = redact.logger(__name__)

#: SQL files applied in order on every connection that writes the store.
SCHEMA_FILES = ("schema.sql", "views.sql")

#: Bump when schema.sql or views.sql change; older stores are migrated to it on first write.
SCHEMA_VERSION = 13

_VERSION_DDL = """
-- The schema version the store was written at: a row per version that created or migrated it.
CREATE TABLE IF NOT EXISTS schema_version (
    version    INTEGER,               -- the highest is the store's version
    applied_at TIMESTAMP DEFAULT current_timestamp,
    by_package TEXT                   -- lineage-listener
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
    """The version recorded in the store; None when it has no ``schema_version`` (new, or it records none)."""
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
    con.execute("SET enable_progress_bar = false")  # no bar in a job's output; big moves log their steps
    old_edges = _set_aside_edge_table(con)
    con.execute("BEGIN TRANSACTION")
    try:
        _add_missing_columns(con)
        con.execute(schema_sql())
        if old_edges:
            move_edges(con, old_edges)
        con.execute(_VERSION_DDL)
        con.execute("INSERT INTO schema_version (version, by_package) VALUES (?, 'lineage-listener')",
                    [SCHEMA_VERSION])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        if old_edges:  # as it was: readers of the old version find their table
            con.execute(f"ALTER TABLE {old_edges} RENAME TO column_lineage")
        raise
    return "migrated" if had_tables else "created"


def _set_aside_edge_table(con: duckdb.DuckDBPyConnection) -> str | None:
    """A ``column_lineage`` that is a table (one row per edge per capture, where the schema has a
    view of that name) is renamed to :data:`_ASIDE`, committed on its own (DuckDB binds some
    filters on a table renamed in the same transaction by its old name), so the view can be
    created. The name of the table whose edges are to be moved (also one an interrupted move
    left), or None."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                        "WHERE table_type = 'BASE TABLE'").fetchall()}
    if _ASIDE in tables:
        return _ASIDE
    if "column_lineage" not in tables:
        return None
    con.execute("BEGIN TRANSACTION")
    con.execute("DROP INDEX IF EXISTS column_lineage_target")
    con.execute("DROP INDEX IF EXISTS column_lineage_source")
    con.execute(f"ALTER TABLE column_lineage RENAME TO {_ASIDE}")
    con.execute("COMMIT")
    return _ASIDE


#: Where a ``column_lineage`` table waits while its edges are moved (:func:`move_edges`).
_ASIDE = "column_lineage_before_v6"


#: Rows moved per step when an old store's edges are stored once (a progress line per step).
MOVE_STEP_ROWS = 5_000_000


def move_edges(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Store the rows of a ``column_lineage`` table (one per edge per capture) once per edge and
    set (as the writer would have), keeping each query's edges at the time it first had them;
    drop the table.

    Done in steps of whole queries (by a hash of the query id), each logged for a big store.
    """
    total = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    steps = max(1, -(-total // MOVE_STEP_ROWS))
    cols = ", ".join(EDGE_COLUMNS)
    started = time.monotonic()
    if total > MOVE_STEP_ROWS:
        log.warning("lineage-listener: storing the %d edge rows of %s once per edge (store schema 6), "
                    "in %d steps", total, _db_name(con), steps)
    for step in range(steps):
        con.execute(f"""CREATE OR REPLACE TEMP TABLE _move AS
            SELECT coalesce(query_id, '') AS query_id, run_id, captured_at, {EDGE_ID_SQL.format(p="")} AS edge_id,
                   {cols}
            FROM {table} WHERE hash(coalesce(query_id, '')) % {steps} = {step}""")
        con.execute(f"""INSERT INTO edges (edge_id, {cols})
                        SELECT edge_id, {", ".join(f"any_value({c})" for c in EDGE_COLUMNS)} FROM _move
                        WHERE edge_id NOT IN (SELECT edge_id FROM edges) GROUP BY edge_id""")
        # Each (query, edge) once, at its first capture (as the writer keeps it).
        con.execute("""CREATE OR REPLACE TEMP TABLE _first AS
            SELECT query_id, edge_id, min(captured_at) AS captured_at, arg_min(run_id, captured_at) AS run_id
            FROM _move GROUP BY query_id, edge_id""")
        con.execute(f"""CREATE OR REPLACE TEMP TABLE _groups AS
            SELECT query_id, run_id, captured_at, {SET_ID_SQL} AS set_id
            FROM _first GROUP BY query_id, run_id, captured_at""")
        con.execute("""INSERT INTO edge_sets
            SELECT DISTINCT g.set_id, f.edge_id FROM _first f JOIN _groups g
              ON g.query_id = f.query_id AND g.run_id IS NOT DISTINCT FROM f.run_id
             AND g.captured_at IS NOT DISTINCT FROM f.captured_at
            WHERE g.set_id NOT IN (SELECT set_id FROM edge_sets)""")
        con.execute("INSERT INTO edge_captures SELECT query_id, run_id, set_id, captured_at, 1 FROM _groups")
        if total > MOVE_STEP_ROWS:
            log.warning("lineage-listener: schema 6: step %d of %d done (%.0f s)", step + 1, steps,
                        time.monotonic() - started)
    con.execute(LIST_SETS.format(members="edge_sets"))
    for temp in ("_move", "_first", "_groups"):
        con.execute(f"DROP TABLE IF EXISTS {temp}")
    con.execute(f"DROP TABLE {table}")


def _db_name(con: duckdb.DuckDBPyConnection) -> str:
    row = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return row[0] if row and row[0] else "the store"


def _add_missing_columns(con: duckdb.DuckDBPyConnection) -> None:
    present: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns").fetchall():
        present.setdefault(table, set()).add(column)
    if not present:  # a new store: the DDL creates every table (no in-memory copy of the schema to read)
        return
    for table, columns in expected_columns().items():
        if table not in present:
            continue  # created by the DDL
        for column, dtype in columns:
            if column not in present[table]:
                con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{column}" {dtype}')
