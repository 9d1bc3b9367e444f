"""Where captured lineage goes besides the store: hooks run after each store write."""
from __future__ import annotations

from collections.abc import Callable

from lineage_listener.lineage import redact
from lineage_listener.store.batch import Batch

log = redact.logger(__name__)


def openlineage_after_write(url: str) -> Callable[[Batch], Batch | None] | None:
    """Live OpenLineage emission to ``url``; None (one log line) when the extra is not installed."""
    try:
        from lineage_listener.openlineage.live import Emitter
    except ImportError as exc:
        log.error("lineage-listener: spark.lineage.openlineage.url is set but OpenLineage support is not "
                  "installed (%s): pip install 'lineage-listener[openlineage]'; lineage goes to the store only", exc)
        return None
    return Emitter(url).after_write
