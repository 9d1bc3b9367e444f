"""``enable(spark)`` / ``disable(spark)``: capture on a live PySpark session via its py4j gateway."""
from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from lineage_listener.capture import sigterm, sinks, textmode
from lineage_listener.capture.reading import planreader
from lineage_listener.capture.jvm import jvm_proxy, scala_map
from lineage_listener.capture.listener import PlanListener
from lineage_listener.capture.pipeline import Capture
from lineage_listener.kafka.settings import KafkaSettings
from lineage_listener import redact, tls

log = redact.logger(__name__)

#: Every key ``enable()`` reads starts with this (read from the session in one go: :func:`lineage_conf`).
CONF_PREFIX = "spark.lineage."
STORE_CONF = "spark.lineage.store"
OPENLINEAGE_URL_CONF = "spark.lineage.openlineage.url"
SERVER_URL_CONF = "spark.lineage.url"
SERVER_TOKEN_CONF = "spark.lineage.token"
DEFAULT_STORE = "lineage.duckdb"
#: enable() waits at most this long for Spark's listener bus to deliver the events posted before it.
ENABLE_DRAIN_SECONDS = 10.0

_lock = threading.Lock()
_handles: dict[str, "CaptureHandle"] = {}


@dataclass
class CaptureHandle:
    """A running capture on one SparkSession."""

    spark: Any
    capture: Capture
    listener: PlanListener
    key: str
    jlistener: Any  # the JVM's proxy of ``listener``: what Spark holds, and what is unregistered
    stream_listener: Any = None  # the JVM wrapper of the StreamingQueryListener (None: not registered)
    #: The start-up thread: it adds the streaming listener (:func:`start_streams`) after ``enable()`` returned.
    startup: threading.Thread | None = None
    stopping: threading.Event = field(default_factory=threading.Event)  # disable() began
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def store(self) -> str:
        return self.capture.store

    def flush(self, timeout: float | None = 60.0) -> bool:
        """Return once everything captured so far is in the store (False: timed out or spooled).

        Spark delivers listener events asynchronously, so this first waits for
        Spark's listener bus to hand over every finished action.
        """
        wait_for_listener_bus(self.spark, timeout)
        return self.capture.flush(timeout)

    def disable(self, timeout: float = 30.0) -> None:
        disable(self.spark, timeout=timeout)


def wait_for_listener_bus(spark: Any, timeout: float | None, jsc: Any = None) -> bool:
    """Block until Spark's listener bus has delivered all posted events (bounded); ``jsc``: the
    live JVM ``SparkContext`` when the caller has it (two JVM calls fewer)."""
    if jsc is None and not _alive(spark):
        return True
    try:
        millis = int((timeout if timeout is not None else 600) * 1000)
        (jsc or spark.sparkContext._jsc.sc()).listenerBus().waitUntilEmpty(millis)
        return True
    except Exception as exc:  # noqa: BLE001 - a timeout or an API change: flush what we have
        log.debug("listener bus did not drain: %s", exc)
        return False


def lineage_conf(spark: Any) -> dict[str, str]:
    """The session's ``spark.lineage.*`` keys: the application's conf, with what the session itself
    set over it (Spark copies the application's conf into a session's when it builds it). Three
    JVM calls, however many keys are set; the other keys are dropped here."""
    conf = scala_map(spark._jsparkSession.conf().getAll())
    return {key: value for key, value in conf.items() if key.startswith(CONF_PREFIX)}


def _session_key(spark: Any) -> str:
    js = spark._jsparkSession
    try:
        return str(js.sessionUUID())
    except Exception:  # noqa: BLE001
        return str(js.hashCode())


def _ensure_callbacks(spark: Any) -> None:
    """Make sure the JVM can call Python objects (PySpark's callback server)."""
    gateway = spark.sparkContext._gateway
    try:
        from pyspark.java_gateway import ensure_callback_server_started

        ensure_callback_server_started(gateway)
    except Exception as exc:  # noqa: BLE001 - pinned-thread mode already serves callbacks
        log.debug("callback server: %s", exc)


