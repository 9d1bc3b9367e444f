"""Beside the store: the spool (batches waiting for it) and the turn lock (writers in turn).

Spool files are JSON batches in ``<store>.spool/`` (or a per-store temp folder when
that cannot be written), written to a hidden temporary file and renamed, so a
reader never sees half a batch and a failed write leaves nothing behind.

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

from lineage_listener.store.batch import Batch

log = logging.getLogger(__name__)

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
        if d.is_dir():
            files += sorted(d.glob("*.json"))
    return files


def write(store: Path, batch: Batch) -> Path | None:
    """Spool ``batch``; the file written, or None when no spool folder can be written."""
    text = batch.to_json()
    for d in dirs(store):
        tmp = d / f".{uuid.uuid4().hex}.tmp"
        try:
            d.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
            final = d / f"{time.time_ns()}-{uuid.uuid4().hex[:8]}.json"
            tmp.rename(final)
            return final
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
    return None


def ingest(con: Any, store: Path, write_batch: Callable[[Any, Batch], None]) -> int:
    """Write every pending spool file of ``store`` through ``con``; the number ingested.

    Each file is removed after its transaction commits; a file that cannot be read
    is renamed ``*.bad`` (kept for a person, out of the way of later writes).
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
        write_batch(con, batch)
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
        done += 1
    if done:
        log.info("lineage-listener: ingested %d spooled batches into %s", done, store)
    return done


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
        fd = os.open(str(store.with_name(store.name + ".lock")), os.O_RDWR | os.O_CREAT, 0o644)
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
