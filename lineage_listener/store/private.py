"""Files that hold lineage are for their owner only, whatever the umask (``docs/operations.md``).

The store file, its write-ahead log, spool files and folders, quarantined (``.bad``) batches
and dead letters are created readable and writable by their owner alone (files ``0600``,
folders ``0700``): SQL text, column names and the data flows between them are not for every
account of a shared machine.

DuckDB creates the write-ahead log ``<store>.wal`` itself, on the first commit after a
checkpoint, with the umask's permissions. So a writer creates it first (:func:`hold_wal`), with
the store file's permissions, as soon as it has the store open, and the store is checkpointed
only when the writer lets it go (:data:`NO_AUTO_CHECKPOINT`): DuckDB then writes into that file
until the store is closed, and never makes its own. A store kept open at most a few seconds (as
every writer here does) holds a few seconds of writes in its log.

A folder of another user is never used for a spool: another account could read or plant batches.

>>> import tempfile; d = Path(tempfile.mkdtemp())
>>> old = os.umask(0)
>>> folder = make_dir(d / "a" / "b.spool"); write_new(folder / "x.json", "{}")
>>> [oct(mode(p)) for p in (d / "a", folder, folder / "x.json")]
['0o700', '0o700', '0o600']
>>> _ = os.umask(old)
"""
from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

FILE = 0o600
FOLDER = 0o700
#: Run on a writer's connection: DuckDB checkpoints when the store is let go, not at a log size, so the
#: log :func:`hold_wal` made is the one DuckDB writes to (a checkpoint deletes it).
NO_AUTO_CHECKPOINT = "SET checkpoint_threshold = '1TB'"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def mode(path: Path) -> int:
    """The permission bits of ``path``."""
    return stat.S_IMODE(os.stat(path).st_mode)


def make_dir(path: Path) -> Path:
    """``path`` as a folder for its owner only: created with its missing parents (``0700``), or, when
    it exists and is this user's, closed to others. Raises PermissionError for another user's folder
    (or a file in the way)."""
    missing = []
    p = path
    while not p.is_dir():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(d, FOLDER)
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path} is not a folder")
    if st.st_uid != os.geteuid():
        raise PermissionError(f"{path} belongs to another user")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, FOLDER)
    return path


def owned(path: Path) -> bool:
    """True when ``path`` exists and belongs to this user (a spool folder to read batches from)."""
    try:
        return os.stat(path).st_uid == os.geteuid()
    except OSError:
        return False


def write_new(path: Path, text: str) -> None:
    """Write ``text`` to a new file ``path`` for its owner only (it must not exist)."""
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, FILE)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def append(path: Path, text: str) -> None:
    """Append ``text`` to ``path``, created for its owner only when it does not exist."""
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW, FILE)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(text)
        f.flush()


def open_lock(path: Path) -> int:
    """A file descriptor of the lock file ``path`` (created for its owner only), for ``flock``."""
    return os.open(str(path), os.O_RDWR | os.O_CREAT | _NOFOLLOW, FILE)


def close_file(path: Path) -> None:
    """``path``, a new store file, for its owner only (before it takes the store's name)."""
    os.chmod(path, FILE)


def wal(store: Path) -> Path:
    return store.with_name(store.name + ".wal")


def hold_wal(store: Path) -> None:
    """Create the store's write-ahead log, empty, with the store file's permissions, before DuckDB
    would create it with the umask's (call it with the store open for writing: DuckDB deletes an
    empty log when it opens a store). One already there gets the store's permissions."""
    bits = mode(store) & 0o666
    log = wal(store)
    try:
        fd = os.open(str(log), os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, bits)
    except FileExistsError:
        if mode(log) != bits:
            os.chmod(log, bits)
        return
    try:
        os.fchmod(fd, bits)  # the umask took bits away; the store's are wanted (0600 unless a person chose)
    finally:
        os.close(fd)


def drop_empty_wal(store: Path) -> None:
    """Remove the log :func:`hold_wal` made when nothing was written to it (call it before the store
    is let go, while no other writer can have it)."""
    with contextlib.suppress(OSError):
        log = wal(store)
        if os.lstat(log).st_size == 0:
            log.unlink()
