"""Optional per-stage timers for the capture path (off by default; ``bench/capture_bench.py``).

>>> from lineage_listener.capture import stages
>>> stages.enable()
>>> with stages.timed("decode"):
...     pass
>>> sorted(stages.totals())
['decode']
>>> stages.disable()

Off, the hot path never enters this module: ``timed`` is then a dict lookup of a no-op context
manager per stage name (no Python call of its own), and ``on`` a plain attribute, so a
benchmark-only figure is computed behind ``if stages.on:``. :func:`enable` installs the timer.

>>> stages.timed("decode") is stages.timed("decode"), stages.on
(True, False)
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

#: Off: a no-op context manager per stage name, made once (``timed`` is this dict's lookup).
_OFF: defaultdict[str, AbstractContextManager] = defaultdict(nullcontext)
#: Whether timing is on (read as an attribute on the hot path: ``if stages.on:``).
on = False
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


#: ``timed(name)``: a context manager adding its wall time to stage ``name`` (a no-op while disabled).
timed: Callable[[str], AbstractContextManager] = _OFF.__getitem__


def add(name: str, seconds: float) -> None:
    with _lock:
        _totals[name] += seconds
        _counts[name] += 1


def enabled() -> bool:
    return on


def enable() -> None:
    """Time the stages from now on: ``timed`` becomes the timer."""
    global on, timed
    on, timed = True, _Timer


def disable() -> None:
    """Stop timing: ``timed`` is the no-op lookup again."""
    global on, timed
    on, timed = False, _OFF.__getitem__


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
