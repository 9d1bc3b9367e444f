"""A private CA and certificates made at test time (``trustme``): HTTPS servers, Kafka's TLS listener."""
from __future__ import annotations

from pathlib import Path

import pytest


class Certs:
    """A private CA (``ca``), a certificate for ``hosts`` it signed (``cert``, its key ``key``), and a CA
    that signed nothing here (``other``), as PEM files in ``folder``."""

    def __init__(self, folder: Path, hosts: tuple[str, ...] = ("127.0.0.1",)) -> None:
        trustme = pytest.importorskip("trustme")
        ca = trustme.CA()
        self.ca, self.other = folder / "ca.pem", folder / "other-ca.pem"
        self.cert, self.key = folder / "server.pem", folder / "server.key"
        ca.cert_pem.write_to_path(str(self.ca))
        trustme.CA().cert_pem.write_to_path(str(self.other))
        leaf = ca.issue_cert(*hosts)
        leaf.private_key_pem.write_to_path(str(self.key))
        self.key.chmod(0o600)
        self.cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))

    @property
    def server(self) -> tuple[Path, Path, Path]:
        """What :class:`tests.server_helpers.Server` takes to serve HTTPS."""
        return self.cert, self.key, self.ca
