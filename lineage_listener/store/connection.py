"""Opening the DuckDB store file for reading or writing.

A new store is built in a temporary file beside its final path and moved into
place complete (``os.link``: never over a store another process just created),
so a full disk or a killed process never leaves a partial or 0-byte store. It is
its owner's alone, as is its write-ahead log (:mod:`~lineage_listener.store.private`).
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb

from lineage_listener.store import private
from lineage_listener.store.schema import NewerStoreError, ensure_schema

log = logging.getLogger(__name__)


def _version(text: str) -> tuple[int, ...]:
    """``(major, minor)`` of a version text.

    >>> _version("1.4.0"), _version("2.0.1.dev12")
    ((1, 4), (2, 0))
    """
    return tuple(int("".join(ch for ch in part if ch.isdigit()) or 0) for part in text.split(".")[:2])


#: DuckDB refuses, from 1.4 on, a file that another database of this process has open (attached
#: or connected): only then may the store be attached to the writer's own in-memory database.
ATTACH_SAFE = _version(duckdb.__version__) >= (1, 4)


class StoreError(Exception):
    """The store cannot be opened: missing, not a DuckDB file, or locked."""


class StoreNeedsAction(StoreError):
    """Writing cannot go on until a person acts: a corrupt store, or one from a newer version."""


def is_lock_error(exc: BaseException) -> bool:
    """True when DuckDB refused the file because another process holds it."""
    text = str(exc).lower()
    return "lock" in text or "conflicting" in text or "being used" in text


def is_config_conflict(exc: BaseException) -> bool:
    """True when this process already has the file open with another configuration (DuckDB allows
    one per file per process: a user's read-only connection blocks a read-write open).

    >>> is_config_conflict(duckdb.ConnectionException("Can't open a connection to same database file "
    ...                    "with a different configuration than existing connections"))
    True
    """
    return "different configuration" in str(exc).lower()


def is_corrupt_error(exc: BaseException) -> bool:
    """True when the file exists but is not a readable DuckDB store."""
    text = str(exc).lower()
    return "not a valid duckdb database" in text or "corrupt" in text or "checksum" in text


#: How a read-only connection reads: through an ART index only when the rows a lookup finds are at
#: most ``index_scan_percentage`` (0.1%) of its table's. DuckDB's default also reads one for up to
#: 2,048 rows whatever the table's size, which on a store of millions of edge rows costs more than
#: reading the table (docs/reference/store.md, :mod:`lineage_listener.query.lookups`). A global
#: setting: it holds for the database instance, which every read-only connection of this process to
#: the same file shares; a writer's database is its own, and keeps DuckDB's default.
READ_SETTINGS = "SET index_scan_max_count = 0"


def open_readonly(path: str | os.PathLike, retry_seconds: float = 5.0) -> duckdb.DuckDBPyConnection:
    """Open an existing store for reading, with :data:`READ_SETTINGS`; waits up to ``retry_seconds``
    if it is locked."""
    p = Path(path)
    if not p.exists():
        raise StoreError(f"no store at {p}: capture has not written there yet (check --store)")
    deadline = time.monotonic() + retry_seconds
    delay = 0.05
    while True:
        try:
            con = duckdb.connect(str(p), read_only=True)
        except duckdb.Error as exc:
            if not is_lock_error(exc) or time.monotonic() > deadline:
                raise StoreError(f"cannot open store {p}: {exc}") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
            continue
        try:
            con.execute(READ_SETTINGS)
        except BaseException:
            con.close()
            raise
        return con


def open_writable(path: str | os.PathLike, host: duckdb.DuckDBPyConnection | None = None
                  ) -> duckdb.DuckDBPyConnection:
    """Open (creating it atomically if needed) the store for writing, at the current schema.

    With ``host`` (an in-memory connection kept by a writer), the store is attached to it as
    :data:`ATTACHED` and made its default database, and ``host`` is returned: attaching a file costs
    a fraction of a new database instance (DuckDB builds its whole catalog of functions for each);
    :func:`release` detaches it, which closes the file as closing a connection would.
    Raises duckdb.Error / OSError (locked, unwritable, full) or :class:`StoreNeedsAction`.

    >>> import tempfile; store = Path(tempfile.mkdtemp()) / "s.duckdb"; host = duckdb.connect()
    >>> con = open_writable(store, host)
    >>> con.execute("SELECT count(*) FROM queries").fetchone()[0]
    0
    >>> release(con, host)
    >>> host.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = ?", [ATTACHED]).fetchone()[0]
    0
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if not p.exists() or p.stat().st_size == 0:
        create_atomically(p, host)
    try:
        con = _open(p, host)
    except duckdb.Error as exc:
        if is_corrupt_error(exc):
            raise StoreNeedsAction(f"{p} is not a readable DuckDB store (not a valid DuckDB database file, "
                                   f"or damaged)") from None
        raise
    try:
        _hold_wal(con, p)
        ensure_schema(con)
    except NewerStoreError as exc:
        release(con, host, p)
        raise StoreNeedsAction(f"{p}: {exc}") from None
    except Exception:
        release(con, host, p)
        raise
    return con


def _hold_wal(con: duckdb.DuckDBPyConnection, p: Path) -> None:
    """The store's write-ahead log made by us, with the store's permissions, and kept until the store
    is let go (:mod:`~lineage_listener.store.private`)."""
    con.execute(private.NO_AUTO_CHECKPOINT)
    private.hold_wal(p)


#: The name a writer's host connection attaches the store under (:func:`open_writable`).
ATTACHED = "lineage_store"


def _open(p: Path, host: duckdb.DuckDBPyConnection | None) -> duckdb.DuckDBPyConnection:
    """A read-write connection to the file ``p``: a new one, or ``host`` with ``p`` attached as its
    default database (:func:`release` closes either)."""
    if host is None:
        return duckdb.connect(str(p))
    try:
        # TYPE duckdb: DuckDB reads the file's headers after it has locked the file. Left to guess the
        # type, it reads them before (to tell the format) and keeps them: when another writer commits
        # and closes in between, this one writes on top of the older state and that commit is lost.
        host.execute(f"ATTACH {_literal(str(p))} AS {ATTACHED} (TYPE duckdb)")
    except duckdb.Error as exc:
        if "unique file handle conflict" not in str(exc).lower():
            raise
        # This process has the file open already (a user's connection): a connection shares that
        # database when its configuration is the same, as it did before writers attached the store.
        return duckdb.connect(str(p))
    try:
        host.execute(f"USE {ATTACHED}")
    except Exception:
        release(host, host)
        raise
    return host


def _literal(text: str) -> str:
    """A SQL string literal.

    >>> _literal("it's")
    "'it''s'"
    """
    return "'" + text.replace("'", "''") + "'"


def release(con: duckdb.DuckDBPyConnection, host: duckdb.DuckDBPyConnection | None = None,
            path: str | os.PathLike | None = None) -> None:
    """Close what :func:`open_writable` opened: the connection, or the store attached to ``host``
    (``path``: the store's, whose write-ahead log is removed first when nothing was written to it)."""
    if path is not None:
        private.drop_empty_wal(Path(path))
    if con is not host:
        con.close()
        return
    with contextlib.suppress(duckdb.Error):
        host.execute("ROLLBACK")  # a transaction left open by a failure would keep the file attached
    host.execute("USE memory")
    try:
        host.execute(f"DETACH DATABASE IF EXISTS {ATTACHED}")
    except duckdb.Error as exc:
        # The checkpoint on detach can fail (a full disk) after the store is detached: what was
        # committed is in its write-ahead log, replayed by the next open, as after a close whose
        # checkpoint failed. Raise only if the store is still attached.
        if host.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = ?",
                        [ATTACHED]).fetchone()[0]:
            raise
        reason = next((line for line in str(exc).splitlines() if "Original error" in line), str(exc))
        log.warning("lineage-listener: store closed, but its checkpoint failed (%s); what was written is "
                    "kept in its write-ahead log and replayed when the store is next opened",
                    reason.strip()[:300])


