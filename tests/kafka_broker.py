"""A real single-node Kafka broker (KRaft) on 127.0.0.1, from the ``kafka-broker`` jar set.

:class:`Broker` can be stopped (or killed) and started again on the same ports and log folder:
what it held is there again, as after a broker restart in production. With ``secure=True`` it also
listens for SASL_SSL: TLS with a certificate of a private CA made at test time (:mod:`tests.certs`)
and SASL/SCRAM-SHA-512 with one user added when the log folder is formatted.
"""
from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from tests.certs import Certs
from tests.jars import jar_dir, jar_set

#: The SCRAM user of a secure broker (a test secret, made for the test broker only).
SCRAM_USER, SCRAM_PASSWORD = "lineage", "scram-test-secret-41"


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

    def __init__(self, folder: Path, partitions: int = 1, secure: bool = False) -> None:
        jar_set("kafka-broker")  # skips when not fetched
        self.folder = folder
        self.port, self.controller = _free_port(), _free_port()
        self.servers = f"127.0.0.1:{self.port}"
        listeners = {"PLAINTEXT": self.port}
        extra: list[str] = []
        self.certs: Certs | None = None
        if secure:
            self.secure_port = _free_port()
            self.secure_servers = f"127.0.0.1:{self.secure_port}"
            listeners["SASL_SSL"] = self.secure_port
            self.certs = Certs(folder)
            keystore = folder / "broker-keystore.pem"  # the key (PKCS#8, as Kafka reads PEM) and its chain
            keystore.write_bytes(_pkcs8(self.certs.key.read_bytes()) + self.certs.cert.read_bytes())
            extra = ["inter.broker.listener.name=PLAINTEXT", "sasl.enabled.mechanisms=SCRAM-SHA-512",
                     "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
                     "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                     "ssl.keystore.type=PEM", f"ssl.keystore.location={keystore}"]
        self.props = folder / "server.properties"
        self.props.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.bootstrap.servers=127.0.0.1:{self.controller}",
            "listeners=" + ",".join([*(f"{n}://127.0.0.1:{p}" for n, p in listeners.items()),
                                     f"CONTROLLER://127.0.0.1:{self.controller}"]),
            "advertised.listeners=" + ",".join(f"{n}://127.0.0.1:{p}" for n, p in listeners.items()),
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
            f"log.dirs={folder / 'data'}", "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
            f"num.partitions={partitions}", "group.initial.rebalance.delay.ms=0", *extra, ""]))
        self.java = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
                     str(jar_dir("kafka-broker") / "*")]
        scram = ["--add-scram", f"SCRAM-SHA-512=[name={SCRAM_USER},password={SCRAM_PASSWORD}]"] if secure else []
        subprocess.run([*self.java, "kafka.tools.StorageTool", "format", "--standalone", "-t",
                        str(uuid.uuid4()).replace("-", "")[:22], "-c", str(self.props), *scram],
                       check=True, capture_output=True, timeout=120)

    def client_conf(self, ca: Path | None = None, password: str = SCRAM_PASSWORD) -> dict[str, str]:
        """librdkafka settings that reach the SASL_SSL listener (``ca``: the CA to trust, default the
        broker's own), as ``spark.lineage.kafka.conf.<key>`` pass them through."""
        assert self.certs is not None, "not a secure broker"
        return {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": SCRAM_USER,
                "sasl.password": password, "ssl.ca.location": str(ca or self.certs.ca)}
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> "Broker":
        log = (self.folder / "broker.log").open("a")
        self.proc = subprocess.Popen([*self.java, "kafka.Kafka", str(self.props)], stdout=log,
                                     stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        ports = [self.port, *([self.secure_port] if self.certs is not None else [])]
        while not all(_listening(p) for p in ports):  # readiness poll of a separate process, bounded
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


def _pkcs8(key_pem: bytes) -> bytes:
    """A PEM private key as PKCS#8, the form Kafka's PEM keystore reads."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(key_pem, password=None)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@contextlib.contextmanager
def kafka_broker(folder: Path, timeout: float = 120.0, partitions: int = 1) -> Iterator[str]:
    """Format a KRaft log folder, start the broker, yield ``host:port``; stop it (its pid) after."""
    broker = Broker(folder, partitions)
    broker.start(timeout)
    try:
        yield broker.servers
    finally:
        broker.stop()