def enable(spark: Any, store: str | os.PathLike | None = None, **options: Any) -> CaptureHandle:
    """Register the lineage listener on ``spark``; enabling twice returns the same handle.

    ``openlineage_url`` (or conf ``spark.lineage.openlineage.url``): also send each query's
    OpenLineage events there as it is captured (token from ``LINEAGE_OPENLINEAGE_TOKEN``).
    ``url`` (or conf ``spark.lineage.url``): send lineage to a lineage server instead of
    ``store``; ``token`` (or conf ``spark.lineage.token``, or env ``LINEAGE_TOKEN``).
    ``sql_text`` (or conf ``spark.lineage.sqlText``): ``full``, ``masked`` (literal values as ``?``)
    or ``none`` (no statement text). ``tls_ca`` (or conf ``spark.lineage.tls.ca``): a CA file (PEM)
    an https server's or endpoint's certificate is checked against.
    Other options go to :class:`~lineage_listener.capture.pipeline.Capture`.
    """
    if not hasattr(spark, "_jsparkSession"):  # a Spark Connect client: no JVM on this side
        raise TypeError(
            "lineage_listener.enable() needs a classic SparkSession with a driver JVM in this process; "
            f"{type(spark).__module__}.{type(spark).__name__} is a Spark Connect client. Capture on the Connect "
            "server instead: start it with the flags of `lineage-listener spark-conf --store PATH` "
            "(start-connect-server.sh $(lineage-listener spark-conf --store PATH))")
    conf = lineage_conf(spark)
    # a bad sql_text argument raises here, before anything is registered; a bad conf value keeps the least
    options["sql_text"] = textmode.parse(options["sql_text"]) if options.get("sql_text") is not None \
        else textmode.from_conf(conf.get(textmode.CONF))
    named_store = store if store is not None else conf.get(STORE_CONF)
    store = named_store or DEFAULT_STORE
    key = _session_key(spark)
    with _lock:
        existing = _handles.get(key)
        if existing is not None:
            if not options.get("url") and os.path.abspath(os.fspath(store)) != existing.store:
                log.warning("lineage-listener: already enabled on this session with store %s; keeping it",
                            existing.store)
            return existing
        _ensure_callbacks(spark)
        planreader.install_default()  # the bridge jar's compact plan reader, loaded on the first read
        options.setdefault("defer_reads", True)  # callbacks arrive on Spark's listener bus
        tls_ca = options.pop("tls_ca", None) or conf.get(tls.CONF) or None
        ol_url = options.pop("openlineage_url", None) or conf.get(OPENLINEAGE_URL_CONF)
        if ol_url:
            options.setdefault("after_write", sinks.openlineage_after_write(ol_url, tls_ca))
        url = options.pop("url", None) or conf.get(SERVER_URL_CONF)
        if url:
            options["url"] = url
            options.setdefault("token", conf.get(SERVER_TOKEN_CONF))
            options["tls_ca"] = tls_ca
        kafka = options.pop("kafka", None) or KafkaSettings.from_conf(conf)
        if kafka:
            options["writer"] = sinks.kafka_writer(kafka, named_store, options.pop("url", None),
                                                   options.pop("token", None), options.get("lock_timeout", 10.0),
                                                   options.pop("tls_ca", None))
        # Spark hands an action's end event to the listeners registered when the bus delivers it, not
        # when it was posted: deliver what is posted (every action that returned before this call)
        # first, so that only actions after enable() are captured.
        if not wait_for_listener_bus(spark, ENABLE_DRAIN_SECONDS, spark.sparkContext._jsc.sc()):
            log.info("lineage-listener: Spark's listener bus did not empty within %.0f s; actions that "
                     "ended just before enable() may be captured", ENABLE_DRAIN_SECONDS)
        # From here on no action is lost: until the capture exists, callbacks wait in the listener.
        listener = PlanListener()
        jlistener = jvm_proxy(spark, listener)
        spark._jsparkSession.listenerManager().register(jlistener)
        sigterm.install()
        # The threads start after every JVM call this thread makes: the capture thread imports the
        # lineage modules and the store meanwhile, and each answer to this thread would wait for the GIL.
        try:
            capture = Capture(store, warm_up=lambda: planreader.warm_up(spark._jsparkSession), **options)
        except BaseException:  # e.g. an unknown option: nothing stays registered, buffering callbacks
            with contextlib.suppress(Exception):
                spark._jsparkSession.listenerManager().unregister(jlistener)
            raise
        capture.stream_sessions.append(spark._jsparkSession)
        handle = CaptureHandle(spark, capture, listener, key, jlistener)
        _handles[key] = handle
        # Spark builds its StreamingQueryManager on a session's first use of streams (the slowest JVM
        # call of the start): a start-up thread adds the streaming listener, then takes the streams
        # started meanwhile.
        handle.startup = threading.Thread(target=start_streams, args=(handle,), name="lineage-listener-start",
                                          daemon=True)
        handle.startup.start()
        listener.attach(capture)
        log.info("lineage-listener: capturing lineage of session %s into %s", key, capture.store)
        return handle


