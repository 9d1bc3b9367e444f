"""HTTPS between capture and a lineage server: ``serve --tls-cert/--tls-key``, and clients that check
the certificate (capture's writer, ``push``, live OpenLineage emission) against the system's CAs or a
private CA file. A certificate that is not trusted (another CA, another host) fails closed in one
line, and what was captured waits in the spool until it is trusted.

The CA and the certificates are made for each run with ``trustme`` (:mod:`tests.certs`).
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

pytest.importorskip("trustme")

from lineage_listener.cli import main  # noqa: E402
from lineage_listener.store.batch import Batch  # noqa: E402
from lineage_listener.store.remote import RemoteWriter  # noqa: E402
from lineage_listener.store.rows import row_of  # noqa: E402
from tests.certs import Certs  # noqa: E402
from tests.server_helpers import TOKEN, Server  # noqa: E402


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return Certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def server(certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("tls") / "lineage.duckdb", tls=certs.server).start()
    yield srv
    srv.stop()


def batch(query_id: str) -> Batch:
    b = Batch()
    b.add(row_of("queries", [query_id, "run-tls", "save", "InsertIntoHadoopFsRelationCommand", None, "succeeded",
                             None, 5, "2026-03-01 10:00:00", "db.t"]))
    b.add(row_of("column_lineage", [query_id, "run-tls", "db.t", "c", "db.src", "c", "identity", "direct", "c",
                                    False, "2026-03-01 10:00:00"]))
    return b


def queries(srv: Server) -> set[str]:
    if not srv.store.exists():
        return set()
    with duckdb.connect(str(srv.store), read_only=True) as con:
        return {r[0] for r in con.execute("SELECT query_id FROM queries").fetchall()}


def cli(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    """The command line, in this process: its exit status and what it said on stderr."""
    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().err


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("lineage_")]


def test_untrusted_certificates_fail_closed_in_one_line_and_the_spool_waits_for_push(server, certs, caplog, capsys,
                                                                                   monkeypatch):
    monkeypatch.setenv("LINEAGE_TOKEN", TOKEN)
    caplog.set_level(logging.WARNING, logger="lineage_listener")
    host = server.url.replace("127.0.0.1", "localhost")  # the certificate names 127.0.0.1 only
    attempts = ((server.url, certs.other, "certificate not trusted"),  # another CA
                (server.url, None, "certificate not trusted"),  # the system's CAs
                (host, certs.ca, "certificate not trusted: Hostname mismatch"))  # another host
    for i, (url, ca, why) in enumerate(attempts):
        caplog.clear()
        writer = RemoteWriter(url, TOKEN, lock_timeout=5, tls_ca=str(ca) if ca else None)
        for n in (1, 2):
            assert writer.write(batch(f"q-{i}-{n}")) is False
        [line] = warnings(caplog)  # one line for the outage, however many batches wait
        assert why in line and "spooled" in line and "spark.lineage.tls.ca" in line, line
        assert "\n" not in line and "Traceback" not in caplog.text
    assert queries(server) == set()  # nothing got through an unchecked connection
    assert len(RemoteWriter(server.url, TOKEN).spooled()) == 4 and len(RemoteWriter(host, TOKEN).spooled()) == 2

    code, said = cli(capsys, "push", "--url", server.url)  # without the CA: refused, nothing sent, one line
    assert code == 2 and "certificate not trusted" in said and len(said.strip().splitlines()) == 1, said
    assert "--tls-ca" in said
    code, said = cli(capsys, "push", "--url", server.url, "--tls-ca", str(certs.key))
    assert code == 2 and said.startswith(f"lineage-listener: --tls-ca {certs.key}: cannot be read"), said
    code, said = cli(capsys, "push", "--url", server.url, "--tls-ca", str(certs.ca))
    assert code == 0 and "sent 4 spooled batches" in said, said
    writer = RemoteWriter(server.url, TOKEN, tls_ca=str(certs.ca))
    assert writer.write(batch("q-direct")) is True
    assert queries(server) == {"q-0-1", "q-0-2", "q-1-1", "q-1-2", "q-direct"}
    assert len(RemoteWriter(host, TOKEN).spooled()) == 2  # another URL's spool waits for its own push


def test_live_openlineage_emission_checks_the_endpoint_certificate(server, certs, caplog, monkeypatch):
    from lineage_listener.openlineage.live import Emitter

    monkeypatch.setenv("LINEAGE_OPENLINEAGE_TOKEN", TOKEN)
    caplog.set_level(logging.WARNING, logger="lineage_listener")
    endpoint = f"{server.url}/api/v1/lineage"
    untrusted = Emitter(endpoint)
    assert untrusted.after_write(batch("ol-untrusted")) is None and untrusted.sent == 0
    [line] = warnings(caplog)
    assert "certificate not trusted" in line and "1 queries wait in the store" in line, line
    trusted = Emitter(endpoint, tls_ca=str(certs.ca))
    try:
        delivered = trusted.after_write(batch("ol-trusted"))
    finally:  # an idle TLS connection held open would hold up the server's stop (its TLS goodbye)
        trusted.transport.close()
    assert trusted.sent == 1 and [r.query_id for r in delivered.rows["openlineage_sent"]] == ["ol-trusted"]


def test_serve_with_half_or_a_bad_tls_pair_is_one_line(certs, tmp_path, capsys):
    store = tmp_path / "s.duckdb"
    assert cli(capsys, "serve", "--store", str(store), "--tls-cert", str(certs.cert)) == \
        (2, "lineage-listener: give both --tls-cert and --tls-key to serve HTTPS\n")
    code, said = cli(capsys, "serve", "--store", str(store), "--tls-cert", str(certs.key), "--tls-key", str(certs.cert))
    assert code == 2 and len(said.strip().splitlines()) == 1 and "cannot be used" in said, said
    assert not store.exists()
