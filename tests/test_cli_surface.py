"""The CLI's edges: serve's token never on argv, no abbreviated options,
a server without a token says so, and a missing extra is one line naming what to install."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import duckdb
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


def test_ingest_reads_events_without_the_openlineage_client(tmp_path):
    """Events are read as JSON, so ``ingest openlineage`` works where the openlineage extra is missing."""
    events = tmp_path / "events.json"
    events.write_text('{"eventType": "START", "eventTime": "2025-06-01T09:00:00Z", "run": {"runId": "r"}, '
                      '"job": {"namespace": "n", "name": "j"}}')
    proc = cli("ingest", "openlineage", "--store", str(tmp_path / "s.duckdb"), str(events), block="openlineage")
    assert proc.returncode == 0, proc.stderr
    assert "read 1 events: 1 queries" in proc.stderr
    with duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM queries").fetchone()[0] == 1


#: Libraries a command that does not need them must not pay for (each costs 0.1 s or more to import).
HEAVY = ("sqlglot", "duckdb", "fastapi", "yaml", "pyspark", "networkx", "uvicorn")


def test_the_cli_imports_a_command_only_when_it_runs(tmp_path):
    """Importing the CLI, ``--help`` and ``spark-conf`` load none of the heavy libraries; ``--help``
    still lists every command of the table."""
    from lineage_listener.cli import COMMANDS

    probe = ("import io, sys, contextlib\nimport lineage_listener.cli as cli\n"
             "print(sorted(m for m in sys.argv[1].split(',') if m in sys.modules))\n"
             "out = io.StringIO()\n"
             "with contextlib.redirect_stdout(out):\n"
             "    try:\n        cli.main(sys.argv[2:])\n    except SystemExit:\n        pass\n"
             "print(sorted(m for m in sys.argv[1].split(',') if m in sys.modules))\nprint(out.getvalue())")
    for args in (["--help"], ["spark-conf", "--store", str(tmp_path / "s.duckdb")]):
        done = subprocess.run([sys.executable, "-c", probe, ",".join(HEAVY), *args], capture_output=True,
                              text=True, env=ENV, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        imported, ran, *output = done.stdout.splitlines()
        assert (imported, ran) == ("[]", "[]"), (args, imported, ran)
        if args == ["--help"]:
            listed = "\n".join(output)
            assert all(f"    {name} " in listed for name, _, _ in COMMANDS), listed
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("lineage-listener "), version


def test_a_missing_dependency_breaks_only_the_commands_that_need_it(tmp_path):
    """Without PyYAML, ``spark-conf`` and ``upstream`` answer; ``check`` says in one line what to install."""
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.writer import StoreWriter

    store = tmp_path / "s.duckdb"
    assert StoreWriter(store).write(Batch())
    assert cli("spark-conf", "--store", str(store), block="yaml").stdout.startswith("--jars ")
    err = one_line(cli("upstream", "--store", str(store), "ds", "col", block="yaml"))
    assert "unknown dataset 'ds'" in err
    policy = tmp_path / "p.yml"
    policy.write_text("rules: []\n")
    err = one_line(cli("check", "--store", str(store), "--policy", str(policy), block="yaml"))
    assert err.strip() == ("lineage-listener: check: needs PyYAML, a dependency of lineage-listener "
                           "(module 'yaml' is missing): pip install 'PyYAML'")


def _labelled_store(tmp_path):
    from tests.test_current_state import CLEAN, CLEAR, RAW, store_of

    return store_of(tmp_path, [(1, RAW, CLEAN, CLEAR, "replace")]), RAW, CLEAN


def test_unset_of_a_label_never_declared_says_so(tmp_path):
    store, raw, _ = _labelled_store(tmp_path)
    err = one_line(cli("classify", "unset", "--store", str(store), raw, "email", "pii.phone"))
    assert f"{raw} [email] has no label 'pii.phone' declared by set (declared by set: pii.email)" in err
    assert cli("classify", "unset", "--store", str(store), raw, "email", "pii.email").returncode == 0


def test_prune_of_a_mistyped_store_creates_nothing(tmp_path):
    missing = tmp_path / "lineage.duckbd"
    for extra in (["--dry-run"], []):
        err = one_line(cli("prune", "--store", str(missing), "--keep", "30d", *extra))
        assert "no store at" in err
    assert list(tmp_path.iterdir()) == []


def test_classify_list_of_a_dataset_shows_its_unlabelled_columns(tmp_path):
    store, raw, clean = _labelled_store(tmp_path)
    from lineage_listener.store.rows import DatasetColumnRow
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.writer import StoreWriter

    b = Batch()
    for i, column in enumerate(("email", "country"), 1):
        b.add(DatasetColumnRow(dataset=clean, column_name=column, data_type="string", nullable=True,
                               first_seen=None, last_seen=None, ordinal=i))
    assert StoreWriter(store).write(b)
    out = cli("classify", "list", "--store", str(store), "--dataset", clean, "--propagated")
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()]
    assert [f"{clean}.country", "-", "no", "label"] in rows
    assert [f"{clean}.email", "pii.email", "copy"] == rows[2][:3] or any(r[:3] == [f"{clean}.email", "pii.email", "copy"]
                                                                         for r in rows)


def test_classify_set_on_a_store_it_cannot_write_says_why_and_where_it_waits(tmp_path):
    """A store on a read-only file system: the declaration waits in the fallback spool folder, and the
    one line says so (not "busy", not "beside it")."""
    from tests.test_faults import remount, tmpfs

    with tmpfs(tmp_path / "disk") as disk:
        store, raw, _ = _labelled_store(disk)
        remount(disk, "ro")
        try:
            done = cli("classify", "set", "--store", str(store), raw, "email", "pii.contact")
        finally:
            remount(disk, "rw")
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"set pii.contact=true on {raw} [email]: not in the store {store} yet (")
    assert "busy" not in line and f"{store}.spool" not in line and "spooled to /" in line, line
