"""Deliver events: newline-delimited JSON to a file, or POSTed to an OpenLineage HTTP endpoint.

Both go through openlineage-python's transports. The bearer token is read from an
environment variable named by the caller (never from argv, never logged). Delivered
queries are recorded per endpoint in the store's ``openlineage_sent`` table.
"""
from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

from openlineage.client.event_v2 import RunEvent
from openlineage.client.serde import Serde
from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport, TokenProvider

from lineage_listener import tls
from lineage_listener.redact import redact_text
from lineage_listener.store.rows import SentRow
from lineage_listener.timewindow import utcnow

log = logging.getLogger(__name__)

#: Environment variable holding the endpoint's bearer token, unless the caller names another.
TOKEN_ENV = "LINEAGE_OPENLINEAGE_TOKEN"

#: Well-known endpoint paths; a URL without a path gets Marquez's.
DEFAULT_ENDPOINT = "api/v1/lineage"


def endpoint_id(url: str) -> str:
    """The URL as recorded in the store: no credentials, query string or fragment.

    >>> endpoint_id("http://bob:pw@marquez:5000/api/v1/lineage?x=1")
    'http://marquez:5000/api/v1/lineage'
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def http_transport(url: str, token_env: str = TOKEN_ENV, timeout: float = 5.0, retries: int = 3,
                   tls_ca: str | None = None) -> HttpTransport:
    """An HTTP transport to ``url`` (path included, e.g. ``/api/v1/lineage``), bounded retries; over
    HTTPS the certificate is checked against the system's CAs, or ``tls_ca`` (a PEM file)."""
    parts = urlsplit(url)
    base = urlunsplit((parts.scheme, parts.netloc, "/", "", ""))
    endpoint = parts.path.lstrip("/") or DEFAULT_ENDPOINT
    token = os.environ.get(token_env)
    auth = ApiKeyTokenProvider({"apiKey": token}) if token else TokenProvider({})
    return HttpTransport(HttpConfig(url=base, endpoint=endpoint, timeout=timeout, auth=auth, verify=tls_ca or True, retry={
        "total": retries, "read": retries, "connect": retries, "backoff_factor": 0.3,
        "status_forcelist": [429, 500, 502, 503, 504], "allowed_methods": ["POST"]}))


def to_file(events: Iterable[RunEvent], path: str) -> int:
    """Write ``events`` as newline-delimited JSON (``-``: stdout); the number written."""
    import sys

    n = 0
    out = sys.stdout if path == "-" else open(path, "w", encoding="utf-8")  # noqa: SIM115
    try:
        for event in events:
            out.write(Serde.to_json(event) + "\n")
            n += 1
    finally:
        if out is not sys.stdout:
            out.close()
    return n


def post(transport: HttpTransport, event: RunEvent) -> str | None:
    """Send one event; None on success, else the reason (one line, no secrets). The transport's own
    retries say nothing (urllib3 logs a warning for each): the caller says once what did not get through."""
    retries = logging.getLogger("urllib3.connectionpool")
    level = retries.level
    retries.setLevel(logging.ERROR)
    try:
        transport.emit(event)
        return None
    except Exception as exc:  # noqa: BLE001 - requests/urllib3 raise many types
        refusal = tls.failure(exc)
        if refusal is not None:
            return f"{refusal} (a private CA: {tls.CONF} or --tls-ca FILE)"
        return redact_text(reason(exc))
    finally:
        retries.setLevel(level)


def reason(exc: BaseException) -> str:
    """Why a POST failed, in a few words: the operating system's word for a connection that could not be
    made (after the transport's retries), else the error's first line.

    >>> reason(OSError("Max retries exceeded with url: /x (Caused by NewConnectionError(: Failed to "
    ...                "establish a new connection: [Errno 111] Connection refused))"))
    'cannot connect: Connection refused (after retries)'
    """
    text = str(exc)
    found = re.search(r"\[Errno -?\d+\] ([^\"')]+)", text)
    if "Max retries exceeded" in text and found:
        return f"cannot connect: {found.group(1).strip()} (after retries)"
    return text.splitlines()[0][:300] if text else type(exc).__name__


def sent_row(query_id: str, url: str) -> SentRow:
    """An ``openlineage_sent`` row: ``query_id``'s events delivered to ``url`` now."""
    return SentRow(query_id=query_id, endpoint=endpoint_id(url),
                   sent_at=utcnow().isoformat(sep=" "))
