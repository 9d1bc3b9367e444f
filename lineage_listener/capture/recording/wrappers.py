"""The CTAS / ``saveAsTable`` fold, capture side: two events, one logical write.

Spark runs ``CREATE TABLE t AS SELECT ...`` and ``df.write.saveAsTable("t")`` as a wrapper
command (``CreateDataSourceTableAsSelectCommand``, ``SaveAsV1TableCommand``...,
:data:`~lineage_listener.plan.classes.WRAPPER_COMMANDS`) that runs a nested write
(``InsertIntoHadoopFsRelationCommand``) of the same query into the table's location. Both reach
the listener: the nested write first, naming the table's *path* as its target (it writes files),
then the wrapper, with a later ``QueryExecution`` id, naming the *table*. The wrapper's plan is the
nested write's query again.

So the capture records one write, under the table's name, and this module decides it, for both
events (:class:`LastWrites`, one per capture loop):

- :meth:`LastWrites.record` records every envelope the capture loop reads: the nested write is
  recorded as any write (:meth:`~lineage_listener.capture.recording.records.Recorder.record`), and the
  :class:`Write` its rows hold is remembered per run (its ``queries`` row, ``QueryExecution`` id
  and target columns, :func:`written`);
- the wrapper *folds* into it (a wrapper command whose id is earlier than the remembered write's):
  :func:`fold` turns it into rows, nothing is walked: the nested write's ``queries`` row upgraded
  (the wrapper's action, command, SQL text, status and the table as target), the table's
  ``datasets`` row and ``dataset_columns`` rows (the nested write's columns), and a
  :class:`~lineage_listener.store.rows.Retarget` instruction (query, table, path); the upgraded
  write is remembered in turn;
- :meth:`LastWrites.target_only` asks the same before the wrapper is read: the capture loop gives
  it to the reader as its request to read only the write target of such an event
  (:meth:`~lineage_listener.capture.reading.queryreader.QueryReader.read`), whose plan is that write's query again.

The store applies the instruction (:mod:`lineage_listener.store.retarget`): the query's edges
name the table, and the path's ``datasets`` / ``dataset_columns`` rows go when nothing else names
the path. The store ends up holding one ``queries`` row, the table's dataset and columns, and
edges into the table; the path is the table's ``location``, never a dataset of its own.

>>> from types import SimpleNamespace
>>> from lineage_listener.store.rows import QueryRow
>>> writes = LastWrites()
>>> row = QueryRow(query_id="app:7:x", run_id="app", action="command",
...                command="InsertIntoHadoopFsRelationCommand", sql_text=None, status="succeeded", error=None,
...                duration_ms=5, captured_at=None, target_dataset="file:/w/t")
>>> class Recorder:  # stands in for the capture's: the nested write's rows
...     def record(self, env): return [row]
>>> nested = SimpleNamespace(func_name="command", root="InsertIntoHadoopFsRelationCommand", run={"app_id": "app"},
...                          qe_id=7, stream=None, captured_at=None)
>>> writes.record(nested, Recorder()) == [row]
True
>>> writes.target_only("CreateDataSourceTableAsSelectCommand", "app", 6), writes.target_only("Project", "app", 6)
(True, False)
>>> writes.target_only("CreateDataSourceTableAsSelectCommand", "app", 8)  # a later write: not its wrapper
False
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from lineage_listener.capture.recording.records import Row, iso
from lineage_listener.lineage.datasets import datasets_of
from lineage_listener.lineage.writes import mode_of
from lineage_listener.plan.classes import WRAPPER_COMMANDS
from lineage_listener.store.rows import DatasetColumnRow, DatasetRow, QueryRow, Retarget

if TYPE_CHECKING:
    from lineage_listener.capture.reading.queryreader import Envelope
    from lineage_listener.capture.recording.records import Recorder


class Write(NamedTuple):
    """A run's most recent write: its ``queries`` row, its ``QueryExecution`` id, its target's columns."""

    row: QueryRow
    qe_id: int | None
    columns: Sequence[DatasetColumnRow]


class LastWrites:
    """The memory of each run's last write, and the one decision whether an event folds into it."""

    def __init__(self) -> None:
        self._last: dict[str, Write] = {}  # run_id -> its most recent write

    def record(self, env: "Envelope", recorder: "Recorder") -> list[Row]:
        """``env``'s rows: folded into the write it wraps (:func:`fold`), or as the recorder records
        it; the write they leave is remembered for the next wrapper."""
        inner = self._inner_of(env)
        now = iso(env.captured_at)
        # a wrapper that folds: its query is the nested write's, recorded already; nothing is walked
        rows = recorder.record(env) if inner is None else recorder.event_rows(env)
        rows, write = (rows, written(env, rows)) if inner is None else fold(env, inner, rows, now)
        if write is not None:  # its run's latest write
            self._last[write.row.run_id] = write
        return rows

    def target_only(self, root: str | None, run_id: str, qe_id: int | None) -> bool:
        """Whether a ``root`` event of ``run_id`` with id ``qe_id`` folds into its remembered write:
        then only its write target needs reading."""
        return root in WRAPPER_COMMANDS and self._inner(run_id, qe_id) is not None

    def _inner_of(self, env: "Envelope") -> Write | None:
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


def written(env: "Envelope", rows: list[Row]) -> Write | None:
    """The write ``env``'s rows record: their one ``queries`` row, with a target, and that target's
    ``dataset_columns`` rows (None: no write, a stream's micro-batch, or the several writes of a
    multi-insert, one ``queries`` row each)."""
    if env.stream is not None:
        return None
    queries = [r for r in rows if isinstance(r, QueryRow)]
    if len(queries) != 1 or queries[0].target_dataset is None:
        return None
    target = queries[0].target_dataset
    return Write(queries[0], env.qe_id, [r for r in rows if isinstance(r, DatasetColumnRow) and r.dataset == target])


def fold(env: "Envelope", inner: Write, event_rows: list[Row], now: str | None) -> tuple[list[Row], Write]:
    """The rows of wrapper event ``env`` folded into ``inner`` (the write it wraps), and the upgraded
    write: the event's own rows (``event_rows``: its run's, what the listener could not read), the
    nested write's ``queries`` row upgraded and, when the wrapper names a table, its dataset, its
    columns and the :class:`~lineage_listener.store.rows.Retarget` of the write's edges to it (``now``:
    when the wrapper was captured)."""
    rows = list(event_rows)
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
    rows.append(upgraded)
    if target is None or target.name == row.target_dataset:
        return rows, write
    path = row.target_dataset or ""
    location = target.location or (path if "://" in path or path.startswith("file:") else None)
    rows.append(DatasetRow(dataset=target.name, kind=target.kind, format=target.format, location=location,
                           properties=target.properties_json(), first_seen=now, last_seen=now))
    for column in inner.columns:
        rows.append(column._replace(dataset=target.name, first_seen=now, last_seen=now))
    rows.append(Retarget(query_id=row.query_id, target_dataset=target.name, previous_target=row.target_dataset))
    return rows, write


__all__ = ["LastWrites", "Write", "fold", "written"]
