"""Optional per-stage timers for the capture path (off by default; ``bench/capture_bench.py``).

>>> from lineage_listener.capture import stages
>>> stages.enable()
>>> with stages.timed("decode"):
...     pass
>>> sorted(stages.totals())
['decode']
>>> stages.disable()

When off, ``timed`` returns a shared no-op context manager: one global lookup per stage.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from contextlib import AbstractContextManager, nullcontext

_NOOP = nullcontext()
_on = False
_lock = threading.Lock()
_totals: dict[str, float] = defaultdict(float)
_counts: dict[str, int] = defaultdict(int)


class _Timer(AbstractContextManager):
    __slots__ = ("name", "start")

    def __init__(self, name: str) -> None:
        self.name = name
        self.start = 0.0

    def __enter__(self) -> "_Timer":
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        add(self.name, time.perf_counter() - self.start)


def timed(name: str) -> AbstractContextManager:
    """A context manager adding its wall time to stage ``name`` (a no-op while disabled)."""
    return _Timer(name) if _on else _NOOP


def add(name: str, seconds: float) -> None:
    with _lock:
        _totals[name] += seconds
        _counts[name] += 1


def enabled() -> bool:
    return _on


def enable() -> None:
    global _on
    _on = True


def disable() -> None:
    global _on
    _on = False


def totals(reset: bool = False) -> dict[str, float]:
    """Seconds per stage since the last reset."""
    with _lock:
        out = dict(_totals)
        if reset:
            _totals.clear()
            _counts.clear()
    return out


def transfer_time(chars: int) -> float:
    """Benchmark only: py4j time to move a string of ``chars`` characters from the JVM
    (``StringUtils.repeat`` costs the JVM next to nothing: this is the transfer share of toJSON)."""
    from pyspark import SparkContext

    jvm = SparkContext._jvm
    if jvm is None:
        return 0.0
    start = time.perf_counter()
    try:
        jvm.org.apache.commons.lang3.StringUtils.repeat("x", chars)
    except Exception:  # noqa: BLE001 - a benchmark figure, never a failure
        return 0.0
    return time.perf_counter() - start
