"""A store that is a lineage server: batches POSTed to ``<url>/api/batches`` instead of a local file.

Same interface as :class:`~lineage_listener.store.writer.StoreWriter` (``write``,
``waiting``, ``spooled``, ``lock_timeout``), so capture does not care which it has. A
server that is down, slow or refusing: the batch is spooled locally (the same spool
files as a busy store) and sent first by the next write that gets through, by the next
run with the same URL, or by ``lineage-listener push``. Batches are idempotent on the
server, so a batch resent after a lost answer adds nothing twice. The token goes in the
``Authorization`` header only; it is never logged, spooled or stored.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from lineage_listener.lineage import redact
from lineage_listener.store import spool
from lineage_listener.store.batch import Batch

log = redact.logger(__name__)

#: Environment variable holding the server token when none is given.
TOKEN_ENV = "LINEAGE_TOKEN"


def spool_anchor(url: str) -> Path:
    """The pseudo store path whose spool folders hold batches waiting for ``url``."""
    digest = hashlib.sha1(redact.redact_url(url).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "lineage-listener-remote" / digest / "server"


class RemoteWriter:
    """Writes batches to a lineage server; never raises to its caller."""

    def __init__(self, url: str, token: str | None = None, lock_timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.path = spool_anchor(self.url)  # where spooled batches wait (and what logs name)
        self._token = token or os.environ.get(TOKEN_ENV) or None
        self.lock_timeout = lock_timeout
        self._warned = False

    def spooled(self) -> list[Path]:
        return spool.pending(self.path)

    def waiting(self) -> bool:
        return bool(self.spooled())

    def post(self, batch: Batch, timeout: float) -> None:
        """POST one batch; raises OSError / urllib errors when it did not get through."""
        body = json.dumps({"rows": json.loads(batch.to_json())}).encode()
        request = urllib.request.Request(f"{self.url}/api/batches", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the user's URL
            response.read()

    def write(self, batch: Batch, wait: float | None = None) -> bool:
        """Send what is spooled, then ``batch``. True if everything reached the server."""
        timeout = max(0.5, min(self.lock_timeout if wait is None else wait, 10.0))
        try:
            sent = self.push_spool(timeout)
            if len(batch):
                self.post(batch, timeout)
        except (OSError, urllib.error.URLError, ValueError) as exc:
            reason = _reason(exc)
            if len(batch):
                spool.write(self.path, batch)
            if not self._warned:
                self._warned = True
                log.warning("lineage-listener: lineage server %s not reachable (%s); captured lineage is spooled "
                            "to %s and sent when it is back (or `lineage-listener push`)", redact.redact_url(self.url),
                            reason, spool.dirs(self.path)[0].parent)
            return False
        if self._warned:
            log.warning("lineage-listener: lineage server %s reachable again; sent %d spooled batches",
                        redact.redact_url(self.url), sent)
            self._warned = False
        return True

    def push_spool(self, timeout: float = 10.0) -> int:
        """Send every spooled batch, oldest first, deleting each once the server has it."""
        sent = 0
        for f in self.spooled():
            self.post(Batch.from_json(f.read_text(encoding="utf-8")), timeout)
            f.unlink(missing_ok=True)
            sent += 1
        return sent


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        detail = exc.read().decode(errors="replace")[:200]
        return f"HTTP {exc.code}: {detail}"
    return redact.redact_text(str(getattr(exc, "reason", exc)))[:200]


def push(url: str, spool_dir: str | Path | None = None, token: str | None = None) -> tuple[int, int]:
    """Send spooled batches (of ``url``, or the files in ``spool_dir``); (sent, left)."""
    writer = RemoteWriter(url, token)
    if spool_dir is None:
        sent = writer.push_spool()
        return sent, len(writer.spooled())
    files = sorted(Path(spool_dir).glob("*.json"))
    sent = 0
    for f in files:
        writer.post(Batch.from_json(f.read_text(encoding="utf-8")), 10.0)
        f.unlink(missing_ok=True)
        sent += 1
    return sent, len(files) - sent


