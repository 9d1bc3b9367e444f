"""Check a store and what waits for it; repair what can be repaired without a person.

``examine(path)`` reports; ``repair(path)`` also migrates an older schema, ingests
pending spool files, removes leftovers of interrupted writes and, when asked, moves
a corrupt store aside so capture can start a new one. ``lineage-listener doctor``
is its CLI skin.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb

from lineage_listener.store import spool
from lineage_listener.store.batch import Batch
from lineage_listener.store.connection import is_corrupt_error, is_lock_error
from lineage_listener.store.schema import SCHEMA_VERSION, store_version
from lineage_listener.store.writer import StoreWriter

#: Tables whose row counts the report gives (``column_lineage`` is a view: its rows are counted
#: only when the store is small, as the join over every capture is what it costs).
COUNTED = ("runs", "queries", "datasets", "dataset_columns", "edges", "edge_sets", "edge_captures",
           "capture_errors", "column_lineage")
SMALL_STORE_CAPTURES = 100_000


@dataclass
class Finding:
    """One line of the report: ``level`` is ok | note | action (a person must act)."""

    level: str
    text: str


@dataclass
class Report:
    store: Path
    findings: list[Finding] = field(default_factory=list)

    def add(self, level: str, text: str) -> None:
        self.findings.append(Finding(level, text))

    @property
    def healthy(self) -> bool:
        return all(f.level != "action" for f in self.findings)

    def lines(self) -> list[str]:
        return [f"{f.level:<6} {f.text}" for f in self.findings]


def examine(path: str | Path) -> Report:
    """What state the store and its spool are in; changes nothing."""
    store = Path(path).expanduser().absolute()
    report = Report(store)
    _examine_file(store, report)
    _examine_spool(store, report)
    return report


def repair(path: str | Path, move_corrupt: bool = False, wait: float = 10.0) -> Report:
    """Fix what needs no person, then report (as :func:`examine` does, after the fixes)."""
    store = Path(path).expanduser().absolute()
    actions: list[str] = []
    for leftover in _leftovers(store):
        with contextlib.suppress(OSError):
            leftover.unlink()
            actions.append(f"removed leftover {leftover}")
    if move_corrupt and store.exists() and _corrupt(store):
        aside = store.with_name(f"{store.name}.corrupt-{datetime.now():%Y%m%d%H%M%S}")
        store.rename(aside)
        actions.append(f"moved the unreadable store aside to {aside}")
    before = len(spool.pending(store))
    if store.exists() or before:
        writer = StoreWriter(store, lock_timeout=wait)
        if writer.write(Batch()):  # opens (migrating an older schema), ingests the spool
            after = len(spool.pending(store))
            if before:
                actions.append(f"ingested {before - after} spooled batches")
    report = examine(store)
    report.findings[:0] = [Finding("fixed", a) for a in actions]
    return report


def _examine_file(store: Path, report: Report) -> None:
    if not store.exists():
        report.add("note", f"no store at {store} yet: the first capture creates it")
        return
    if store.stat().st_size == 0:
        report.add("note", f"{store} is an empty (0-byte) file, left by an interrupted first write: "
                           f"the next write replaces it")
        return
    try:
        con = duckdb.connect(str(store), read_only=True)
    except duckdb.Error as exc:
        if is_lock_error(exc):
            report.add("note", f"{store} is in use by another process right now; try again")
        else:
            report.add("action", f"{store} is not a readable DuckDB store ({str(exc).splitlines()[0][:120]}): "
                                 f"run `lineage-listener doctor --store {store} --move-corrupt` to move it aside "
                                 f"and let capture start a new store")
        return
    try:
        version = store_version(con)
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if version is None and "column_lineage" not in tables:
            report.add("note", f"{store} has no lineage tables yet")
        elif version is None or version < SCHEMA_VERSION:
            report.add("note", f"schema version {version or 'before 2'} is older than {SCHEMA_VERSION}: "
                               f"the next write (or `doctor`) migrates it in place")
        elif version > SCHEMA_VERSION:
            report.add("action", f"schema version {version} is newer than this lineage-listener's "
                                 f"({SCHEMA_VERSION}): upgrade lineage-listener (`pip install -U lineage-listener`)")
        else:
            report.add("ok", f"schema version {version}")
        _sizes(con, store, tables, report)
        if "capture_errors" in tables:
            recent = con.execute("SELECT stage, error FROM capture_errors ORDER BY captured_at DESC LIMIT 3").fetchall()
            for stage, error in recent:
                report.add("note", f"recent capture error ({stage}): {str(error)[:160]}")
    finally:
        con.close()


def _sizes(con: duckdb.DuckDBPyConnection, store: Path, tables: set[str], report: Report) -> None:
    """Rows per table, the file's size and free space, and how far back the history goes."""
    small = "edge_captures" not in tables or con.execute(
        "SELECT count(*) FROM edge_captures").fetchone()[0] <= SMALL_STORE_CAPTURES
    counts = [f"{t} {con.execute(f'SELECT count(*) FROM {t}').fetchone()[0]:,}" for t in COUNTED
              if t in tables and (t != "column_lineage" or small)]
    if counts:
        report.add("ok", "rows: " + ", ".join(counts))
    size = store.stat().st_size + (store.with_name(store.name + ".wal").stat().st_size
                                   if store.with_name(store.name + ".wal").exists() else 0)
    with contextlib.suppress(duckdb.Error):
        total, free = con.execute("SELECT total_blocks, free_blocks FROM pragma_database_size()").fetchone()
        size_note = f", {free * 100 // max(total, 1)}% free blocks (reused by later writes)" if total else ""
        report.add("ok", f"file {size / 1e6:,.1f} MB{size_note}")
    if {"runs", "edge_captures"} <= tables:
        oldest_run, oldest_capture, summarised = con.execute(
            """SELECT (SELECT min(coalesce(started_at, ended_at)) FROM runs),
                      (SELECT min(captured_at) FROM edge_captures WHERE query_id IS NOT NULL),
                      (SELECT min(captured_at) FROM edge_captures WHERE query_id IS NULL)""").fetchone()
        if oldest_run or oldest_capture:
            text = f"oldest run {oldest_run:%Y-%m-%d}" if oldest_run else "no run recorded"
            if oldest_capture:
                text += f", oldest capture record {oldest_capture:%Y-%m-%d}"
            if summarised:
                text += f"; pruned history summarised back to {summarised:%Y-%m-%d}"
            report.add("ok", text + " (`lineage-listener prune --keep 400d` drops older records)")


