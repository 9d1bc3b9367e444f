"""Failed logins slowed down: after :data:`LIMIT` failures within :data:`WINDOW` seconds, a client is
answered 429 with ``Retry-After`` until its oldest failure leaves the window (docs/security.md).

>>> f = Failures(limit=2, window=60)
>>> f.failed("10.0.0.9", now=0); f.retry_after("10.0.0.9", now=1)
>>> f.failed("10.0.0.9", now=5); f.retry_after("10.0.0.9", now=6)
54
>>> f.retry_after("10.0.0.9", now=61) is None, f.retry_after("10.0.0.8", now=6) is None
(True, True)
"""
from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque

#: Failures a client may have within :data:`WINDOW` seconds before it is answered 429.
LIMIT = 20
WINDOW = 60.0
#: Clients remembered at most (the least recent go first).
CLIENTS = 100_000


class Failures:
    def __init__(self, limit: int = LIMIT, window: float = WINDOW, clients: int = CLIENTS) -> None:
        self.limit, self.window, self.clients = limit, window, clients
        self._lock = threading.Lock()
        self._by_client: OrderedDict[str, deque[float]] = OrderedDict()

    def failed(self, client: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._by_client.pop(client, None) or deque()
            times.append(now)
            while len(times) > self.limit:
                times.popleft()
            self._by_client[client] = times
            while len(self._by_client) > self.clients:
                self._by_client.popitem(last=False)

    def retry_after(self, client: str, now: float | None = None) -> int | None:
        """Seconds ``client`` must wait, or None when it may try."""
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._by_client.get(client)
            if not times:
                return None
            while times and now - times[0] >= self.window:
                times.popleft()
            if len(times) < self.limit:
                return None
            return max(1, math.ceil(times[0] + self.window - now))