def connect_writable(path: str | os.PathLike, deadline: Callable[[], float],
                     host: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
    """:func:`open_writable`, retried while another process holds the file, until ``deadline()``
    (a ``time.monotonic()`` value, read on every retry: a writer may shorten its wait meanwhile)."""
    delay = 0.05
    while True:
        try:
            return open_writable(path, host)
        except (duckdb.Error, OSError) as exc:
            if not is_lock_error(exc) or time.monotonic() + delay > deadline():
                raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """One transaction: committed when the block ends, rolled back when it raises.

    >>> con = duckdb.connect(); _ = con.execute("CREATE TABLE t (x INT)")
    >>> with transaction(con): _ = con.execute("INSERT INTO t VALUES (1)")
    >>> try:
    ...     with transaction(con): _ = con.execute("INSERT INTO t VALUES ('no number')")
    ... except duckdb.Error: pass
    >>> con.execute("SELECT count(*) FROM t").fetchone()[0]
    1
    """
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def create_atomically(path: Path, host: duckdb.DuckDBPyConnection | None = None) -> None:
    """Create an empty store with the schema at ``path`` unless one appeared meanwhile (built
    attached to ``host`` when given, see :func:`open_writable`).

    A 0-byte file at ``path`` (left by an older version on a full disk) is replaced.
    """
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.creating")
    try:
        con = _open(tmp, host)
        try:
            ensure_schema(con)
            con.execute("CHECKPOINT")
        finally:
            release(con, host)
        private.close_file(tmp)
        if path.exists() and path.stat().st_size == 0:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # fails if another process created the store first: keep theirs
            except FileExistsError:
                pass
            except OSError:  # no hard links on this file system: a plain rename
                if not path.exists():
                    os.replace(tmp, path)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            try:
                leftover.unlink()
            except FileNotFoundError:
                pass