def _examine_spool(store: Path, report: Report) -> None:
    files = spool.pending(store)
    if files:
        age = time.time() - min(f.stat().st_mtime for f in files)
        report.add("action" if _corrupt(store) else "note",
                   f"{len(files)} spooled batches ({spool.rows(files)} rows, oldest {age / 60:.0f} min) wait in "
                   f"{', '.join(sorted({str(f.parent) for f in files}))}: `lineage-listener doctor --store {store}` "
                   f"writes them once the store is writable")
    else:
        report.add("ok", "no spooled lineage waiting")
    bad = spool.set_aside(store)
    if bad:
        report.add("action", f"{len(bad)} spooled batches could not be read or written and were set aside as "
                             f"*.bad in {bad[0].parent} (capture_errors rows of stage 'spool' say why; rename one "
                             f"back to .json to try it again)")
    leftovers = _leftovers(store)
    if leftovers:
        report.add("note", f"{len(leftovers)} leftover temporary files of interrupted writes (doctor removes them)")


def _leftovers(store: Path) -> list[Path]:
    found = list(store.parent.glob(f".{store.name}.*.creating*")) if store.parent.is_dir() else []
    for d in spool.dirs(store):
        if d.is_dir():
            found += d.glob(".*.tmp")
    return found


def _corrupt(store: Path) -> bool:
    if not store.exists() or store.stat().st_size == 0:
        return False
    try:
        duckdb.connect(str(store), read_only=True).close()
        return False
    except duckdb.Error as exc:
        return is_corrupt_error(exc)

