"""Where captured lineage goes besides the store: hooks run after each store write."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lineage_listener import redact

if TYPE_CHECKING:  # pragma: no cover - the store's row modules load on the capture thread
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.writer import BatchWriter

log = redact.logger(__name__)


def openlineage_after_write(url: str, tls_ca: str | None = None) -> Callable[[Batch], Batch | None] | None:
    """Live OpenLineage emission to ``url`` (``tls_ca``: a CA file for an https endpoint); None (one log
    line) when the extra is not installed."""
    try:
        from lineage_listener.openlineage.live import Emitter
    except ImportError as exc:
        log.error("lineage-listener: spark.lineage.openlineage.url is set but OpenLineage support is not "
                  "installed (%s): pip install 'lineage-listener[openlineage]'; lineage goes to the store only", exc)
        return None
    return Emitter(url, tls_ca=tls_ca).after_write


def kafka_writer(kafka: Any, store: str | None = None, url: str | None = None, token: str | None = None,
                 lock_timeout: float = 10.0, tls_ca: str | None = None) -> BatchWriter:
    """Capture's writer for Kafka (``kafka``: settings or ``{"bootstrap", "topic", "conf"}``): the topic
    alone, or the topic besides a lineage server (``url``) or a store file (``store``).
    Raises ImportError naming the ``[kafka]`` extra when it is not installed."""
    from lineage_listener.kafka.publish import Both, KafkaWriter
    from lineage_listener.kafka.settings import KafkaSettings
    from lineage_listener.store.remote import RemoteWriter
    from lineage_listener.store.writer import StoreWriter

    writer = KafkaWriter(KafkaSettings.from_option(kafka), lock_timeout=lock_timeout)
    if url:
        return Both(RemoteWriter(url, token, lock_timeout=lock_timeout, tls_ca=tls_ca), writer)
    if store:
        return Both(StoreWriter(store, lock_timeout=lock_timeout), writer)
    return writer
