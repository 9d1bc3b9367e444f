"""Index lookups in the store's SQL: rows found by an indexed column, apart from other conditions.

DuckDB reads an ART index (``edges_target``, ``edges_source``, ``edge_captures_set``, a primary
key) only when a scan's own filters are on the indexed column alone (an IN list, or the few keys
of a join) and the rows it finds are few for their table: on the store's read connections, at most
0.1% of its rows (:data:`~lineage_listener.store.connection.READ_SETTINGS`). Fewer rows than that
are cheaper read by the index, more are cheaper read by a scan of the table; on a small store every
lookup is a scan. Another condition pushed down into the same scan (``kind = 'direct'``,
``target_dataset IS NOT NULL`` on a column with nulls, a capture time bound) turns a lookup the
index would serve into a read of every row of the table: on a store of ten million edges, tens of
milliseconds a hop instead of one. :func:`indexed` keeps the lookup apart (``OFFSET 0`` stops
filters from being pushed into it), and the query applies its conditions to the rows found.
"""
from __future__ import annotations


def indexed(table: str, column: str, keys: str) -> str:
    """A subquery of the rows of ``table`` whose ``column`` is among ``keys`` (SQL of one column),
    read through the index on ``column`` when they are few for the table.

    >>> indexed("edges", "target_dataset", "SELECT unnest($d)")
    '(SELECT * FROM edges WHERE target_dataset IN (SELECT unnest($d)) OFFSET 0)'
    """
    return f"(SELECT * FROM {table} WHERE {column} IN ({keys}) OFFSET 0)"
