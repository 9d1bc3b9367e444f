"""A store file's stamp: what differs whenever a write has changed what a reader sees.

A reader's cache of what it learnt of a store (dataset names, hops between datasets, declared
labels) stays right while the store's stamp is the one it was read under. The stamp is taken
while a read-only connection holds the file: DuckDB keeps every writer out then (its lock), so
the stamp and the content that connection reads belong together. Every committed write goes to
the store file or to its write-ahead log (``<store>.wal``), so it changes their size, their
modification time or their change time (``ctime``, which nothing can set back), or the file
itself (a store moved into place is another inode).

A time stamp is only as fine as the file system's clock: a write in the same tick as the
modification before it could leave every field as it was. So a file changed less than
:data:`SETTLED_NS` ago has no stamp (None: nothing read from it may be kept), the rule git uses
for "racily clean" index entries. A write after the stamp was taken comes at least that much
later than the change the stamp saw, so it moves a time.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "s.duckdb"
>>> _ = p.write_bytes(b"x")
>>> stamp(p) is None                       # written just now
True
>>> first = stamp(p, settled_ns=0)
>>> _ = p.write_bytes(b"yy")
>>> stamp(p, settled_ns=0) != first
True
"""
from __future__ import annotations

import os
import time
from pathlib import Path

#: How long ago the store and its log must have last changed for their stamp to be trusted
#: (well above any file system's time stamp granularity: FAT's is 2 s).
SETTLED_NS = 3_000_000_000

Stamp = tuple[tuple[int, ...], ...]


def stamp(path: str | os.PathLike, settled_ns: int | None = None) -> Stamp | None:
    """The stamp of the store at ``path`` and its write-ahead log; None when either changed less than
    ``settled_ns`` (default :data:`SETTLED_NS`) ago, or the store cannot be read."""
    settled = SETTLED_NS if settled_ns is None else settled_ns
    now = time.time_ns()
    parts = []
    for p in (Path(path), Path(f"{path}.wal")):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            if p == Path(path):
                return None
            parts.append(())
            continue
        except OSError:
            return None
        if now - max(st.st_mtime_ns, st.st_ctime_ns) < settled:
            return None
        parts.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(parts)