def start_streams(handle: CaptureHandle) -> None:
    """On the start-up thread: add the streaming listener to the handle's session, then take the
    streams that started before it was there. A failure costs one log line and a ``capture_errors``
    row (stage ``stream``); batch capture goes on. After ``disable()`` began, nothing stays added."""
    from lineage_listener.capture.reading import streams  # with the plan readers: imported off enable()'s thread

    if handle.stopping.is_set():
        return
    jsession = handle.spark._jsparkSession
    try:
        stream_listener, wrapper = streams.register(jsession, handle.capture)
    except Exception as exc:  # noqa: BLE001 - e.g. an old Spark: batch capture still works
        _start_failed(handle, "streaming queries will not be captured", exc)
        return
    with handle.lock:
        added = not handle.stopping.is_set()
        if added:
            handle.stream_listener = wrapper
    if not added:  # disable() began while it was being added: this thread removes it
        streams.unregister(jsession, wrapper)
        return
    try:
        taken = stream_listener.take_active()
    except Exception as exc:  # noqa: BLE001 - their progress events still come: each is read as it comes
        _start_failed(handle, "streams that started before the streaming listener was added not taken", exc)
        return
    if taken:
        log.debug("lineage-listener: %d stream(s) started before the streaming listener was added", taken)


def _start_failed(handle: CaptureHandle, what: str, exc: Exception) -> None:
    """One log line and a ``capture_errors`` row (stage ``stream``) for a failed start-up step."""
    text = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"
    log.warning("lineage-listener: %s: %s", what, text)
    handle.capture.record_problem("stream", f"{what}: {text}")


def disable(spark: Any, timeout: float = 30.0) -> None:
    """Unregister, write what is queued (bounded by ``timeout``) and release the store."""
    key = _session_key(spark) if _alive(spark) else None
    with _lock:
        handle = _handles.pop(key, None) if key else None
        if handle is None and key is None and len(_handles) == 1:
            handle = _handles.pop(next(iter(_handles)))
    if handle is None:
        return
    handle.stopping.set()
    if handle.startup is not None:  # bounded: a start-up still running removes what it adds itself
        handle.startup.join(timeout)
    with handle.lock:
        wrapper, handle.stream_listener = handle.stream_listener, None
    wait_for_listener_bus(spark, timeout)
    if _alive(spark):
        try:
            spark._jsparkSession.listenerManager().unregister(handle.jlistener)
        except Exception as exc:  # noqa: BLE001 - the capture closes below: later callbacks find nothing to do
            log.warning("lineage-listener: could not remove the query listener: %s",
                        (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200])
        if wrapper is not None:
            from lineage_listener.capture.reading import streams

            streams.unregister(spark._jsparkSession, wrapper)
    # The store is complete when this returns: the runs end now (runs.ended_at, the end of their
    # capture), unless another session of this process still captures them; nothing is written later.
    handle.capture.end_run(keep=_runs_captured_elsewhere)
    handle.capture.close(timeout)


def _runs_captured_elsewhere() -> set[str]:
    """App ids of the runs the captures still enabled in this process have seen."""
    with _lock:
        captures = [h.capture for h in _handles.values()]
    return {app_id for capture in captures for app_id in capture.runs()}


def _alive(spark: Any) -> bool:
    try:
        return spark.sparkContext._jsc is not None and not spark.sparkContext._jsc.sc().isStopped()
    except Exception:  # noqa: BLE001
        return False
