"""A real single-node Kafka broker (KRaft) on 127.0.0.1, from the ``kafka-broker`` jar set.

:class:`Broker` can be stopped (or killed) and started again on the same ports and log folder:
what it held is there again, as after a broker restart in production.
"""
from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from tests.jars import jar_dir, jar_set


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Broker:
    """One broker process over a KRaft log folder formatted once."""

    def __init__(self, folder: Path, partitions: int = 1) -> None:
        jar_set("kafka-broker")  # skips when not fetched
        self.folder = folder
        self.port, self.controller = _free_port(), _free_port()
        self.servers = f"127.0.0.1:{self.port}"
        self.props = folder / "server.properties"
        self.props.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.bootstrap.servers=127.0.0.1:{self.controller}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}", "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            f"log.dirs={folder / 'data'}", "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
            f"num.partitions={partitions}", "group.initial.rebalance.delay.ms=0", ""]))
        self.java = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
                     str(jar_dir("kafka-broker") / "*")]
        subprocess.run([*self.java, "kafka.tools.StorageTool", "format", "--standalone", "-t",
                        str(uuid.uuid4()).replace("-", "")[:22], "-c", str(self.props)],
                       check=True, capture_output=True, timeout=120)
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> "Broker":
        log = (self.folder / "broker.log").open("a")
        self.proc = subprocess.Popen([*self.java, "kafka.Kafka", str(self.props)], stdout=log,
                                     stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while not _listening(self.port):  # readiness poll of a separate process, bounded
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Kafka broker did not start: see {self.folder / 'broker.log'}")
            time.sleep(0.2)
        return self

    def stop(self, kill: bool = False) -> None:
        """Stop the broker (its pid): gracefully, or at once with ``kill``."""
        if self.proc is None or self.proc.poll() is not None:
            return
        if kill:
            self.proc.kill()
        else:
            self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        while _listening(self.port):  # the port is free before a restart binds it
            time.sleep(0.1)


@contextlib.contextmanager
def kafka_broker(folder: Path, timeout: float = 120.0, partitions: int = 1) -> Iterator[str]:
    """Format a KRaft log folder, start the broker, yield ``host:port``; stop it (its pid) after."""
    broker = Broker(folder, partitions)
    broker.start(timeout)
    try:
        yield broker.servers
    finally:
        broker.stop()
