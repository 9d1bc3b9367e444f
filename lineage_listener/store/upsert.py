"""Writing one batch into the store's tables, in a transaction its caller owns: the one write path of
every writer (capture's :class:`~lineage_listener.store.writer.StoreWriter`, the server's
:class:`~lineage_listener.store.group_writer.GroupWriter`, spool ingest).

Each table's rows go in column-wise, as an upsert by the row type's ``KEY`` and ``MERGE``
(:mod:`~lineage_listener.store.rows`): one statement with a key's rows collapsed by its ``COLLAPSE``, or
one statement per round; edges go through
:mod:`~lineage_listener.store.captures`, label rows through :mod:`~lineage_listener.store.labels`,
and the writer's instructions (``RunReopened``, ``QueryStarted``, ``Retarget``) by their type.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import duckdb

from lineage_listener.store import captures, labels, retarget
from lineage_listener.store.batch import Batch
from lineage_listener.store.connection import transaction
from lineage_listener.store.rows import (INSTRUCTIONS, LABEL_ROWS, TABLES, EdgeRow, QueryStarted, Retarget,
                                         RunReopened, RunRow, StreamRow, typed)


def _one_row_per_stream(rows: list[StreamRow]) -> list[StreamRow]:
    """One row per stream plan from its micro-batches' rows: batch range and count (ids seen once)."""
    out: dict[str, StreamRow] = {}
    seen: dict[str, set] = {}
    for r in rows:
        ids = seen.setdefault(r.query_id, set())
        new = r.first_batch_id not in ids and r.last_batch_id not in ids
        ids.update((r.first_batch_id, r.last_batch_id))
        old = out.get(r.query_id)
        if old is None:
            out[r.query_id] = r
            continue
        out[r.query_id] = r._replace(first_batch_id=min(old.first_batch_id, r.first_batch_id),
                                     last_batch_id=max(old.last_batch_id, r.last_batch_id),
                                     first_batch_at=min(old.first_batch_at, r.first_batch_at),
                                     last_batch_at=max(old.last_batch_at, r.last_batch_at),
                                     batch_count=old.batch_count + (r.batch_count if new else 0))
    return list(out.values())


def _typed(cls: Any, rows: list[tuple]) -> list[Any]:
    """Rows of type ``cls``: a plain tuple (put into a batch's rows directly) becomes one, shorter
    ones (spooled or sent by an older version) get nulls; a stream's micro-batch rows become one
    row per stream plan."""
    rows = typed(cls, rows)
    return _one_row_per_stream(rows) if cls is StreamRow else rows


def _rounds(cls: Any, rows: list[tuple]) -> list[list[tuple]]:
    """Upsert rows in rounds that touch each key once (one statement may not touch a row twice):
    the n-th row of a key goes in round n, so the table's merge rule (the row type's ``MERGE``) joins a
    key's rows in their order, exactly as if they had come in separate batches (``first_seen`` stays the
    earliest of the batch, a null never clears a value given earlier in it).

    >>> [[r[1] for r in part] for part in _rounds(RunRow, [("a", 1), ("b", 2), ("a", 3), ("a", 4)])]
    [[1, 2], [3], [4]]
    """
    if not cls.KEY or cls is StreamRow:
        return [rows] if rows else []
    idx = [cls._fields.index(k) for k in cls.KEY]
    rounds: list[list[tuple]] = []
    seen: dict[tuple, int] = {}
    for r in rows:
        key = tuple(r[i] for i in idx)
        n = seen.get(key, 0)
        seen[key] = n + 1
        if n == len(rounds):
            rounds.append([])
        rounds[n].append(r)
    return rounds


_TYPES: dict[str, dict[str, str]] = {}


def _column_types(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """SQL types of ``table``'s columns, read once per process (the schema is fixed per version)."""
    if table not in _TYPES:
        _TYPES[table] = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                         "WHERE table_name = ?", [table]).fetchall())
    return _TYPES[table]


def write_batch(con: duckdb.DuckDBPyConnection, batch: Batch) -> int:
    """Write ``batch`` in the transaction its caller owns (:func:`commit_batch` for one of its own);
    the number of new edges.

    Idempotent: writing a batch twice adds no edge twice. Edges a query already has in
    the store are skipped, so a replayed batch adds nothing and later events of a run
    add what they newly carry (:mod:`~lineage_listener.store.captures`).
    """
    retargeted = retarget.in_batch(batch.rows)  # a CTAS's edges renamed to its table when its inner write is here
    new_edges = 0
    _reopen(con, retargeted.get(RunReopened.TABLE, []))
    for table, cls in TABLES.items():
        if cls in INSTRUCTIONS or cls in LABEL_ROWS:
            continue
        rows = _typed(cls, retargeted.get(table, []))
        if cls is EdgeRow:
            new_edges = captures.write_edges(con, rows)
        elif rows:
            _insert(con, cls, rows)
    _set_started(con, retargeted.get(QueryStarted.TABLE, []))
    labels.write_labels(con, {cls.TABLE: retargeted.get(cls.TABLE, []) for cls in LABEL_ROWS})
    retarget.in_store(con, retargeted.get(Retarget.TABLE, []))  # those whose inner write went in an earlier batch
    return new_edges


