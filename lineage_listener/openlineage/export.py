"""``export(store, out=... | url=...)``: the Python API behind ``lineage-listener export openlineage``."""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lineage_listener.openlineage import events as ol_events
from lineage_listener.openlineage import send
from lineage_listener.store.batch import Batch
from lineage_listener.store.connection import open_readonly
from lineage_listener.store.writer import StoreWriter

log = logging.getLogger(__name__)


@dataclass
class ExportResult:
    queries: int = 0
    events: int = 0
    skipped: int = 0  # already delivered to this endpoint
    failed: list[str] = field(default_factory=list)  # the query whose events did not get through
    reasons: list[str] = field(default_factory=list)
    undelivered: int = 0  # queries left for the next export (the failed one and all after it)
    delivered: int = 0  # queries whose events got through (to an endpoint)


def export(store: str | Path, out: str | None = None, url: str | None = None,
           options: ol_events.ExportOptions = ol_events.ExportOptions(), token_env: str = send.TOKEN_ENV,
           resend: bool = False, progress: Callable[[int, int], None] | None = None,
           tls_ca: str | None = None) -> ExportResult:
    """Export the store's queries as OpenLineage events to the file ``out`` or the endpoint ``url``
    (over HTTPS its certificate checked against the system's CAs, or ``tls_ca``).

    To an endpoint, queries it already received (``openlineage_sent``) are skipped unless
    ``resend``; what got through is recorded there.
    """
    if (out is None) == (url is None):
        raise ValueError("give exactly one of out (a file, '-' for stdout) or url")
    result = ExportResult()
    delivered = Batch()
    con = open_readonly(store)
    try:
        total = ol_events.count(con, options)
        already: set[str] = set()
        if url and not resend:
            already = {r[0] for r in con.execute("SELECT query_id FROM openlineage_sent WHERE endpoint = ?",
                                                  [send.endpoint_id(url)]).fetchall()}
        stream = ((qid, ev) for qid, ev in ol_events.events(con, options) if qid not in already)
        seen: set[str] = set()

        def counted():
            for qid, ev in stream:
                if qid not in seen:
                    seen.add(qid)
                    if progress:
                        progress(len(seen), total - len(already))
                yield qid, ev
        if out is not None:
            result.events = send.to_file((ev for _, ev in counted()), out)
        else:
            transport = send.http_transport(url, token_env, tls_ca=tls_ca)
            for qid, ev in counted():
                reason = send.post(transport, ev)  # the transport already retried (bounded)
                if reason is None:
                    result.events += 1
                    continue
                # the endpoint is down or refusing: stop here; this and the rest wait for the next export
                result.failed.append(qid)
                result.reasons.append(reason)
                break
            for qid in seen - set(result.failed):
                delivered.add(send.sent_row(qid, url))
            result.delivered = len(delivered)
            result.undelivered = total - len(already) - len(delivered)
        result.queries = len(seen)
        result.skipped = len(already)
    finally:
        con.close()
    if len(delivered):
        StoreWriter(store).write(delivered)
    return result
