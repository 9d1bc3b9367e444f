"""Write pacing: when the capture loop hands its pending batch to the write lane.

A store write costs about the same for one query or fifty (open, schema check, commit,
checkpoint), so when actions come faster than that, batches grow instead of the store taking the
driver's CPU: a batch waits ``batch_interval`` after its first rows, and never starts sooner than
:data:`WRITE_SPACING` times the last write's duration after that write ended (at most
:data:`MAX_SPACING`; ``docs/performance.md``). The write lane's thread reports each write
(:meth:`Pacing.wrote`); the capture thread asks when to write (:meth:`Pacing.first_rows`,
:meth:`Pacing.spaced`).

>>> pacing = Pacing(batch_interval=1.0)
>>> pacing.wrote(end=100.0, cost=0.02)  # a write of 20 ms ended at 100 s
>>> pacing.spaced()                      # the next starts 100 x 20 ms after it
102.0
>>> pacing.wrote(end=100.0, cost=5.0)    # a slow store: lineage still arrives
>>> pacing.spaced()
110.0
"""
from __future__ import annotations

import time

#: A batch waits at least this many times the last store write's duration after it: the store takes
#: at most ~1/100 of a core while a job is busy (fewer, larger writes cost the job less CPU).
WRITE_SPACING = 100.0
#: ... but never longer than this after the last write (a slow store: lineage still arrives).
MAX_SPACING = 10.0


class Pacing:
    """When the last store write ended and what it cost; when the next may start."""

    def __init__(self, batch_interval: float) -> None:
        """``batch_interval``: seconds a batch's first rows wait for more."""
        self.batch_interval = batch_interval
        self._last_end = 0.0
        self._last_cost = 0.0

    def wrote(self, end: float, cost: float) -> None:
        """A store write ended at ``end`` (``time.monotonic()``) and cost ``cost`` seconds (at most
        one second counts)."""
        self._last_end = end
        self._last_cost = min(cost, 1.0)

    def spaced(self) -> float:
        """The earliest the next write may start after the last one ended."""
        return self._last_end + min(WRITE_SPACING * self._last_cost, MAX_SPACING)

    def first_rows(self) -> float:
        """When to write a batch whose first rows just arrived: ``batch_interval`` from now, and
        never sooner than :meth:`spaced`."""
        return max(time.monotonic() + self.batch_interval, self.spaced())

    def later(self) -> float:
        """When to try again to write a batch the busy lane did not take."""
        return time.monotonic() + self.batch_interval