def commit_batch(con: duckdb.DuckDBPyConnection, batch: Batch) -> int:
    """:func:`write_batch` in a transaction of its own: all of ``batch`` or, when it fails, none of it."""
    with transaction(con):
        return write_batch(con, batch)


def _insert(con: duckdb.DuckDBPyConnection, cls: Any, rows: list[tuple]) -> None:
    """Column-wise: the rows bound as one relation (:func:`_bound`), each column cast to the table's
    type; an upsert by the row type's ``KEY`` and ``MERGE``. A row type with a ``COLLAPSE`` takes one
    statement, its rows of one key collapsed first in their order; any other, one statement per round
    (:func:`_rounds`)."""
    types = _column_types(con, cls.TABLE)
    values = ", ".join(f'CAST("{c}" AS {types[c]}) AS "{c}"' for c in cls._fields)
    sql = f"INSERT INTO {cls.TABLE} ({', '.join(cls._fields)}) SELECT "
    conflict = f" ON CONFLICT ({', '.join(cls.KEY)}) DO UPDATE SET {cls.MERGE}" if cls.MERGE else ""
    if cls.COLLAPSE:
        collapsed = ", ".join(f'"{c}"' if c in cls.KEY else cls.COLLAPSE[c] for c in cls._fields)
        key = ", ".join(f'"{c}"' for c in cls.KEY)
        with _bound(con, cls._fields, rows, seq=True) as (source, params):
            con.execute(f"{sql}{collapsed} FROM (SELECT {values}, _seq FROM {source}) GROUP BY {key}{conflict}",
                        params)
        return
    for part in _rounds(cls, rows):
        with _bound(con, cls._fields, part) as (source, params):
            con.execute(f"{sql}{values} FROM {source}{conflict}", params)


#: The name rows are bound under on a writer's connection while one statement reads them.
_BOUND = "_lineage_listener_rows"
#: Rows from which a statement's rows are bound as an Arrow table rather than as lists: converting a
#: bound list costs per value, an Arrow table costs little per value but a fixed amount per statement
#: and, once per process, importing pyarrow (and the pandas it checks for, when installed). A
#: capture's batch stays below it; a consumer's merged batches go above it.
ARROW_ROWS = 500


@contextlib.contextmanager
def _bound(con: duckdb.DuckDBPyConnection, names: tuple[str, ...], rows: list[tuple],
           seq: bool = False) -> Iterator[tuple[str, list | None]]:
    """``rows`` as a relation of columns ``names`` (and ``_seq``, their order, with ``seq``) for one
    statement, and the statement's parameters: from :data:`ARROW_ROWS` rows, an Arrow table DuckDB scans
    in place, each column's type inferred from its Python values (text, integers, booleans, lists, null)
    as DuckDB infers a bound list's; under it, or when Arrow cannot type a column (values of mixed
    types), each column bound as a list and unnested."""
    columns: list[Any] = list(zip(*rows))
    if seq:
        names, columns = (*names, "_seq"), [*columns, range(len(rows))]
    table = _arrow(columns, names) if len(rows) >= ARROW_ROWS else None
    if table is None:
        yield ("(SELECT " + ", ".join(f'unnest(${i + 1}) AS "{c}"' for i, c in enumerate(names)) + ")",
               [list(c) for c in columns])
        return
    con.register(_BOUND, table)
    try:
        yield _BOUND, None
    finally:
        con.unregister(_BOUND)


def _arrow(columns: list[Any], names: tuple[str, ...]) -> Any:
    """The columns as an Arrow table, or None when a column's values have no one Arrow type or pyarrow
    is not installed (the ``server`` and ``kafka`` extras install it; capture's small batches do
    without)."""
    try:
        import pyarrow as pa
    except ImportError:
        return None

    try:
        return pa.Table.from_arrays([pa.array(c) for c in columns], names=list(names))
    except (pa.ArrowException, OverflowError):
        return None


def _reopen(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    """Clear the end of runs captured again (before the batch's own ``runs`` rows, which may end them)."""
    if rows:
        con.execute("UPDATE runs SET ended_at = NULL WHERE run_id IN (SELECT unnest(?)) AND ended_at IS NOT NULL",
                    [[r[0] for r in rows]])


def _set_started(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    """Keep when queries started (the earliest time given) and set the duration of those that ended."""
    if not rows:
        return
    ids = [r[0] for r in rows]
    starts = [r for r in rows if r[1] is not None]
    if starts:
        con.execute("""INSERT INTO query_starts SELECT unnest(?), CAST(unnest(?) AS TIMESTAMP)
                       ON CONFLICT (query_id) DO UPDATE SET started_at = least(query_starts.started_at,
                                                                               excluded.started_at)""",
                    [[r[0] for r in starts], [r[1] for r in starts]])
    con.execute("""UPDATE queries q SET duration_ms = date_diff('millisecond', s.started_at, q.captured_at)
                   FROM query_starts s WHERE q.query_id = s.query_id AND q.query_id IN (SELECT unnest(?))
                   AND q.status <> 'running' AND q.captured_at >= s.started_at""", [ids])

