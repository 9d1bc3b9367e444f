"""Beside the store: the spool (batches waiting for it) and the turn lock (writers in turn).

Spool files are JSON batches in ``<store>.spool/`` (or a per-store temp folder when
that cannot be written), written to a hidden temporary file and renamed, so a
reader never sees half a batch and a failed write leaves nothing behind. Folders
and files are their owner's alone, and a folder of another user is never used
(:mod:`~lineage_listener.store.private`).

A spooled batch that can never be written (a value that cannot be cast, a broken constraint)
does not hold up the ones behind it: it is written again one query at a time, and what still
fails is kept as ``<name>.bad`` for a person (one ERROR line and a ``capture_errors`` row say
so; rename it back to ``.json`` to try again). A lock, the disk or the connection failing stops
the ingest instead: those files wait for the next try, in order.

Writers of one store take turns through ``<store>.lock`` (an advisory ``flock``
held only while a batch is written), so concurrent jobs queue briefly instead of
each backing off from DuckDB's own lock until its timeout.

>>> from pathlib import Path
>>> [d.name for d in dirs(Path("/data/lineage.duckdb"))][0]
'lineage.duckdb.spool'
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb

from lineage_listener import redact
from lineage_listener.store import private
from lineage_listener.store.batch import Batch

log = logging.getLogger(__name__)

#: Errors about a batch's own rows: writing the same rows again fails again. Anything else
#: (a lock, the disk, the connection, a store that needs a person) may pass on a later try.
CONTENT_ERRORS: tuple[type[BaseException], ...] = (
    duckdb.DataError, duckdb.IntegrityError, duckdb.InvalidInputException, TypeError, ValueError, KeyError,
    IndexError)


def is_content_error(exc: BaseException) -> bool:
    """True when ``exc`` is about the rows written, not about the store (see :data:`CONTENT_ERRORS`).

    >>> is_content_error(duckdb.ConversionException("Could not convert string 'x' to INT32"))
    True
    >>> is_content_error(duckdb.IOException("Could not set lock on file"))
    False
    """
    return isinstance(exc, CONTENT_ERRORS)

#: Writers take turns through ``<store>.lock`` (``bench/concurrent_writers.py`` compares without).
TURN_LOCK = True

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no turn lock, DuckDB's own lock still holds
    fcntl = None  # type: ignore[assignment]


def dirs(store: Path) -> list[Path]:
    """Where spooled batches of ``store`` go: beside it, else a per-store temp folder."""
    digest = hashlib.sha1(str(store).encode()).hexdigest()[:12]
    return [store.with_name(store.name + ".spool"),
            Path(tempfile.gettempdir()) / "lineage-listener-spool" / digest]


def pending(store: Path) -> list[Path]:
    """Spool files of ``store`` not ingested yet, oldest first."""
    files: list[Path] = []
    for d in dirs(store):
        if d.is_dir() and private.owned(d):
            files += sorted(d.glob("*.json"))
    return files


def set_aside(store: Path) -> list[Path]:
    """Spooled batches of ``store`` kept as ``.bad`` for a person."""
    return [f for d in dirs(store) if d.is_dir() for f in d.glob("*.bad")]


def rows(files: list[Path]) -> int:
    """How many rows the spool files ``files`` hold (a file that cannot be read counts none)."""
    total = 0
    for f in files:
        with contextlib.suppress(OSError, ValueError):
            total += len(Batch.from_json(f.read_text(encoding="utf-8")))
    return total


def write(store: Path, batch: Batch, suffix: str = ".json") -> Path | None:
    """Spool ``batch``; the file written, or None when no spool folder can be written.
    ``suffix=".bad"``: kept for a person, never sent or ingested by itself."""
    text = batch.to_json()
    for d in dirs(store):
        tmp = d / f".{uuid.uuid4().hex}.tmp"
        try:
            private.make_dir(d)
            private.write_new(tmp, text)
            final = d / f"{time.time_ns()}-{uuid.uuid4().hex[:8]}{suffix}"
            tmp.rename(final)
            return final
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
    return None


def ingest(con: Any, store: Path, write_batch: Callable[[Any, Batch], Any]) -> int:
    """Write every pending spool file of ``store`` through ``con``; the number ingested.

    Each file is removed after its transaction commits; a file that cannot be read is
    renamed ``*.bad``, and one that cannot be written is salvaged query by query
    (:func:`salvage`); both are kept for a person, out of the way of later writes. An error
    that is not about the batch's rows (a lock, the disk) is raised: the rest waits.
    """
    done = 0
    for f in pending(store):
        try:
            batch = Batch.from_json(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.error("lineage-listener: spooled batch %s cannot be read (%s); kept as %s.bad", f, exc, f.name)
            with contextlib.suppress(OSError):
                f.rename(f.with_suffix(".bad"))
            continue
        try:
            write_batch(con, batch)
        except Exception as exc:  # noqa: BLE001 - sorted below: the batch's fault, or the store's
            if not is_content_error(exc):
                raise
            failed = salvage(con, batch, write_batch)
            if failed is not None:
                bad = f.with_suffix(".bad")
                tmp = f.with_name(f".{uuid.uuid4().hex}.tmp")
                private.write_new(tmp, failed.to_json())
                tmp.rename(bad)
                quarantined(con, f"spooled batch {f.name}", failed, exc, str(bad))
            f.unlink(missing_ok=True)
            continue
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
        done += 1
    if done:
        log.info("lineage-listener: ingested %d spooled batches into %s", done, store)
    return done


def salvage(con: Any, batch: Batch, write_batch: Callable[[Any, Batch], Any]) -> Batch | None:
    """A batch that failed on its own rows, written again one query at a time
    (:meth:`~lineage_listener.store.batch.Batch.by_query`): the queries that still fail, or None."""
    failed: Batch | None = None
    for part in batch.by_query():
        try:
            write_batch(con, part)
        except Exception as again:  # noqa: BLE001
            if not is_content_error(again):
                raise
            failed = failed or Batch()
            failed.extend(part)
    return failed


def quarantine(con: Any, store: Path, batch: Batch, exc: BaseException, what: str,
               write_batch: Callable[[Any, Batch], Any]) -> bool:
    """``batch`` failed on its own rows: write it again query by query (:func:`salvage`) and keep what
    still fails as a ``.bad`` spool file of ``store``, recorded (:func:`quarantined`). True if something
    could not be written."""
    failed = salvage(con, batch, write_batch)
    if failed is None:
        return False
    kept = write(store, failed, suffix=".bad")
    quarantined(con, what, failed, exc, str(kept) if kept else None)
    return True


def quarantined(con: Any, what: str, failed: Batch, exc: BaseException, kept: str | None) -> str:
    """Say once (an ERROR line, a ``capture_errors`` row of stage ``spool``) that ``failed`` could
    not be written and where it is kept (None: nowhere writable, dropped); the message."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    reason = redact.redact_text(f"{type(exc).__name__}: {first}")[:500]
    queries = len(failed.query_ids() | {r[0] for r in failed.rows["queries"]})
    where = f"kept in {kept}" if kept else "dropped: no spool folder is writable"
    message = f"{what} cannot be written ({reason}); {queries} of its queries {where}, the others written"
    log.error("lineage-listener: %s", message)
    with contextlib.suppress(Exception):
        con.execute("INSERT INTO capture_errors VALUES (current_timestamp::TIMESTAMP, NULL, NULL, 'spool', ?)",
                    [message])
    return message


@contextlib.contextmanager
def turn(store: Path, deadline: Callable[[], float], poll: float = 0.005) -> Iterator[bool]:
    """Hold ``<store>.lock`` until the block ends; yields False if it was not free by ``deadline()``
    (a callable: the writer may shorten its wait while it waits, e.g. when the application ends).

    Yields True without a lock where no lock file can be made (read-only folder,
    no ``fcntl``): DuckDB's own file lock still keeps writers apart.
    """
    if fcntl is None or not TURN_LOCK:
        yield True
        return
    with contextlib.suppress(OSError):
        store.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = private.open_lock(store.with_name(store.name + ".lock"))
    except OSError:
        yield True
        return
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline():
                    yield False
                    return
                time.sleep(poll)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
