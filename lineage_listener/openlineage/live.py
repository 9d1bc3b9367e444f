"""Live emission: each batch's queries go to an OpenLineage endpoint right after they reach the store.

Runs on capture's write lane, never on the job's threads. A down endpoint costs one bounded
attempt (short timeout, one retry), then attempts back off (30 s doubling to 5 min);
meanwhile the events wait in the store, where ``lineage-listener export openlineage
--url`` finds them: deliveries are recorded in ``openlineage_sent`` (in the next
batch), so an export sends exactly what the live path did not.
"""
from __future__ import annotations

import logging
import time

import duckdb

from lineage_listener.openlineage import events as ol_events
from lineage_listener.openlineage import send
from lineage_listener.store.batch import Batch
from lineage_listener.store.schema import ensure_schema
from lineage_listener.store.upsert import commit_batch

log = logging.getLogger(__name__)

#: Queries kept in memory for a retry while the endpoint is down (the store keeps all of them).
MAX_WAITING = 5_000


class Emitter:
    """``after_write(batch)`` for :class:`~lineage_listener.capture.pipeline.Capture`."""

    def __init__(self, url: str, token_env: str = send.TOKEN_ENV, timeout: float = 2.0,
                 options: ol_events.ExportOptions = ol_events.ExportOptions(), tls_ca: str | None = None) -> None:
        """``tls_ca``: a CA file (PEM) an https endpoint's certificate is checked against."""
        self.url = url
        self.endpoint = send.endpoint_id(url)
        self.transport = send.http_transport(url, token_env, timeout=timeout, retries=1, tls_ca=tls_ca)
        self.options = options
        self._mem = duckdb.connect()
        ensure_schema(self._mem)
        self._waiting: dict[str, list] = {}  # query id -> its events, not delivered yet
        self._next_try = 0.0
        self._backoff = 0.0
        self.sent = 0

    def after_write(self, batch: Batch) -> Batch | None:
        """Send the events of ``batch``'s queries (and earlier undelivered ones); rows recording deliveries."""
        if batch.rows["queries"]:
            for qid, event in self._events(batch):
                if len(self._waiting) < MAX_WAITING or qid in self._waiting:
                    self._waiting.setdefault(qid, []).append(event)
        if not self._waiting or time.monotonic() < self._next_try:
            return None
        delivered = Batch()
        for qid in list(self._waiting):
            reason = None
            for event in self._waiting[qid]:
                reason = send.post(self.transport, event)
                if reason:
                    break
            if reason:
                self._backoff = min(max(self._backoff * 2, 30.0), 300.0)
                self._next_try = time.monotonic() + self._backoff
                log.warning("lineage-listener: OpenLineage endpoint %s unreachable (%s); %d queries wait in the "
                            "store (next try in %.0f s; `lineage-listener export openlineage --url` sends them "
                            "too)", self.endpoint, reason, len(self._waiting), self._backoff)
                break
            if self._backoff:
                log.warning("lineage-listener: OpenLineage endpoint %s reachable again", self.endpoint)
                self._backoff = 0.0
            del self._waiting[qid]
            delivered.add(send.sent_row(qid, self.url))
            self.sent += 1
        return delivered if len(delivered) else None

    def _events(self, batch: Batch) -> list[tuple[str, object]]:
        """Events of ``batch``'s queries, built by the export's own code over an in-memory store."""
        con = self._mem
        for table in ("edge_captures", "edge_sets", "edges", "dataset_columns", "datasets", "queries", "runs"):
            con.execute(f"DELETE FROM {table}")
        commit_batch(con, batch)
        ids = {r[0] for r in batch.rows["queries"]}
        return list(ol_events.events(con, self.options, only=ids))
