"""A store that is a lineage server: batches POSTed to ``<url>/api/batches`` instead of a local file.

Same interface as :class:`~lineage_listener.store.writer.StoreWriter` (``write``,
``waiting``, ``spooled``, ``lock_timeout``), so capture does not care which it has. A
server that is down, slow or refusing: the batch is spooled locally (the same spool
files as a busy store) and sent first by the next write that gets through, by the next
run with the same URL, or by ``lineage-listener push``. Batches are idempotent on the
server, so a batch resent after a lost answer adds nothing twice. A batch the server refuses
for itself (400 malformed, 413 too large, 422 cannot be written) is never resent: it is kept as
a ``.bad`` spool file for a person, and the batches behind it go on. Refusals that are not about
the batch (401/403: the token; 429/5xx, timeouts, a dead server) keep it spooled, in order.
The token goes in the ``Authorization`` header only; it is never logged, spooled or stored.
Over HTTPS the server's certificate is checked (:mod:`~lineage_listener.tls`: the system's CAs, or
``tls_ca``); a certificate that is not trusted is a failed send like a dead server: one line says
why, and the batch is spooled until the certificate is trusted.
"""
from __future__ import annotations

import hashlib
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from lineage_listener import redact, tls
from lineage_listener.store import spool
from lineage_listener.store.batch import Batch

log = redact.logger(__name__)

#: Environment variable holding the server token when none is given.
TOKEN_ENV = "LINEAGE_TOKEN"

#: Answers that refuse the batch itself: sending it again would be refused again.
REFUSED = frozenset({400, 413, 422})


def refused(exc: BaseException) -> bool:
    """True when the server refused the batch itself (see :data:`REFUSED`), not the sender or the moment."""
    return isinstance(exc, urllib.error.HTTPError) and exc.code in REFUSED


def spool_anchor(url: str) -> Path:
    """The pseudo store path whose spool folders hold batches waiting for ``url``."""
    digest = hashlib.sha1(redact.redact_url(url).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "lineage-listener-remote" / digest / "server"


class RemoteWriter:
    """Writes batches to a lineage server (a :class:`~lineage_listener.store.writer.BatchWriter`);
    never raises to its caller."""

    def __init__(self, url: str, token: str | None = None, lock_timeout: float = 10.0,
                 tls_ca: str | None = None) -> None:
        """``tls_ca``: a CA file (PEM) the server's certificate is checked against instead of the
        system's CAs (a private CA)."""
        self.url = url.rstrip("/")
        self.path = spool_anchor(self.url)  # where spooled batches wait (and what logs name)
        self._token = token or os.environ.get(TOKEN_ENV) or None
        self.lock_timeout = lock_timeout
        self.tls_ca = tls_ca
        self._tls: ssl.SSLContext | None = None  # built on the first HTTPS send (a bad CA file: a failed send)
        self._warned = False

    def _context(self) -> ssl.SSLContext | None:
        if not self.url.lower().startswith("https:"):
            return None
        if self._tls is None:
            try:
                self._tls = tls.context(self.tls_ca)
            except OSError as exc:
                raise OSError(f"CA file {self.tls_ca} cannot be read ({exc.strerror or exc})") from None
        return self._tls

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
        with urllib.request.urlopen(request, timeout=timeout, context=self._context()) as response:  # noqa: S310
            response.read()

    def write(self, batch: Batch, wait: float | None = None) -> bool:
        """Send what is spooled, then ``batch``. True if everything reached the server."""
        timeout = max(0.5, min(self.lock_timeout if wait is None else wait, 10.0))
        try:
            sent = self.push_spool(timeout)
            if len(batch):
                try:
                    self.post(batch, timeout)
                except urllib.error.HTTPError as exc:
                    if not refused(exc):
                        raise
                    kept = spool.write(self.path, batch, suffix=".bad")
                    log.error("lineage-listener: lineage server %s refused a captured batch (%s); kept as %s, "
                              "not sent again", redact.redact_url(self.url), _reason(exc), kept or "nothing: no "
                              "spool folder is writable")
                    return False
        except (OSError, urllib.error.URLError, ValueError) as exc:
            reason = _reason(exc)
            if len(batch):
                spool.write(self.path, batch)
            if not self._warned:
                self._warned = True
                refusal = tls.failure(exc)
                if refusal is not None:
                    log.warning("lineage-listener: lineage server %s: %s; captured lineage is spooled to %s and sent "
                                "once its certificate is trusted (a private CA: %s; `lineage-listener push "
                                "--tls-ca FILE` sends the spool)", redact.redact_url(self.url), refusal,
                                spool.dirs(self.path)[0].parent, tls.CONF)
                else:
                    log.warning("lineage-listener: lineage server %s not reachable (%s); captured lineage is spooled "
                                "to %s and sent when it is back (or `lineage-listener push`)",
                                redact.redact_url(self.url), reason, spool.dirs(self.path)[0].parent)
            return False
        if self._warned:
            log.warning("lineage-listener: lineage server %s reachable again; sent %d spooled batches",
                        redact.redact_url(self.url), sent)
            self._warned = False
        return True

    def push_spool(self, timeout: float = 10.0) -> int:
        """Send every spooled batch, oldest first, deleting each once the server has it."""
        return self.send_files(self.spooled(), timeout)[0]

    def send_files(self, files: list[Path], timeout: float = 10.0) -> tuple[int, int]:
        """Send spooled ``files`` oldest first: ``(sent, refused)``. A file the server refuses is
        renamed ``.bad`` (logged) and the next one sent; any other failure raises, the rest wait."""
        sent = bad = 0
        for f in files:
            try:
                self.post(Batch.from_json(f.read_text(encoding="utf-8")), timeout)
            except urllib.error.HTTPError as exc:
                if not refused(exc):
                    raise
                f.rename(f.with_suffix(".bad"))
                bad += 1
                log.error("lineage-listener: lineage server %s refused spooled batch %s (%s); kept as %s, not sent "
                          "again", redact.redact_url(self.url), f.name, _reason(exc), f.with_suffix(".bad"))
                continue
            f.unlink(missing_ok=True)
            sent += 1
        return sent, bad


def _reason(exc: BaseException) -> str:
    refusal = tls.failure(exc)
    if refusal is not None:
        return refusal
    if isinstance(exc, urllib.error.HTTPError):
        detail = exc.read().decode(errors="replace")[:200]
        return f"HTTP {exc.code}: {detail}"
    return redact.redact_text(str(getattr(exc, "reason", exc)))[:200]


def push(url: str, spool_dir: str | Path | None = None, token: str | None = None,
         tls_ca: str | None = None) -> tuple[int, int, int]:
    """Send spooled batches (of ``url``, or the files in ``spool_dir``): (sent, refused and kept as
    ``.bad``, left). ``tls_ca``: as for :class:`RemoteWriter`."""
    writer = RemoteWriter(url, token, tls_ca=tls_ca)
    files = writer.spooled() if spool_dir is None else sorted(Path(spool_dir).glob("*.json"))
    sent, bad = writer.send_files(files)
    left = len(writer.spooled()) if spool_dir is None else len(sorted(Path(spool_dir).glob("*.json")))
    return sent, bad, left
