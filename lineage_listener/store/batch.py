"""A batch of rows for the store's tables, in column order; JSON-able for the spool.

Every row is redacted as it is added (:func:`~lineage_listener.redact.redact_row`):
this is the one door into the store, the spool and anything sent on from a batch.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lineage_listener.redact import redact_row

#: Column order of each table's rows in a batch (matches schema.sql).
COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": ("run_id", "app_id", "app_name", "spark_version", "spark_user", "master", "started_at", "ended_at"),
    "queries": ("query_id", "run_id", "action", "command", "sql_text", "status", "error", "duration_ms",
                "captured_at", "target_dataset"),
    "datasets": ("dataset", "kind", "format", "location", "properties", "first_seen", "last_seen"),
    "dataset_columns": ("dataset", "column_name", "data_type", "nullable", "first_seen", "last_seen", "ordinal"),
    "column_lineage": ("query_id", "run_id", "target_dataset", "target_column", "source_dataset",
                       "source_column", "transform", "kind", "expression", "masking", "captured_at"),
    "capture_errors": ("captured_at", "run_id", "query_id", "stage", "error"),
    "openlineage_sent": ("query_id", "endpoint", "sent_at"),
    "streams": ("query_id", "stream_id", "stream_run_id", "name", "run_id", "target_dataset", "lineage_hash",
                "first_batch_id", "last_batch_id", "first_batch_at", "last_batch_at", "batch_count"),
    # Not a table: edges of query_id written to the path of a table (a CTAS/saveAsTable's
    # nested write) now name the table; the path dataset goes if nothing else uses it.
    "retarget": ("query_id", "target_dataset", "previous_target"),
    # Not a table: when queries started (OpenLineage START events; null: not in this batch), kept
    # in query_starts; an ended query's duration_ms is computed from it, whichever came first.
    "query_started": ("query_id", "started_at"),
    # Classifications (store/labels.py): labels set, removed, a classifications file loaded again,
    # functions declared as masking; and policy violations a lineage server found.
    "column_labels": ("dataset", "column_name", "label", "value", "source", "origin", "set_by", "set_at"),
    "label_unset": ("dataset", "column_name", "label", "source", "changed_by", "changed_at"),
    "label_file": ("origin", "changed_by", "changed_at"),
    "masking_functions": ("name", "origin", "added_at"),
    "policy_violations": ("violation_id", "rule", "kind", "label", "dataset", "column_name", "detail", "found_at",
                          "last_seen", "notified_at", "attempts", "gave_up_at", "last_error", "resolved_at"),
    # Not a table: runs whose ended_at is cleared before this batch's runs rows are written (a capture
    # enabled again in an application whose earlier capture was disabled: the run goes on).
    "run_reopened": ("run_id",),
}

#: Entries of COLUMNS that are instructions to the writer, not tables.
PSEUDO_TABLES = frozenset({"retarget", "query_started", "run_reopened"})
#: Entries of COLUMNS written by :func:`~lineage_listener.store.labels.write_labels`.
LABEL_TABLES = frozenset({"column_labels", "label_unset", "label_file", "masking_functions"})
#: Entries whose rows belong to no query (:meth:`Batch.by_query` keeps them with the first part).
NO_QUERY = LABEL_TABLES | {"policy_violations"}

#: Tables whose rows every query of a batch may share (upserts): kept in each part of :meth:`Batch.by_query`.
SHARED = frozenset({"runs", "run_reopened", "datasets", "dataset_columns"})
#: Where a row names its query, for the tables where it is not first.
QUERY_ID_AT = {"capture_errors": 2}

#: Primary key of the tables written as upserts (the rest are appended).
KEYS: dict[str, tuple[str, ...]] = {
    "runs": ("run_id",), "queries": ("query_id",), "datasets": ("dataset",),
    "dataset_columns": ("dataset", "column_name"),
    "openlineage_sent": ("query_id", "endpoint"),
    "streams": ("query_id",),
    "policy_violations": ("violation_id",),
}


@dataclass
class Batch:
    """Rows to write in one transaction, per table. Timestamps are ISO strings."""

    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=lambda: {t: [] for t in COLUMNS})

    def add(self, table: str, row: tuple[Any, ...]) -> None:
        self.rows[table].append(redact_row(row))

    def extend(self, other: "Batch") -> None:
        for table, rows in other.rows.items():
            self.rows[table].extend(rows)

    def __len__(self) -> int:
        return sum(len(r) for r in self.rows.values())

    def to_json(self) -> str:
        return json.dumps({t: [list(r) for r in rows] for t, rows in self.rows.items() if rows}, default=str)

    @classmethod
    def from_json(cls, text: str) -> "Batch":
        b = cls()
        for table, rows in json.loads(text).items():
            if table in b.rows:  # through add: a spool file of an older version may hold secrets
                for r in rows:
                    b.add(table, tuple(r))
        return b

    def by_query(self) -> list["Batch"]:
        """This batch as one batch per query: each query's own rows, with the rows every query
        shares (runs, datasets, columns: upserts) in each; rows of no query go with the first.

        >>> b = Batch()
        >>> b.add("runs", ("r",)); b.add("queries", ("q1",)); b.add("queries", ("q2",))
        >>> [(len(p.rows["runs"]), [r[0] for r in p.rows["queries"]]) for p in b.by_query()]
        [(1, ['q1']), (1, ['q2'])]
        """
        parts: dict[Any, Batch] = {}

        def part(query_id: Any) -> "Batch":
            if query_id not in parts:
                parts[query_id] = Batch({t: list(self.rows[t]) if t in SHARED else [] for t in COLUMNS})
            return parts[query_id]
        for table, rows in self.rows.items():
            if table in SHARED:
                continue
            at = QUERY_ID_AT.get(table, 0)
            for r in rows:
                part(r[at] if len(r) > at and table not in NO_QUERY else None).rows[table].append(r)
        loose = parts.pop(None, None)
        out = list(parts.values()) or ([loose] if loose is not None else [Batch({t: list(r) for t, r in self.rows.items()})])
        if loose is not None and parts:
            out[0].extend(Batch({t: r for t, r in loose.rows.items() if t not in SHARED}))
        return out

    def query_ids(self) -> set[str]:
        return {r[0] for r in self.rows["column_lineage"]}
