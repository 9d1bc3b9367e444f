"""``python -m lineage_listener.bridge.worker``: the Python end of the JVM bridge.

Started by the bridge with ``LINEAGE_BRIDGE_PORT`` / ``LINEAGE_BRIDGE_TOKEN``
(and ``LINEAGE_STORE``) in its environment. It connects to the bridge's py4j
gateway, serves callbacks on its own 127.0.0.1 callback server (same token),
feeds every event to :class:`~lineage_listener.capture.pipeline.Capture` and
exits when the bridge says ``shutdown`` or the JVM goes away (stdin closes).
"""
from __future__ import annotations

import logging
import os
import resource
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from lineage_listener.bridge import WORKER_INTERFACE, heartbeat

log = logging.getLogger("lineage_listener.bridge.worker")


@dataclass(frozen=True)
class WorkerSettings:
    """What the bridge passes in the environment."""

    port: int
    token: str
    store: str | None
    log_level: str
    openlineage_url: str | None = None
    url: str | None = None  # a lineage server instead of the store (token: env LINEAGE_TOKEN)
    kafka: str | None = field(default=None, repr=False)  # LINEAGE_KAFKA (JSON; may hold secrets)
    worker_id: str = ""  # which of the bridge's workers this is; every heartbeat names it
    heartbeat_ms: int = 1000
    sql_text: str | None = None  # LINEAGE_SQL_TEXT: spark.lineage.sqlText (full, masked, none)
    tls_ca: str | None = None  # LINEAGE_TLS_CA: spark.lineage.tls.ca (a CA file)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> "WorkerSettings":
        try:
            port = int(env["LINEAGE_BRIDGE_PORT"])
            token = env["LINEAGE_BRIDGE_TOKEN"]
        except (KeyError, ValueError):
            raise SystemExit("lineage_listener.bridge.worker is started by the JVM bridge, not by hand "
                             "(LINEAGE_BRIDGE_PORT / LINEAGE_BRIDGE_TOKEN are not set)") from None
        beat = env.get("LINEAGE_BRIDGE_HEARTBEAT_MS", "")
        return cls(port=port, token=token, store=env.get("LINEAGE_STORE") or None,
                   log_level=env.get("LINEAGE_LOG_LEVEL") or "WARNING",
                   openlineage_url=env.get("LINEAGE_OPENLINEAGE_URL") or None,
                   url=env.get("LINEAGE_URL") or None, kafka=env.get("LINEAGE_KAFKA") or None,
                   worker_id=env.get("LINEAGE_BRIDGE_WORKER_ID", ""),
                   sql_text=env.get("LINEAGE_SQL_TEXT") or None, tls_ca=env.get("LINEAGE_TLS_CA") or None,
                   heartbeat_ms=int(beat) if beat.isdigit() and int(beat) > 0 else cls.heartbeat_ms)


