"""A lineage server's policy watch: the policy checked on every batch it writes, off the writer.

The store writer hands each committed group of batches to :meth:`PolicyWatch.written`, which
only notes the columns they wrote and read and when (nothing is read or checked on the writer
thread). The watch's own thread takes everything noted so far and checks the policy on those
columns only, on the data as it is now (a write can put a label only into the columns it writes,
and a replacing write can take one away). A batch that changes labels, and the start, check the
whole store.

Each violation is kept in the store (``policy_violations``) with when it was found and what
its webhook delivery did: new ones go to the webhook; one that a later write of its column no
longer has is marked resolved. Rows are written through the same writer, as batches.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from lineage_listener.govern import labelfile, labelstore
from lineage_listener.govern.checks import check, unmatched
from lineage_listener.govern.policy import Policy
from lineage_listener.govern.webhook import Webhook
from lineage_listener.ownthread import OwnThread
from lineage_listener.query.types import Node
from lineage_listener.query.names import Aliases
from lineage_listener.timewindow import utcnow
from lineage_listener.store.batch import COLUMNS, LABEL_TABLES, Batch
from lineage_listener.store.rows import ViolationRow

log = logging.getLogger(__name__)

ReadOpener = Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]]
_ROW = COLUMNS["policy_violations"]


def violation_id(v: dict[str, Any]) -> str:
    """Stable id of a violation: its rule, column, label and where its path starts."""
    start = v["path"][0][:2] if v["path"] else None
    key = json.dumps([v["rule"], v["dataset"], v["column"], v["label"], start])
    return hashlib.sha1(key.encode()).hexdigest()[:20]


def _json(value: Any) -> str:
    return json.dumps(value, default=lambda x: x.isoformat() if isinstance(x, datetime) else str(x))


class PolicyWatch:
    """Checks ``policy`` after each write; see the module docstring."""

    def __init__(self, read: ReadOpener, write: Callable[[Batch], None], policy: Policy | None,
                 webhook: Webhook | None = None, classifications: Path | None = None) -> None:
        self._read = read
        self._write = write
        self.policy = policy
        self.classifications = classifications
        self._applied: tuple | None = None  # what of the classifications file is in the store
        self._new_datasets = classifications is not None
        self.webhook = webhook
        if webhook is not None:
            webhook.on_result = self._delivered
        self._thread = OwnThread("lineage-policy-watch", self._run)
        self._cond = self._thread.cond  # what waits to be checked is the thread's state
        self._full = True  # the first check covers the whole store
        self._writes: set[tuple[str, str]] = set()
        self._reads: set[tuple[str, str]] = set()
        self._known: dict[str, dict[str, Any]] = {}
        self._unsaved: dict[str, dict[str, Any]] = {}
        self._busy = False
        self._stats: dict[str, Any] = {"checks": 0, "full_checks": 0, "errors": 0, "last_error": None,
                                       "last_check_at": None, "last_check_ms": None}

    # -- what the writer thread calls --------------------------------------------------------
    def written(self, batches: list[Batch]) -> None:
        """Note what ``batches`` (just committed) wrote and read; returns at once."""
        writes, reads, full = set(), set(), False
        for batch in batches:
            if any(batch.rows.get(t) for t in LABEL_TABLES):
                full = True
            if batch.rows.get("datasets") and self.classifications is not None:
                with self._cond:
                    self._new_datasets = True
            for row in batch.rows.get("column_lineage", []):
                t_ds, t_col, s_ds, s_col = row[2], row[3], row[4], row[5]
                if t_ds is not None and t_col is not None:
                    writes.add((t_ds, t_col))
                if s_ds is not None and s_col is not None:
                    reads.add((s_ds, s_col))
        if not (writes or reads or full):
            return
        with self._cond:
            self._full |= full
            self._writes |= writes
            self._reads |= reads
            self._cond.notify_all()

    # -- life --------------------------------------------------------------------------------
    def start(self) -> None:
        """Load the violations the store holds, resume their webhook deliveries, check everything."""
        with self._read() as con:
            problems = unmatched(con, self.policy) if self.policy is not None else []
            self._load(con)
        for line in problems:
            log.warning("lineage-listener: %s (yet: checked as data arrives)", line)
        if self.webhook is not None:
            for row in self._known.values():
                if row["notified_at"] is None and row["gave_up_at"] is None and row["resolved_at"] is None:
                    self.webhook.submit(json.loads(row["detail"]), row["attempts"] or 0)
        self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        self._thread.stop(timeout)
        if self.webhook is not None:
            self.webhook.close()
        self._flush()  # the last delivery results, before the writer writes what it holds and stops

    def idle(self) -> bool:
        """True when nothing waits to be checked and no check runs."""
        with self._cond:
            return not (self._full or self._writes or self._reads or self._busy)

    def stats(self) -> dict[str, Any]:
        with self._cond:
            out = dict(self._stats)
            out["waiting"] = bool(self._full or self._writes or self._reads or self._busy)
            out["unsaved"] = len(self._unsaved)
        return out

    def violations(self, include_resolved: bool = False) -> list[dict[str, Any]]:
        """The violations known, newest first, each with its detail and delivery state."""
        with self._cond:
            rows = [dict(r) for r in self._known.values() if include_resolved or r["resolved_at"] is None]
        out = []
        for r in rows:
            out.append({**json.loads(r["detail"]), "id": r["violation_id"], "found_at": r["found_at"],
                        "notified_at": r["notified_at"], "attempts": r["attempts"], "gave_up_at": r["gave_up_at"],
                        "last_error": r["last_error"], "resolved_at": r["resolved_at"]})
        return sorted(out, key=lambda v: (v["found_at"] or datetime.min, v["id"]), reverse=True)

    # -- the watch's thread ------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not (self._full or self._writes or self._reads or self._thread.stopping):
                    self._cond.wait()
                if self._thread.stopping:
                    return
                full, writes, reads = self._full, self._writes, self._reads
                self._full, self._writes, self._reads = False, set(), set()
                self._busy = True
            started = time.monotonic()
            try:
                self._check(full, writes, reads)
                with self._cond:
                    self._stats["checks"] += 1
                    self._stats["full_checks"] += int(full)
            except Exception as exc:  # noqa: BLE001 - the watch must live; the next write checks again
                log.exception("lineage-listener: policy check failed")
                with self._cond:
                    self._stats["errors"] += 1
                    self._stats["last_error"] = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
                    self._full |= full  # checked again with the next work
                    self._writes |= writes
                    self._reads |= reads
            finally:
                with self._cond:
                    self._busy = False
                    self._stats["last_check_at"] = utcnow()
                    self._stats["last_check_ms"] = round(1000 * (time.monotonic() - started), 1)
                    self._cond.notify_all()
            self._flush()

    def _apply_classifications(self) -> None:
        """Declare what the classifications file declares on the datasets known now (written when it
        changed; that write then checks the whole store)."""
        with self._cond:
            if not self._new_datasets:
                return
            self._new_datasets = False
        with self._read() as con:
            found = labelfile.load(con, self.classifications, strict=False)
        if self._applied is None:  # at start: what matches nothing yet, one warning line each
            for line in found.skipped:
                log.warning("lineage-listener: %s (yet: applied as datasets arrive)", line)
        key = (sorted(found.labels), sorted(found.masking_functions))
        if key != self._applied:
            self._write(labelstore.file_batch(found.origin, found.labels, found.masking_functions, "serve"))
            self._applied = key
            log.info("lineage-listener: classifications %s: %d labels on the store (%d entries match nothing yet)",
                     self.classifications, len(found.labels), len(found.skipped))

    def _check(self, full: bool, writes: set[Node], reads: set[Node]) -> None:
        if self.classifications is not None:
            self._apply_classifications()
        if self.policy is None:
            return
        with self._read() as con:
            if full:
                report = check(con, self.policy)
                scope = None
            else:
                aliases = Aliases(con)
                aliases.resolve(n for n, _ in writes | reads)
                scope = {(aliases.canonical(d), c) for d, c in writes}
                reads_c = {(aliases.canonical(d), c) for d, c in reads}
                # the data of those columns as it is now (a replacing write may have cleared a violation)
                report = check(con, self.policy, scope=scope, reads=reads_c)
        now = utcnow()
        found = {violation_id(v): v for v in report["violations"]}
        fresh: list[dict[str, Any]] = []
        with self._cond:
            for vid, v in found.items():
                old = self._known.get(vid)
                if old is None or old["resolved_at"] is not None:
                    row = {"violation_id": vid, "rule": v["rule"], "kind": v["kind"], "label": v["label"],
                           "dataset": v["dataset"], "column_name": v["column"], "detail": _json(v), "found_at": now,
                           "last_seen": v["last_seen"], "notified_at": None, "attempts": 0, "gave_up_at": None,
                           "last_error": None, "resolved_at": None}
                    fresh.append(v)
                elif old["last_seen"] != v["last_seen"]:
                    row = {**old, "last_seen": v["last_seen"], "detail": _json(v)}
                else:
                    continue
                self._known[vid] = self._unsaved[vid] = row
            for vid, row in self._known.items():
                if row["resolved_at"] is not None or vid in found or row["kind"] == "readers":
                    continue
                if scope is None or (row["dataset"], row["column_name"]) in scope:
                    self._known[vid] = self._unsaved[vid] = {**row, "resolved_at": now}
        if self.webhook is not None:
            for v in fresh:
                self.webhook.submit({**v, "id": violation_id(v)})
        if fresh:
            log.warning("lineage-listener: %d new policy violation%s (%s)", len(fresh), "" if len(fresh) == 1 else "s",
                        ", ".join(sorted({v["rule"] for v in fresh})))

    def _delivered(self, violation: dict[str, Any], ok: bool, attempts: int, error: str | None) -> None:
        vid = violation.get("id") or violation_id(violation)
        now = utcnow()
        with self._cond:
            row = self._known.get(vid)
            if row is None:
                return
            row = {**row, "attempts": attempts, "last_error": error,
                   "notified_at": now if ok else row["notified_at"], "gave_up_at": None if ok else now}
            self._known[vid] = self._unsaved[vid] = row
        self._flush()

    def _flush(self) -> None:
        """Write the rows changed since the last write (kept for the next try if the queue is full)."""
        with self._cond:
            rows, self._unsaved = self._unsaved, {}
        if not rows:
            return
        batch = Batch()
        for row in rows.values():
            batch.add(ViolationRow(**{c: _cell(row[c]) for c in ViolationRow._fields}))
        try:
            self._write(batch)
        except Exception as exc:  # noqa: BLE001 - a full queue: kept, written with the next change
            log.warning("lineage-listener: policy violations not saved yet (%s); kept for the next write", exc)
            with self._cond:
                self._unsaved = {**rows, **self._unsaved}

    def _load(self, con: duckdb.DuckDBPyConnection) -> None:
        try:
            rows = con.execute(f"SELECT {', '.join(_ROW)} FROM policy_violations").fetchall()
        except duckdb.CatalogException:  # a store not migrated yet: nothing found before
            return
        with self._cond:
            for r in rows:
                self._known[r[0]] = dict(zip(_ROW, r))


def _cell(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
