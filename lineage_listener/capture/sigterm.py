"""On SIGTERM, write captured lineage (bounded) before the process ends as it would have.

Installed once per process by ``enable()`` from the main thread. The handler that
was in place before (the user's own, Python's default or "ignore") still decides
what SIGTERM does: ours only runs first. With the default handler the signal is
re-raised after the flush, so the exit status stays "killed by SIGTERM".
"""
from __future__ import annotations

import os
import signal
import threading
from types import FrameType
from typing import Any

from lineage_listener.capture import pipeline
from lineage_listener import redact

log = redact.logger(__name__)

#: Seconds the flush may take on SIGTERM (a scheduler's grace period is often 30 s).
TIMEOUT_ENV = "LINEAGE_LISTENER_SIGTERM_TIMEOUT"

_installed = False
_previous: Any = signal.SIG_DFL


def install() -> bool:
    """Put the flush in front of the current SIGTERM handler; False where that is not possible."""
    global _installed, _previous
    if _installed:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        _previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # not the main interpreter, or no signals here
        return False
    _installed = True
    return True


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    timeout = float(os.environ.get(TIMEOUT_ENV, "10"))
    closed = pipeline.close_all(timeout)
    log.warning("lineage-listener: SIGTERM: wrote captured lineage of %d capture(s) (at most %.0f s) "
                "before exiting", closed, timeout)
    previous = _previous
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    else:  # Python's default: die by the signal, as without us
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
