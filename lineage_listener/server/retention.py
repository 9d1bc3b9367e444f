"""``serve --keep 400d``: prune the store at start and then once a day, between requests."""
from __future__ import annotations

import logging
import threading
from datetime import timedelta

from lineage_listener.server.state import ServerState
from lineage_listener.store.prune import prune_store

log = logging.getLogger(__name__)

#: Seconds between two prunes.
EVERY = 24 * 3600.0


def start(st: ServerState, keep: timedelta, every: float = EVERY) -> threading.Event:
    """Prune in a daemon thread now and every ``every`` seconds; set the returned event to stop it."""
    stop = threading.Event()

    def loop() -> None:
        while True:
            try:
                with st.lock:  # requests wait for it, as they wait for a write
                    done = prune_store(st.store, keep)
                log.info("lineage-listener serve: pruned records older than %s: %d queries, %d capture records, "
                         "%d runs", keep, done.queries, done.captures, done.runs)
            except Exception as exc:  # noqa: BLE001 - the server goes on; the next day tries again
                log.warning("lineage-listener serve: pruning %s failed: %s", st.store, str(exc).splitlines()[0])
            if stop.wait(every):
                return

    threading.Thread(target=loop, name="lineage-prune", daemon=True).start()
    return stop
