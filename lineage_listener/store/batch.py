"""A batch of rows for the store's tables, in column order; JSON-able for the spool.

Every row is redacted as it is added (:func:`~lineage_listener.redact.changed_texts`, once per distinct text):
this is the one door into the store, the spool and anything sent on from a batch.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lineage_listener.redact import changed_texts
from lineage_listener.store.rows import LABEL_ROWS, TABLES, row_of

#: Column order of each table's rows in a batch: the row types' fields (:mod:`~lineage_listener.store.rows`).
COLUMNS: dict[str, tuple[str, ...]] = {table: cls._fields for table, cls in TABLES.items()}
#: Entries written by :func:`~lineage_listener.store.labels.write_labels`.
LABEL_TABLES = frozenset(cls.TABLE for cls in LABEL_ROWS)
#: Tables whose rows every query of a batch may share (upserts): kept in each part of :meth:`Batch.by_query`.
SHARED = frozenset(table for table, cls in TABLES.items() if cls.SHARED)
#: Where a row names its query (None: it belongs to no query; :meth:`Batch.by_query` keeps it with the first part).
QUERY_ID_AT = {table: cls._fields.index("query_id") if "query_id" in cls._fields else None
               for table, cls in TABLES.items()}
#: Primary key of the tables written as upserts (the rest are appended).
KEYS: dict[str, tuple[str, ...]] = {table: cls.KEY for table, cls in TABLES.items() if cls.KEY}


@dataclass
class Batch:
    """Rows to write in one transaction, per table. Timestamps are ISO strings."""

    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=lambda: {t: [] for t in TABLES})

    def add(self, row: tuple[Any, ...]) -> None:
        """Add a typed row (:mod:`~lineage_listener.store.rows`), redacted.

        >>> from lineage_listener.store.rows import QueryStarted
        >>> b = Batch(); b.add(QueryStarted(query_id="q", started_at="2026-01-01 10:00:00"))
        >>> b.rows["query_started"]
        [QueryStarted(query_id='q', started_at='2026-01-01 10:00:00')]
        """
        self.add_all((row,))

    def add_all(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Add typed rows, each redacted: a query's rows, built first, enter the batch at once.

        >>> from lineage_listener.store.rows import QueryStarted
        >>> b = Batch(); b.add_all([QueryStarted("q1", None), QueryStarted("q2", None)])
        >>> [r.query_id for r in b.rows["query_started"]]
        ['q1', 'q2']
        """
        rows = rows if isinstance(rows, (list, tuple)) else list(rows)
        changed = changed_texts({v for row in rows for v in row if v.__class__ is str})
        if not changed:  # the usual case: no text of these rows holds a secret
            for row in rows:
                self.rows[row.TABLE].append(row)  # type: ignore[attr-defined]
            return
        for row in rows:
            if any(v.__class__ is str and v in changed for v in row):
                row = row._make(changed.get(v, v) if v.__class__ is str else v for v in row)  # type: ignore[attr-defined]
            self.rows[row.TABLE].append(row)  # type: ignore[attr-defined]

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
                    b.add(row_of(table, r))
        return b

    def by_query(self) -> list["Batch"]:
        """This batch as one batch per query: each query's own rows, with the rows every query
        shares (runs, datasets, columns: upserts) in each; rows of no query go with the first.

        >>> b = Batch()
        >>> b.add(row_of("runs", ["r"])); b.add(row_of("queries", ["q1"])); b.add(row_of("queries", ["q2"]))
        >>> [(len(p.rows["runs"]), [r[0] for r in p.rows["queries"]]) for p in b.by_query()]
        [(1, ['q1']), (1, ['q2'])]
        """
        parts: dict[Any, Batch] = {}

        def part(query_id: Any) -> "Batch":
            if query_id not in parts:
                parts[query_id] = Batch({t: list(self.rows[t]) if t in SHARED else [] for t in TABLES})
            return parts[query_id]
        for table, rows in self.rows.items():
            if table in SHARED:
                continue
            at = QUERY_ID_AT[table]
            for r in rows:
                part(r[at] if at is not None and len(r) > at else None).rows[table].append(r)
        loose = parts.pop(None, None)
        out = list(parts.values()) or ([loose] if loose is not None else [Batch({t: list(r) for t, r in self.rows.items()})])
        if loose is not None and parts:
            out[0].extend(Batch({t: r for t, r in loose.rows.items() if t not in SHARED}))
        return out

    def query_ids(self) -> set[str]:
        return {r[0] for r in self.rows["column_lineage"]}
