"""A progress bar on stderr (rich) for long exports; silent for small ones or when not a terminal."""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: Below this many items, no bar.
MIN_ITEMS = 2000


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """Yields ``tick(done, total)``; the bar appears once ``total`` >= MIN_ITEMS on a terminal."""
    state: dict = {}

    def tick(done: int, total: int) -> None:
        if total < MIN_ITEMS or not sys.stderr.isatty():
            return
        if "bar" not in state:
            from rich.progress import Progress

            state["bar"] = Progress(transient=True)
            state["bar"].start()
            state["task"] = state["bar"].add_task(label, total=total)
        state["bar"].update(state["task"], completed=done)
    try:
        yield tick
    finally:
        if "bar" in state:
            state["bar"].stop()
