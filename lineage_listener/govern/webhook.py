"""POSTing policy violations to a webhook: in order, on a thread of its own, retried with backoff.

:meth:`Webhook.submit` only queues (it never waits for the network, so a write that finds a
violation is never slowed). The thread POSTs each violation as JSON
(``{"event": "lineage-listener.violation", "violation": {...}}``) with
``Authorization: Bearer <token>`` when a token is given (read from an environment variable by
the caller, never from the command line). A call that fails (no connection, a timeout, a status
other than 2xx) is retried after ``backoff`` seconds, doubling up to ``max_backoff``, at most
``attempts`` times; then the violation is *given up* (counted, and reported to ``on_result``).
Nothing queued is dropped before that. :meth:`Webhook.stats` says what waits, what was sent,
retried and given up, and the last error: the lineage server shows it (``/api/violations``).
"""
from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lineage_listener.ownthread import OwnThread
from lineage_listener.redact import redact_text, redact_url
from lineage_listener.timewindow import utcnow

log = logging.getLogger(__name__)

#: ``on_result(violation, delivered, attempts, error)``: after each violation is delivered or given up.
Result = Callable[[dict[str, Any], bool, int, str | None], None]


@dataclass
class _Item:
    violation: dict[str, Any]
    attempts: int = 0


class Webhook:
    """One webhook URL, its queue and its sending thread."""

    def __init__(self, url: str, token: str | None = None, attempts: int = 8, backoff: float = 1.0,
                 max_backoff: float = 60.0, timeout: float = 10.0, on_result: Result | None = None) -> None:
        self.url = url
        self.shown_url = redact_url(url).split("?", 1)[0]
        self._token = token
        self.attempts = max(1, attempts)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.timeout = timeout
        self.on_result = on_result
        self._queue: deque[_Item] = deque()
        self._thread = OwnThread("lineage-webhook", self._run)
        self._cond = self._thread.cond  # the queue and counts are the thread's state
        self._counts = {"sent": 0, "retries": 0, "given_up": 0}
        self._last_error: str | None = None
        self._last_error_at: datetime | None = None

    def submit(self, violation: dict[str, Any], attempts: int = 0) -> None:
        """Queue ``violation`` (``attempts`` already made, when resumed after a restart)."""
        with self._cond:
            self._queue.append(_Item(violation, attempts))
            self._thread.start_locked()

    def stats(self) -> dict[str, Any]:
        with self._cond:
            return {"url": self.shown_url, "pending": len(self._queue), **self._counts,
                    "last_error": self._last_error, "last_error_at": self._last_error_at}

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread (what still waits stays undelivered: the store keeps it as not notified)."""
        self._thread.stop(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._thread.stopping:
                    self._cond.wait()
                if self._thread.stopping:
                    return
                item = self._queue[0]
            error = self._post(item.violation)
            item.attempts += 1
            done = error is None or item.attempts >= self.attempts
            with self._cond:
                if error is None:
                    self._counts["sent"] += 1
                else:
                    self._last_error, self._last_error_at = error, utcnow()
                    if done:
                        self._counts["given_up"] += 1
                    else:
                        self._counts["retries"] += 1
                if done:
                    self._queue.popleft()
            if error is not None and done:
                log.error("lineage-listener: webhook %s: gave up a violation after %d attempts: %s",
                          self.shown_url, item.attempts, error)
            if done and self.on_result is not None:
                try:
                    self.on_result(item.violation, error is None, item.attempts, error)
                except Exception:  # noqa: BLE001 - the sender must live
                    log.exception("lineage-listener: webhook result handler failed")
            if not done:
                delay = min(self.max_backoff, self.backoff * 2 ** (item.attempts - 1))
                with self._cond:
                    deadline = time.monotonic() + delay
                    while not self._thread.stopping and time.monotonic() < deadline:
                        self._cond.wait(deadline - time.monotonic())

    def _post(self, violation: dict[str, Any]) -> str | None:
        """One call; None when the webhook took it, else the reason."""
        body = json.dumps({"event": "lineage-listener.violation", "violation": violation},
                          default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v)).encode()
        headers = {"Content-Type": "application/json", "User-Agent": "lineage-listener"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
                return None
        except urllib.error.HTTPError as exc:
            return f"HTTP {exc.code} {exc.reason}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            return redact_text(f"{type(exc).__name__}: {reason}")[:300]
