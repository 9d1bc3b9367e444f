"""Consecutive messages merged into one batch, only while that writes what writing them one by one would.

A store write costs about the same for one message or hundreds (statements, index lookups), so a
consumer catching up merges messages. :func:`~lineage_listener.store.upsert.write_batch` writes a
batch's rows of one key as if they had come one batch after another (an upserted table's rows of
one key are collapsed by its merge rule, in their order, or written in rounds), a query's edges
captured again add only what the query did not hold, and appended rows are appended: so messages
are simply concatenated. Three things are not order-free across a batch and start a new chunk:

- a capture (query, run, time) whose edges are in the chunk already: one batch would store them as
  one capture, one by one they are two;
- a run reopened (:class:`~lineage_listener.store.rows.RunReopened`) whose ``runs`` row is in the
  chunk already: the reopening goes first in a batch, after that row one by one;
- label rows when the chunk holds label rows (set, unset, a file loaded again: a batch applies
  them by kind, not in their order, and records one change per key).

A row of a table whose merge rule collapses a key's rows (``COLLAPSE``: runs, datasets, columns) that
is the same as the chunk's last row of its key is left out: each rule of
:data:`~lineage_listener.store.rows.RULES` gives a value merged twice what it gives merged once, and
messages of one application repeat its run and the datasets its queries share.

>>> from lineage_listener.store.batch import Batch
>>> from lineage_listener.store.rows import row_of
>>> def run(ended):
...     b = Batch(); b.add(row_of("runs", ("a", "a", "job", None, None, None, "t0", ended))); return b
>>> c = Chunk()
>>> c.take(run("t1")), c.take(run(None)), len(c.batch.rows["runs"])
(True, True, 2)
>>> reopened = run(None); reopened.add(row_of("run_reopened", ("a",)))
>>> c.take(reopened)
False
"""
from __future__ import annotations

from typing import Any

from lineage_listener.store.batch import LABEL_TABLES, Batch
from lineage_listener.store.rows import TABLES

_RUN_ID, _QUERY_ID, _CAPTURED_AT = 0, 0, 10  # runs.run_id; column_lineage.query_id, .captured_at
_EDGE_RUN = 1                                 # column_lineage.run_id
#: Tables whose rows of one key collapse by :data:`~lineage_listener.store.rows.RULES`, and where their key is.
_COLLAPSED = {table: tuple(cls._fields.index(k) for k in cls.KEY) for table, cls in TABLES.items() if cls.COLLAPSE}


class Chunk:
    """A batch being built from messages; :meth:`take` says whether a message's rows joined it."""

    def __init__(self, max_rows: int = 5000) -> None:
        self.max_rows = max_rows
        self.batch = Batch()
        self.messages = 0
        self._rows = 0
        self._captures: set[tuple[Any, Any, Any]] = set()
        self._runs: set[Any] = set()
        self._labels = False
        self._last: dict[str, dict[Any, tuple]] = {table: {} for table in _COLLAPSED}  # key -> its last row

    def __len__(self) -> int:
        return self._rows

    def take(self, batch: Batch) -> bool:
        """Add ``batch`` if the result writes the same rows as the two in turn; else False (unchanged)."""
        rows = batch.rows
        size = len(batch)
        if self.messages and self._rows + size > self.max_rows:
            return False
        captures = {(r[_QUERY_ID], r[_EDGE_RUN], r[_CAPTURED_AT]) for r in rows["column_lineage"]}
        labels = any(rows[t] for t in LABEL_TABLES)
        if (captures & self._captures or (labels and self._labels)
                or any(r[0] in self._runs for r in rows["run_reopened"])):
            return False
        for table, taken in rows.items():
            if not taken:
                continue
            at = _COLLAPSED.get(table)
            if at is None:
                self.batch.rows[table].extend(taken)
                self._rows += len(taken)
                continue
            last, into = self._last[table], self.batch.rows[table]
            for row in taken:
                key = row[at[0]] if len(at) == 1 else tuple(row[i] for i in at)
                if last.get(key) != row:
                    last[key] = row
                    into.append(row)
                    self._rows += 1
        self._captures |= captures
        self._runs.update(r[_RUN_ID] for r in rows["runs"])
        self._labels = self._labels or labels
        self.messages += 1
        return True
