"""Opening the DuckDB store file for reading or writing."""
from __future__ import annotations

import os
import time
from pathlib import Path

import duckdb

from lineage_listener.store.schema import ensure_schema


class StoreError(Exception):
    """The store cannot be opened: missing, not a DuckDB file, or locked."""


def is_lock_error(exc: BaseException) -> bool:
    """True when DuckDB refused the file because another process holds it."""
    text = str(exc).lower()
    return "lock" in text or "conflicting" in text or "being used" in text


def open_readonly(path: str | os.PathLike, retry_seconds: float = 5.0) -> duckdb.DuckDBPyConnection:
    """Open an existing store for reading; waits up to ``retry_seconds`` if it is locked."""
    p = Path(path)
    if not p.exists():
        raise StoreError(f"no store at {p}: capture has not written there yet (check --store)")
    deadline = time.monotonic() + retry_seconds
    delay = 0.05
    while True:
        try:
            return duckdb.connect(str(p), read_only=True)
        except duckdb.Error as exc:
            if not is_lock_error(exc) or time.monotonic() > deadline:
                raise StoreError(f"cannot open store {p}: {exc}") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


def open_writable(path: str | os.PathLike) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the store for writing and apply the schema. Raises duckdb.Error."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(p))
    try:
        ensure_schema(con)
    except Exception:
        con.close()
        raise
    return con
