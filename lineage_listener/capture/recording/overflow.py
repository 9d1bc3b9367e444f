"""A full capture queue: the action is recorded as ``lineage_error`` instead of being queued.

The queue holds ``QueryExecution`` references (the driver's heap) until the capture thread
reads them; past ``max_queue`` pending actions an action keeps only these plain facts.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lineage_listener.store.rows import CaptureErrorRow, QueryRow

REASON = "capture queue full ({limit} actions waiting): lineage not read (raise enable(max_queue=...))"


@dataclass(frozen=True)
class Dropped:
    """An action accepted while the queue was full: no plan reference kept."""

    func_name: str
    duration_ns: int | None
    error: Any
    at: datetime
    limit: int


def rows(item: Dropped, runs: dict[str, dict[str, Any]]) -> list[tuple[Any, ...]]:
    """A ``queries`` row with status ``lineage_error`` and a ``capture_errors`` row."""
    run_id = next(iter(runs)) if len(runs) == 1 else "unknown"
    query_id = f"{run_id}:q:{uuid.uuid4().hex[:8]}"
    reason = REASON.format(limit=item.limit)
    from lineage_listener.capture.recording.records import iso  # the recorder's modules: loaded by the capture thread

    now = iso(item.at)
    duration_ms = item.duration_ns // 1_000_000 if item.duration_ns is not None else None
    return [QueryRow(query_id=query_id, run_id=run_id, action=item.func_name, command=None, sql_text=None,
                     status="lineage_error", error=reason, duration_ms=duration_ms, captured_at=now,
                     target_dataset=None),
            CaptureErrorRow(captured_at=now, run_id=run_id, query_id=query_id, stage="listener", error=reason)]
