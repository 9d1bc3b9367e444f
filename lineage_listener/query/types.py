"""The values lineage questions pass around: a column (``Node``), a direction, a lineage step (:class:`LineageStep`).

>>> e = LineageStep(("raw", "email"), ("clean", "email"), 1, "identity", "direct", "email", False, "q1", "app",
...          datetime(2026, 1, 1), False)
>>> (e.source, e.target, e.kind)
(('raw', 'email'), ('clean', 'email'), 'direct')
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

Node = tuple[str, str]
Direction = Literal["upstream", "downstream"]


@dataclass(frozen=True)
class LineageStep:
    """One lineage step found by the expansion, with canonical dataset names."""

    source: Node
    target: Node
    hop: int                    # 1 = adjacent to the start column
    transform: str
    kind: str
    expression: str | None
    masking: bool
    query_id: str               # the last capture's (in the window; else before it)
    run_id: str
    captured_at: datetime       # the last capture (in the window; else before it)
    dataset_level: bool         # stored with a null target_column (applies to every column)
    first_seen: datetime | None = None  # the first capture (in the window; else before it)
    captures: int = 1           # how many captures (in the window; else before it)
    edge_id: int | None = None  # the row of ``edges``; its captures: :func:`captures`
    earliest: datetime | None = None    # the first capture not after the window's end
    latest: datetime | None = None      # the last one (None: captured after the window only)
    before_window: bool = False         # no capture in the window, only before it
    outside: int = 0                    # captures outside the window (before or after it)
    outside_first: datetime | None = None
    outside_last: datetime | None = None
    known: tuple[tuple[datetime, ...], ...] = ()  # its first and last capture times, distinct, sorted (all: one tuple)
    guess: bool = False                 # a conservative guess (a Python function that could not be read)
