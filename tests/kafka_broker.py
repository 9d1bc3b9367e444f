"""A real single-node Kafka broker (KRaft) on 127.0.0.1, from the ``kafka-broker`` jar set."""
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


@contextlib.contextmanager
def kafka_broker(folder: Path, timeout: float = 120.0) -> Iterator[str]:
    """Format a KRaft log folder, start the broker, yield ``host:port``; stop it (its pid) after."""
    jar_set("kafka-broker")  # skips when not fetched
    classpath = str(jar_dir("kafka-broker") / "*")
    port, controller = _free_port(), _free_port()
    props = folder / "server.properties"
    props.write_text("\n".join([
        "process.roles=broker,controller", "node.id=1",
        f"controller.quorum.bootstrap.servers=127.0.0.1:{controller}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}", "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={folder / 'data'}", "offsets.topic.replication.factor=1",
        "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
        "num.partitions=1", "group.initial.rebalance.delay.ms=0", ""]))
    java = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath]
    subprocess.run([*java, "kafka.tools.StorageTool", "format", "--standalone", "-t", str(uuid.uuid4()).replace(
        "-", "")[:22], "-c", str(props)], check=True, capture_output=True, timeout=timeout)
    log = (folder / "broker.log").open("w")
    proc = subprocess.Popen([*java, "kafka.Kafka", str(props)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while not _listening(port):  # readiness poll of a separate process, bounded
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Kafka broker did not start: see {folder / 'broker.log'}")
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
