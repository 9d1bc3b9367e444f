"""The CTAS / ``saveAsTable`` fold, capture side: two events, one logical write.

Spark runs ``CREATE TABLE t AS SELECT ...`` and ``df.write.saveAsTable("t")`` as a wrapper
command (``CreateDataSourceTableAsSelectCommand``, ``SaveAsV1TableCommand``...,
:data:`~lineage_listener.plan.classes.WRAPPER_COMMANDS`) that runs a nested write
(``InsertIntoHadoopFsRelationCommand``) of the same query into the table's location. Both reach
the listener: the nested write first, naming the table's *path* as its target (it writes files),
then the wrapper, with a later ``QueryExecution`` id, naming the *table*. The wrapper's plan is the
nested write's query again.

So the capture records one write, under the table's name:

- the nested write is read, walked and recorded as any write; the capture loop
  (:mod:`lineage_listener.capture.pipeline`) remembers the :class:`Write` the recorder returns
  (its ``queries`` row, ``QueryExecution`` id and target columns, per run: :meth:`LastWrites.remember`);
- the wrapper *folds* into it (a wrapper command whose id is earlier than the remembered write's):
  the reader reads only its target, not its plan (:meth:`LastWrites.folds`, one of the reader's
  head filters, :mod:`~lineage_listener.capture.skips`); the capture loop finds the write it folds
  into (:meth:`LastWrites.inner`) and nothing is walked;
- :func:`fold` turns it into rows: the nested write's ``queries`` row upgraded (the wrapper's
  action, command, SQL text, status and the table as target), the table's ``datasets`` row and
  ``dataset_columns`` rows (the nested write's columns), and a
  :class:`~lineage_listener.store.rows.Retarget` instruction (query, table, path); the upgraded
  write is remembered in turn.

The store applies the instruction (:mod:`lineage_listener.store.retarget`): the query's edges
name the table, and the path's ``datasets`` / ``dataset_columns`` rows go when nothing else names
the path. The store ends up holding one ``queries`` row, the table's dataset and columns, and
edges into the table; the path is the table's ``location``, never a dataset of its own.

>>> from lineage_listener.store.rows import QueryRow
>>> writes = LastWrites()
>>> row = QueryRow(query_id="app:7:x", run_id="app", action="command",
...                command="InsertIntoHadoopFsRelationCommand", sql_text=None, status="succeeded", error=None,
...                duration_ms=5, captured_at=None, target_dataset="file:/w/t")
>>> writes.remember(Write(row, 7, []))
>>> writes.folds("CreateDataSourceTableAsSelectCommand", "app", 6), writes.folds("Project", "app", 6)
(True, False)
>>> writes.folds("CreateDataSourceTableAsSelectCommand", "app", 8)  # a later write: not its wrapper
False
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from lineage_listener.lineage.datasets import datasets_of
from lineage_listener.lineage.writes import mode_of
from lineage_listener.plan.classes import WRAPPER_COMMANDS
from lineage_listener.store.rows import DatasetColumnRow, DatasetRow, QueryRow, Retarget

if TYPE_CHECKING:
    from lineage_listener.capture.queryreader import Envelope


class Write(NamedTuple):
    """A run's most recent write: its ``queries`` row, its ``QueryExecution`` id, its target's columns."""

    row: QueryRow
    qe_id: int | None
    columns: Sequence[DatasetColumnRow]


class LastWrites:
    """The memory of each run's last write: whether a wrapper event folds into it, and which."""

    def __init__(self) -> None:
        self._last: dict[str, Write] = {}  # run_id -> its most recent write

    def remember(self, write: Write | None) -> None:
        """``write`` is its run's latest write (None: the event recorded was no write)."""
        if write is not None:
            self._last[write.row.run_id] = write

    def folds(self, root: str | None, run_id: str, qe_id: int | None) -> bool:
        """Whether a ``root`` event of ``run_id`` with id ``qe_id`` folds into its remembered write."""
        return root in WRAPPER_COMMANDS and self._inner(run_id, qe_id) is not None

    def inner(self, env: "Envelope") -> Write | None:
        """The write wrapper event ``env`` folds into, or None: ``env`` is recorded as itself."""
        if env.stream is not None or env.root not in WRAPPER_COMMANDS:
            return None
        return self._inner(env.run["app_id"], env.qe_id)

    def _inner(self, run_id: str, qe_id: int | None) -> Write | None:
        """The nested write a wrapper with id ``qe_id`` wraps (fired just before it: a later id), if known."""
        inner = self._last.get(run_id)
        if inner is None or inner.qe_id is None or qe_id is None or inner.qe_id <= qe_id:
            return None
        return inner


def fold(env: "Envelope", inner: Write, now: str | None) -> tuple[list[tuple[Any, ...]], Write]:
    """The rows of wrapper event ``env`` folded into ``inner`` (:meth:`LastWrites.inner`), and the
    upgraded write: the nested write's ``queries`` row upgraded and, when the wrapper names a table,
    its dataset, its columns and the :class:`~lineage_listener.store.rows.Retarget` of the write's
    edges to it."""
    try:
        target = datasets_of(env.target)[0] if env.target else None
    except Exception:  # noqa: BLE001 - facts we cannot name: the inner write's target stays
        target = None
    row = inner.row
    upgraded = row._replace(action=env.func_name, command=env.root, sql_text=env.sql_text or row.sql_text,
                            status="failed" if env.error else row.status, error=env.error or row.error,
                            duration_ms=env.duration_ms if env.duration_ms is not None else row.duration_ms,
                            target_dataset=target.name if target is not None else row.target_dataset,
                            write_mode=mode_of(env.root, env.target) or row.write_mode)  # a Hive or V2 CTAS replaces
    write = Write(upgraded, env.qe_id, inner.columns)
    if target is None or target.name == row.target_dataset:
        return [upgraded], write
    path = row.target_dataset or ""
    location = target.location or (path if "://" in path or path.startswith("file:") else None)
    rows: list[tuple[Any, ...]] = [upgraded, DatasetRow(
        dataset=target.name, kind=target.kind, format=target.format, location=location,
        properties=target.properties_json(), first_seen=now, last_seen=now)]
    for column in inner.columns:
        rows.append(column._replace(dataset=target.name, first_seen=now, last_seen=now))
    rows.append(Retarget(query_id=row.query_id, target_dataset=target.name, previous_target=row.target_dataset))
    return rows, write


__all__ = ["LastWrites", "Write", "fold"]
