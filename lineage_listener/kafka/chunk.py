"""Consecutive messages merged into one batch, only while that writes what writing them one by one would.

A store write costs about the same for one message or hundreds (statements, index lookups), so a
consumer catching up merges messages. One batch keeps one row per key of the upserted tables
(``write_batch`` dedupes, the last row wins), which equals writing the messages in turn when the
later row takes nothing away: the same row again; a dataset or column seen again (only its
first/last time differ: kept as the earliest and the latest); a run or query row that only adds
what the earlier lacked. Anything else (a query's edges sent in two messages, an OpenLineage run
still ``running``) starts a new chunk.

>>> from lineage_listener.store.batch import Batch
>>> from lineage_listener.store.rows import row_of
>>> def ds(seen):
...     b = Batch(); b.add(row_of("datasets", ("t", "table", None, None, None, seen, seen))); return b
>>> c = Chunk()
>>> c.take(ds("2026-01-01 10:00:00")), c.take(ds("2026-01-01 11:00:00"))
(True, True)
>>> c.batch.rows["datasets"][0][-2:]
('2026-01-01 10:00:00', '2026-01-01 11:00:00')
"""
from __future__ import annotations

from typing import Any

from lineage_listener.store.batch import COLUMNS, KEYS, Batch
from lineage_listener.store.rows import row_of

#: (first_seen, last_seen) positions of the tables whose rows fold to the earliest and the latest.
_SEEN = {t: (COLUMNS[t].index("first_seen"), COLUMNS[t].index("last_seen")) for t in ("datasets", "dataset_columns")}
#: queries columns the store keeps when a later row has them null (coalesce).
_QUERY_KEPT = (COLUMNS["queries"].index("sql_text"), COLUMNS["queries"].index("duration_ms"),
               COLUMNS["queries"].index("target_dataset"))
_STATUS = COLUMNS["queries"].index("status")
#: The upserted tables, but ``streams``: write_batch folds a stream's micro-batches itself, in turn or not.
_KEYED = {t: k for t, k in KEYS.items() if t != "streams"}


class Chunk:
    """A batch being built from messages; :meth:`take` says whether a message's rows joined it."""

    def __init__(self, max_rows: int = 5000) -> None:
        self.max_rows = max_rows
        self.batch = Batch()
        self.messages = 0
        self._at: dict[str, dict[tuple, int]] = {t: {} for t in _KEYED}  # key -> index in batch.rows[t]
        self._edge_queries: set[Any] = set()

    def __len__(self) -> int:
        return len(self.batch)

    def take(self, batch: Batch) -> bool:
        """Merge ``batch`` if the result writes the same rows as the two in turn; else False (unchanged)."""
        if self.messages and len(self.batch) + len(batch) > self.max_rows:
            return False
        plan: list[tuple[str, int | None, tuple]] = []  # (table, index to replace or None to append, row)
        pending: dict[str, dict[tuple, int]] = {t: {} for t in _KEYED}
        for table, rows in batch.rows.items():
            keys = _KEYED.get(table)
            for row in rows:
                if keys is None:
                    plan.append((table, None, row))
                    continue
                key = tuple(row[COLUMNS[table].index(k)] for k in keys)
                if key in pending[table]:  # twice in the message itself: write_batch keeps the last
                    plan[pending[table][key]] = (table, plan[pending[table][key]][1], row)
                    continue
                at = self._at[table].get(key)
                if at is None:
                    pending[table][key] = len(plan)
                    plan.append((table, None, row))
                    continue
                merged = _merged(table, self.batch.rows[table][at], row)
                if merged is None:
                    return False
                pending[table][key] = len(plan)
                plan.append((table, at, merged))
        edge_queries = {r[0] for r in batch.rows["column_lineage"]}
        if edge_queries & self._edge_queries:
            return False  # one capture per message that adds edges: kept apart
        for table, at, row in plan:
            if at is not None:
                self.batch.rows[table][at] = row
            elif table in _KEYED:
                key = tuple(row[COLUMNS[table].index(k)] for k in _KEYED[table])
                self._at[table][key] = len(self.batch.rows[table])
                self.batch.rows[table].append(row)
            else:
                self.batch.rows[table].append(row)
        self._edge_queries |= edge_queries
        self.messages += 1
        return True


def _merged(table: str, old: tuple, new: tuple) -> tuple | None:
    """The one row (of ``table``'s row type) that writes what ``old`` then ``new`` would, or None
    when there is none.

    >>> started, ended = ("a", "a", "job", None, None, None, "t0", None), ("a", "a", "job", None, None, None, "t0", "t1")
    >>> _merged("runs", started, ended)
    RunRow(run_id='a', app_id='a', app_name='job', spark_version=None, spark_user=None, master=None, started_at='t0', ended_at='t1')
    >>> _merged("runs", ended, started)
    """
    if old == new:
        return row_of(table, new)
    if table in _SEEN:
        first, last = _SEEN[table]
        if _without(old, first, last) == _without(new, first, last):
            out = list(new)
            out[first] = _least(old[first], new[first])
            out[last] = max(v for v in (old[last], new[last]) if v is not None) if (old[last] or new[last]) else None
            return row_of(table, out)
        return None
    if table == "runs":  # coalesce(new, old) everywhere but started_at: new may only fill what old lacks
        return row_of(table, new) if all(o is None or o == n for o, n in zip(old, new)) else None
    if table == "queries":
        if "running" in (old[_STATUS], new[_STATUS]):
            return None
        return row_of(table, new) if all(new[i] is not None or old[i] is None for i in _QUERY_KEPT) else None
    return None


def _without(row: tuple, *positions: int) -> tuple:
    return tuple(v for i, v in enumerate(row) if i not in positions)


def _least(a: Any, b: Any) -> Any:
    return min(v for v in (a, b) if v is not None) if (a is not None or b is not None) else None
