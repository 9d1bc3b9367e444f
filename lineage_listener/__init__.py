"""lineage-listener: column-level lineage for Apache Spark, captured into DuckDB.

>>> import lineage_listener
>>> handle = lineage_listener.enable(spark, store="lineage.duckdb")   # doctest: +SKIP
>>> handle.flush()                                                     # doctest: +SKIP
>>> lineage_listener.disable(spark)                                    # doctest: +SKIP
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lineage_listener.version import __version__

__all__ = ["enable", "disable", "open_store", "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from lineage_listener.capture.inprocess import CaptureHandle


def enable(spark: Any, store: str | None = None, **options: Any) -> "CaptureHandle":
    """Capture column lineage of every query ``spark`` runs into the DuckDB file ``store``."""
    from lineage_listener.capture.inprocess import enable as _enable

    return _enable(spark, store=store, **options)


def disable(spark: Any, timeout: float = 30.0) -> None:
    """Stop capturing on ``spark``: flush what is queued, unregister, release the store."""
    from lineage_listener.capture.inprocess import disable as _disable

    _disable(spark, timeout=timeout)


def open_store(path: str) -> Any:
    """Open a store for lineage questions (``upstream``, ``downstream``, ``sql``)."""
    from lineage_listener.query import open_store as _open_store

    return _open_store(path)
