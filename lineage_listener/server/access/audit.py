"""The audit of a lineage server with ``--access``: every request that carried an identity or was
refused becomes an ``audit_log`` row (docs/security.md, "The audit").

Rows wait here and go to the store through the server's one writer (:mod:`lineage_listener.store.group_writer`)
a group at a time, at most every :data:`EVERY` seconds, like any batch: a busy store spools them beside
it, and what waits at shutdown is written before the writer lets the store go.
"""
from __future__ import annotations

import logging
from collections import deque

from lineage_listener.ownthread import OwnThread
from lineage_listener.store.batch import Batch
from lineage_listener.store.group_writer import GroupWriter, QueueFull
from lineage_listener.store.rows import AuditRow

log = logging.getLogger(__name__)

#: Seconds between two hand-overs to the writer.
EVERY = 1.0
#: Rows in one batch at most.
BATCH_ROWS = 2000
#: Rows waiting at most while the writer refuses more (then the oldest go, counted and logged).
PENDING = 200_000


class Audit:
    """``record(row)`` from any thread; a thread of its own hands the rows to ``writer``."""

    def __init__(self, writer: GroupWriter, every: float = EVERY) -> None:
        self.writer, self.every = writer, every
        self._thread = OwnThread("lineage-audit", self._run)
        self._cond = self._thread.cond  # the rows waiting are the thread's state
        self._rows: deque[AuditRow] = deque()
        self.lost = 0
        self._thread.start()

    def record(self, row: AuditRow) -> None:
        with self._cond:
            self._rows.append(row)
            if len(self._rows) > PENDING:
                self._rows.popleft()
                self.lost += 1
                if self.lost == 1 or self.lost % 10_000 == 0:
                    log.warning("lineage-listener serve: the store writer takes no audit rows; %d dropped", self.lost)
            if len(self._rows) >= BATCH_ROWS:
                self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._thread.stopping:
                    self._cond.wait(self.every)
                stopping = self._thread.stopping
            self.flush()
            if stopping:
                return

    def flush(self) -> None:
        """Hand what waits to the writer (what it refuses, a full queue, waits for the next time)."""
        while True:
            with self._cond:
                rows = [self._rows.popleft() for _ in range(min(BATCH_ROWS, len(self._rows)))]
            if not rows:
                return
            batch = Batch()
            for row in rows:
                batch.add(row)
            try:
                self.writer.submit(batch, self._answered, quiet=True)
            except QueueFull:
                with self._cond:
                    self._rows.extendleft(reversed(rows))
                return

    @staticmethod
    def _answered(answer: tuple[int, dict]) -> None:
        status, body = answer
        if status >= 400:
            log.warning("lineage-listener serve: audit rows were refused by the store: %s", body.get("detail"))

    def close(self) -> None:
        """Stop, handing the writer what waits (call before the writer closes)."""
        self._thread.stop(30)
