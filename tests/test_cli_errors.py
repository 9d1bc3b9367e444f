"""Every CLI failure is one line on stderr and a non-zero exit, never a traceback.

Each command runs in a subprocess against a missing file, a corrupt file, a DuckDB file
with no lineage tables yet, and a store of another version. The last is a stand-in: this
version's schema with ``kind`` dropped from ``datasets`` and ``column_lineage``, as a store
written before those columns existed would be.
"""
from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path

import duckdb
import pytest

from lineage_listener.cli import COMMANDS, build_parser
from lineage_listener.store.schema import schema_sql

#: Every command that reads a store, as argv around ``{store}`` (and ``{policy}``, a valid policy file).
QUERY_COMMANDS = {
    "upstream": ["upstream", "--store", "{store}", "ds", "col"],
    "downstream": ["downstream", "--store", "{store}", "ds", "col"],
    "impact": ["impact", "--store", "{store}", "ds", "col"],
    "provenance": ["provenance", "--store", "{store}", "ds", "col"],
    "html": ["html", "--store", "{store}", "ds", "col", "--out", "{tmp}/g.html"],
    "sql": ["sql", "--store", "{store}", "SELECT * FROM column_lineage"],
    "classify": ["classify", "list", "--store", "{store}"],
    "check": ["check", "--store", "{store}", "--policy", "{policy}"],
    "diff": ["diff", "--store", "{store}", "--app", "a"],
}


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lineage_listener", *argv], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[1])


def assert_one_line(proc: subprocess.CompletedProcess, *expected: str) -> None:
    """A failure: one line, exit code 2 (docs/reference/cli.md: 1 is an answer, never a failure)."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert proc.stdout == ""
    for text in expected:
        assert text in lines[0], lines[0]


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cli_stores")
    corrupt = d / "corrupt.duckdb"
    corrupt.write_bytes(b"this is not a DuckDB database file\n" * 200)
    empty = d / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    old = d / "old.duckdb"
    tables = (resources.files("lineage_listener.store") / "schema.sql").read_text(encoding="utf-8")
    with duckdb.connect(str(old)) as con:  # this version's tables without their ``kind`` columns
        con.execute("\n".join(line for line in tables.splitlines() if not line.strip().startswith("kind ")))
    return {"missing": d / "missing.duckdb", "corrupt": corrupt, "empty": empty, "old": old}


FAULTS = {
    "missing": ("no store at",),
    "corrupt": ("not a valid DuckDB database file",),
    "empty": ("has no lineage tables yet",),
    "old": ("another lineage-listener version", "kind"),
}


@pytest.mark.parametrize("command", sorted(QUERY_COMMANDS))
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_query_commands_on_bad_stores(stores, command, fault, tmp_path):
    if fault == "old" and command in ("sql", "classify", "check", "diff"):
        pytest.skip("reads no column the stand-in lacks: an old table is simply queried")
    policy = tmp_path / "policy.yml"
    policy.write_text("rules:\n  - name: r\n    kind: forbid\n    label: pii\n    datasets: ['x.*']\n")
    values = {"store": str(stores[fault]), "policy": str(policy), "tmp": str(tmp_path)}
    proc = cli(*(a.format(**values) for a in QUERY_COMMANDS[command]))
    assert_one_line(proc, "lineage-listener", *FAULTS[fault])
    assert not (tmp_path / "g.html").exists()


def test_sql_error_on_a_good_store_is_one_line(stores, tmp_path):
    good = tmp_path / "good.duckdb"
    with duckdb.connect(str(good)) as con:
        con.execute(schema_sql())
    assert_one_line(cli("sql", "--store", str(good), "SELECT nope FROM column_lineage"), "SQL error")
    assert_one_line(cli("upstream", "--store", str(good), "ds", "col"), "unknown dataset 'ds'")
    assert_one_line(cli("upstream", "--store", str(good), "ds", "col", "--depth", "-1"), "depth must be >= 0")
    assert_one_line(cli("impact", "--store", str(good), "ds", "col", "--since", "yesterday-ish"))


def test_every_command_rejects_a_bad_argument_in_one_line():
    commands = [name for name in build_parser()._subparsers._group_actions[0].choices]
    assert commands == [name for name, _, _ in COMMANDS]
    for command in commands:
        assert_one_line(cli(command, "--no-such-option"), "lineage-listener", "--help")
    assert_one_line(cli("no-such-command"), "invalid choice")
    assert_one_line(cli("upstream", "--store", "x", "ds", "col", "--depth", "two"), "invalid int value")