class BridgeWorker:
    """The py4j proxy the bridge calls; implements ``lineage.bridge.Worker``.

    Each call runs on a py4j callback thread while the bridge waits, so the
    ``QueryExecution`` is alive for the whole call. Errors are logged, never
    raised back: returning is the acknowledgement.
    """

    class Java:
        implements = [WORKER_INTERFACE]

    def __init__(self, capture: Any) -> None:
        self._capture = capture
        self.stopped = threading.Event()
        self._errors_logged: set[str] = set()

    def onSuccess(self, func_name: str, qe: Any, duration_ns: int) -> None:  # noqa: N802 (Java name)
        self._guard("on_success", self._capture.on_success, func_name, qe, int(duration_ns))

    def onFailure(self, func_name: str, qe: Any, exception: Any) -> None:  # noqa: N802
        self._guard("on_failure", self._capture.on_failure, func_name, qe, exception)

    def onStreamStarted(self, run_id: str, query: Any) -> None:  # noqa: N802
        self._guard("on_stream_started", self._capture.on_stream_started, str(run_id), query)

    def onStreamProgress(self, event: Any, query: Any) -> None:  # noqa: N802
        self._guard("on_stream_progress", self._capture.on_stream_progress, event, query)

    def flush(self, timeout_ms: int) -> bool:
        return bool(self._guard("flush", self._capture.flush, timeout_ms / 1000.0))

    def endRun(self, app_id: str) -> None:  # noqa: N802
        self._guard("end_run", self._end_run, app_id)

    def _end_run(self, app_id: str) -> None:
        self._capture.hurry()  # the application is ending: a busy store gets lineage spooled, not a stall
        self._capture.end_run(app_id)

    def shutdown(self) -> None:
        self.stopped.set()

    def _guard(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:  # capture must never break the relay
            if what not in self._errors_logged:
                self._errors_logged.add(what)
                log.exception("lineage capture failed in %s (further failures there are not logged)", what)
            return None


def _watch_stdin(stopped: threading.Event) -> None:
    """The bridge keeps our stdin open; end-of-file means the JVM is gone."""
    try:
        fd = sys.stdin.fileno()
        while os.read(fd, 4096):  # raw reads: no buffer lock held at interpreter exit
            pass
    except (OSError, ValueError):
        pass
    stopped.set()


#: Where lineage goes when the job sets no ``spark.lineage.store`` (the driver's working directory).
DEFAULT_STORE = "lineage.duckdb"


def _make_capture(store: str | None, openlineage_url: str | None = None, url: str | None = None,
                  kafka: str | None = None, sql_text: str | None = None, tls_ca: str | None = None) -> Any:
    from lineage_listener.capture import sinks, textmode
    from lineage_listener.capture.pipeline import Capture

    mode = textmode.from_conf(sql_text)
    after_write = sinks.openlineage_after_write(openlineage_url, tls_ca) if openlineage_url else None
    if kafka:  # the topic, besides the store or server when one is named
        from lineage_listener.kafka.settings import KafkaSettings

        writer = sinks.kafka_writer(KafkaSettings.from_env({"LINEAGE_KAFKA": kafka}), store, url, tls_ca=tls_ca)
        return Capture(store or DEFAULT_STORE, after_write=after_write, writer=writer, sql_text=mode)
    if not store and not url:
        log.warning("spark.lineage.store is not set; writing lineage to %s in %s", DEFAULT_STORE, os.getcwd())
    return Capture(store or DEFAULT_STORE, after_write=after_write, url=url, sql_text=mode, tls_ca=tls_ca)


def serve(settings: WorkerSettings, close_timeout: float = 30.0) -> int:
    """Connect to the bridge, serve until told to stop, release everything. Returns an exit code."""
    from py4j.java_gateway import CallbackServerParameters, GatewayParameters, JavaGateway

    capture = _make_capture(settings.store, settings.openlineage_url, settings.url, settings.kafka,
                            settings.sql_text, settings.tls_ca)
    worker = BridgeWorker(capture)
    gateway = JavaGateway(
        gateway_parameters=GatewayParameters(address="127.0.0.1", port=settings.port,
                                             auth_token=settings.token, auto_convert=True,
                                             eager_load=True),
        callback_server_parameters=CallbackServerParameters(address="127.0.0.1", port=0,
                                                            auth_token=settings.token,
                                                            daemonize=True,
                                                            daemonize_connections=True),
    )
    try:
        callback_port = gateway.get_callback_server().get_listening_port()
        # Beating before attaching: from attach on, the bridge expects signs of life during each call.
        heartbeat.start(lambda: gateway.entry_point.heartbeat(settings.worker_id, os.getpid()),
                        settings.heartbeat_ms / 1000.0, worker.stopped)
        gateway.entry_point.attach(callback_port, worker)
        log.info("connected to the bridge on 127.0.0.1:%d (callbacks on %d), store %s; %s",
                 settings.port, callback_port, settings.store, _cost())
        threading.Thread(target=_watch_stdin, args=(worker.stopped,), name="stdin-watch",
                         daemon=True).start()
        worker.stopped.wait()
    finally:
        try:
            capture.close(timeout=close_timeout)
        finally:
            # close(), not shutdown(): shutdown() would also stop the bridge's gateway server
            gateway.close(keep_callback_server=False, close_callback_server_connections=True)
            log.info("stopped; %s", _cost())
    return 0


_STARTED = time.monotonic()


def _cost() -> str:
    """Seconds since the worker started and the CPU seconds it has used (its share of the job's cores).

    >>> _cost()                                          # doctest: +ELLIPSIS
    '... s since start, ... s CPU'
    """
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return f"{time.monotonic() - _STARTED:.2f} s since start, {usage.ru_utime + usage.ru_stime:.2f} s CPU"


def main() -> int:
    settings = WorkerSettings.from_env()
    logging.basicConfig(stream=sys.stderr, level=settings.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # py4j logs every callback at INFO
    return serve(settings)


if __name__ == "__main__":
    code = main()
    # Everything is flushed and closed by now; skip interpreter teardown (it takes ~1 s with
    # pyspark/duckdb loaded, and the driver waits for us before it exits).
    logging.shutdown()
    sys.stderr.flush()
    os._exit(code)
