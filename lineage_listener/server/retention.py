"""``serve --keep 400d`` (and ``--access``'s audit, ``--keep-audit``): prune the store at start and then
once a day, beside the writer."""
from __future__ import annotations

import logging
import threading
from datetime import timedelta

from lineage_listener.server.state import ServerState
from lineage_listener.store.prune import prune_open

log = logging.getLogger(__name__)

#: Seconds between two prunes.
EVERY = 24 * 3600.0


def start(st: ServerState, keep: timedelta | None, every: float = EVERY,
          keep_audit: timedelta | None = None) -> threading.Event:
    """Prune in a daemon thread now and every ``every`` seconds (``keep`` None: the audit only, older than
    ``keep_audit``); set the returned event to stop it."""
    stop = threading.Event()

    def loop() -> None:
        while True:
            try:
                # On the writer's thread and open database: a connection of its own would attach the
                # file beside the writer's, which DuckDB refuses while the writer holds it.
                done = st.writer.maintain(lambda con: prune_open(con, keep, keep_audit=keep_audit))
                log.info("lineage-listener serve: pruned records older than %s: %d queries, %d capture records, "
                         "%d runs; %d audit records older than %s", keep, done.queries, done.captures, done.runs,
                         done.audit, keep_audit)
            except Exception as exc:  # noqa: BLE001 - the server goes on; the next day tries again
                log.warning("lineage-listener serve: pruning %s failed: %s", st.store, str(exc).splitlines()[0])
            if stop.wait(every):
                return

    threading.Thread(target=loop, name="lineage-prune", daemon=True).start()
    return stop
