"""The CLI's edges: serve's token never on argv, no abbreviated options,
a server without a token says so, and a missing extra is one line naming what to install."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.server_helpers import ROOT, free_port

ENV = {k: v for k, v in {**os.environ, "PYTHONPATH": str(ROOT)}.items() if k != "LINEAGE_SERVER_TOKEN"}

#: Runs the real CLI with some modules made unimportable (as if their extra were not installed).
BLOCKED = ("import sys\nfor m in sys.argv.pop(1).split(','): sys.modules[m] = None\n"
           "from lineage_listener.cli import main\nsys.exit(main())")


def cli(*args: str, env: dict | None = None, block: str | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", BLOCKED, block, *args] if block else [sys.executable, "-m", "lineage_listener", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env or ENV, timeout=120)


def one_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    return proc.stderr


def test_serve_token_on_the_command_line_is_an_error_saying_where_it_goes(tmp_path):
    err = one_line(cli("serve", "--store", str(tmp_path / "s.duckdb"), "--token", "s3cret"))
    assert "LINEAGE_SERVER_TOKEN" in err and "--token-env NAME" in err and "s3cret" not in err
    err = one_line(cli("serve", "--store", str(tmp_path / "s.duckdb"), "--token=s3cret", "--token-env", "MY_TOKEN"))
    assert "MY_TOKEN" in err and "s3cret" not in err


@pytest.mark.parametrize("args", [
    ("serve", "--store", "x.duckdb", "--token-en", "T"),
    ("export", "openlineage", "--store", "x.duckdb", "--ou", "-"),
    ("upstream", "--sto", "x.duckdb", "ds", "col"),
])
def test_no_option_is_accepted_by_a_prefix(args, tmp_path):
    err = one_line(cli(*args))  # the prefix is not taken for the option it starts
    assert "unrecognized arguments" in err or "is required" in err or "are required: --store" in err


def _serve_output(store, env: dict) -> str:
    """Start ``serve`` with ``env``, wait until it answers, stop it; what it printed."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "lineage_listener", "serve", "--store", str(store), "--port",
                             str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
    finally:
        proc.terminate()
        out = proc.communicate(timeout=30)[0]
    return out


def test_serve_without_a_token_says_writes_are_disabled(tmp_path):
    unset = _serve_output(tmp_path / "a.duckdb", ENV)
    assert [line for line in unset.splitlines() if "writes are disabled" in line] == [
        next(line for line in unset.splitlines() if "writes are disabled" in line)]
    assert "$LINEAGE_SERVER_TOKEN is not set" in unset
    empty = _serve_output(tmp_path / "b.duckdb", {**ENV, "LINEAGE_SERVER_TOKEN": ""})
    assert "writes are disabled" in empty and "$LINEAGE_SERVER_TOKEN is empty" in empty
    with_token = _serve_output(tmp_path / "c.duckdb", {**ENV, "LINEAGE_SERVER_TOKEN": "t0k3n"})
    assert "writes are disabled" not in with_token and "t0k3n" not in with_token


@pytest.mark.parametrize("block, args, extra", [
    ("openlineage", ("export", "openlineage", "--store", "{store}", "--out", "-"), "openlineage"),
    ("openlineage", ("ingest", "openlineage", "--store", "{store}", "{events}"), "openlineage"),
    ("datahub", ("export", "datahub", "--store", "{store}", "--out", "{tmp}/mcp.json"), "datahub"),
    ("uvicorn,fastapi", ("serve", "--store", "{store}", "--port", "9"), "server"),
    ("confluent_kafka", ("consume", "--store", "{store}", "--kafka-bootstrap", "127.0.0.1:9", "--kafka-topic", "t"),
     "kafka"),
])
def test_a_missing_extra_is_one_line_naming_it(block, args, extra, tmp_path):
    events = tmp_path / "events.json"
    events.write_text('{"eventType": "START", "eventTime": "2025-06-01T09:00:00Z", "run": {"runId": "r"}, '
                      '"job": {"namespace": "n", "name": "j"}}')
    values = {"store": str(tmp_path / "s.duckdb"), "events": str(events), "tmp": str(tmp_path)}
    err = one_line(cli(*(a.format(**values) for a in args), block=block))
    assert f"pip install 'lineage-listener[{extra}]'" in err, err
    assert not (tmp_path / "s.duckdb").exists()  # refused before touching the store
