"""The commands the README and the docs pages show are run by the suite on the pipelines the pages
use, and print what the pages show (paths, times and ids written one way; tests/docs_commands.py
reads the pages). A page in ``RUNNERS`` has every command run by its test, a new one included;
any other command is listed in ``NOT_RUN`` with the reason, so a command added to a page fails
here until it is run or listed."""
from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from tests import docs_commands
from tests.server_helpers import Server
from tests.docs_commands import ROOT, Example, examples, json_matches, matches, normal_lines, pages

#: Pages whose every command a test runs: page -> the test.
RUNNERS = {
    "docs/governance.md": "tests/test_docs_commands.py::test_the_governance_page_prints_what_it_shows",
}
#: Commands on the demo's store (``make demo``'s ``demo-output/``), wherever a page shows them.
DEMO_FOLDER = "demo-output/"
#: Commands run by tests of their own (the test named), on the page's pipeline.
RUN_ELSEWHERE = {
    "docs/querying.md": ("tests/test_docs_examples.py", "## On a store of four applications"),
}
#: Single commands run by a test of this file: (page, the command's start) -> the test.
RUN_ALONE = {("docs/governance-diff-preview.md", "lineage-listener diff --store lineage.duckdb --app daily_load"):
             "test_the_rows_written_diff_prints_what_the_page_shows"}
#: Commands the suite does not run here, with why: (page, the command's start) -> reason. Every
#: other command of a page is run (``RUNNERS``, ``RUN_ELSEWHERE``) or fails the first test below.
NOT_RUN: dict[tuple[str, str], str] = {}


def _not_run(page: str, reason: str, *starts: str) -> None:
    for start in starts:
        NOT_RUN[page, start] = reason


def not_run(example: Example) -> bool:
    return any(page == example.page and example.command.startswith(start) for page, start in NOT_RUN)


SYNOPSIS = "a synopsis: its upper-case words and [options] are placeholders"
INSTALL = "installs into the reader's environment (the suite runs in the one `make install` made)"
OWN_JOB = "submits a job file of the reader's own to a cluster (spark-conf's flags: tests/test_cli_surface.py)"
MAKE = "a make target of the development loop: CI runs it (make test, make docs), tests/test_newcomer.py checks make demo's recipe"
_not_run("README.md", MAKE, "make demo", "make test")
_not_run("README.md", OWN_JOB, "spark-submit $(lineage-listener spark-conf")
_not_run("docs/getting-started.md", INSTALL, "git clone <this repository>", "pip install")
_not_run("docs/getting-started.md", MAKE, "make demo", "make test", "make docs", "make wheel")
_not_run("docs/getting-started.md", OWN_JOB, "spark-submit $(lineage-listener spark-conf")
_not_run("docs/capture.md", OWN_JOB, "spark-submit $(lineage-listener spark-conf")
_not_run("docs/development.md", "the development loop's own commands: they rebuild the plan fixtures "
         "(tests/test_plan_fixtures.py runs on them)", ".venv/bin/python -m")
_not_run("docs/governance.md", "the pipeline: the retail fixture runs it (tests/retail.py run_pipeline)",
         "python -c 'from pathlib import Path; from tests.retail import run_pipeline;", "cd /tmp/shop/retail")
_not_run("docs/governance.md", SYNOPSIS, "lineage-listener classify unset --store lineage.duckdb DATASET")
_not_run("docs/governance.md", "the lineage server's watch with a webhook receiver: not run by the page's test "
         "(tests/test_governance.py runs serve --policy and its webhook)",
         "export LINEAGE_SERVER_TOKEN=", "lineage-listener serve --store served.duckdb", "curl -s ")
_not_run("docs/governance-diff-preview.md", SYNOPSIS + " (applications and files of no pipeline of the pages)",
         "lineage-listener diff --store lineage.duckdb --app daily_orders", "lineage-listener diff --store lineage.duckdb --runs",
         "lineage-listener diff --store lineage.duckdb --windows", "lineage-listener diff --store new.duckdb",
         "lineage-listener preview --store lineage.duckdb")
_not_run("docs/kafka.md", "a SASL_SSL broker at broker:9093 and files under /etc (tests/test_kafka.py runs "
         "publish, serve and consume against a local broker)",
         "spark-submit $(lineage-listener spark-conf --kafka", "cat /etc/lineage/kafka.conf",
         "lineage-listener serve --store /srv/", "lineage-listener consume --store /data/",
         "lineage-listener export tables --store /data/")
_not_run("docs/lakehouse.md", "the Delta and Iceberg pipeline runs only in tests/lakehouse, in their own "
         "virtualenvs (make test-lakehouse)", "lineage-listener sql --store lineage.duckdb")
_not_run("docs/openlineage.md", "a Marquez or DataHub server", "LINEAGE_OPENLINEAGE_TOKEN=", "datahub ingest")
_not_run("docs/openlineage.md", SYNOPSIS, "lineage-listener export datahub --store lineage.duckdb --out mcps.json [")
_not_run("docs/querying.md", SYNOPSIS, "lineage-listener upstream   --store PATH", "lineage-listener downstream --store PATH",
         "lineage-listener impact     --store PATH", "lineage-listener provenance --store PATH",
         "lineage-listener sql        --store PATH", "lineage-listener html       --store PATH")
_not_run("docs/querying.md", "the README's job (tests/test_readme_example.py runs it and this query)",
         "lineage-listener sql --store lineage.duckdb \"SELECT target_column, source_column, transform, kind,")
_not_run("README.md", "the README's job: tests/test_readme_example.py runs it and this query",
         "lineage-listener sql --store lineage.duckdb \"SELECT target_column, source_column, transform, kind,")
_not_run("docs/security.md", "a server at a host with an OIDC issuer and files under /etc and /srv "
         "(tests/test_access.py and tests/test_access_oidc.py run serve --access with a real issuer)",
         "export LINEAGE_TOKEN_CI=", "lineage-listener serve --store", "curl -s -H \"Authorization: Bearer $ANN\"",
         "lineage-listener audit --store /srv/")
_not_run("docs/server.md", INSTALL, "pip install")
_not_run("docs/server.md", "a server at a host with TLS and files under /etc and /srv (tests/test_server.py runs "
         "serve, TLS and push against a real server)", "export LINEAGE_SERVER_TOKEN=...",
         "lineage-listener serve --store /srv/", "lineage-listener push --url https://lineage:8443",
         "spark-submit $(lineage-listener spark-conf) --conf spark.lineage.url=")
_not_run("docs/server.md", "a run Airflow launched, with Airflow's events ingested: tests/test_airflow_parent.py",
         "curl -s 'localhost:8765/api/runs/")
_not_run("docs/streaming.md", "the page's stream (tests/test_streaming.py captures file streams)",
         "lineage-listener sql --store lineage.duckdb")


def _section_commands(page: str, section: str) -> set[str]:
    text = (ROOT / page).read_text()
    body = text[text.index(section):]
    end = body.find("\n## ", len(section))
    first = text[:text.index(section)].count("\n") + 1
    last = first + (body[:end] if end > 0 else body).count("\n")
    return {e.command for e in examples(page) if first <= e.line <= last}


def test_every_command_on_a_page_is_run_or_listed_with_a_reason():
    unlisted = []
    for page in pages():
        elsewhere = _section_commands(page, RUN_ELSEWHERE[page][1]) if page in RUN_ELSEWHERE else set()
        for example in examples(page):
            alone = any(page == p and example.command.startswith(start) for p, start in RUN_ALONE)
            if page in RUNNERS or example.command in elsewhere or on_demo_store(example) or alone or not_run(example):
                continue
            unlisted.append(f"{page}:{example.line}: {example.command}")
    assert not unlisted, "commands no test runs (run them, or list them in NOT_RUN with why):\n" + "\n".join(unlisted)


def test_not_run_names_only_commands_the_pages_show():
    shown = [e for page in pages() for e in examples(page)]
    stale = [key for key in NOT_RUN if not any(e.page == key[0] and e.command.startswith(key[1]) for e in shown)]
    assert not stale, stale


# -- docs/governance.md on the retail pipeline -------------------------------------------------------

GOVERNANCE = "docs/governance.md"
#: Files the page's commands read that it describes without showing them whole: name -> text.
UNSHOWN_FILES = {
    "typo.yml": "classifications:\n  - dataset: \"file:/**/raw/customers.csv\"\n    columns:\n      emial: [pii.email]\n",
    "bad.yml": "rules:\n  - name: typo\n    kind: forbidd\n    label: pii\n    datasets: [\"file:/**/exports/**\"]\n",
    "bad2.yml": "rules:\n  - name: partners\n    kind: forbid\n    label: pii\n    datasets: [\"spark_catalog.*.partner_*\"]\n",
}


def yaml_files(page: str) -> dict[str, str]:
    """The page's YAML blocks that start with ``# NAME.yml``: name -> text."""
    found = {}
    for block in re.findall(r"```yaml\n(.*?)```", (ROOT / page).read_text(), re.S):
        name = re.match(r"# ([\w.-]+\.yml)\n", block)
        if name:
            found[name.group(1)] = block
    return found


def normal(text: str, paths: dict[str, str]) -> str:
    """Output written one way: the page's folders for the test's, times as a word, Spark's run and query
    ids as the pages shorten them (``local-…``, ``local-…:…``)."""
    for real, shown in paths.items():
        text = text.replace(real, shown)
    text = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?", "TIME", text)
    return re.sub(r"local-\d+(:\d+:[0-9a-f]{8})?", lambda m: "local-…:…" if m.group(1) else "local-…", text)


def run_shown(example: Example, cwd: Path, args: list[str]) -> subprocess.CompletedProcess:
    """A page's command (the checkout's ``lineage-listener``, or another program such as curl)."""
    command = [sys.executable, "-m", "lineage_listener", *args[1:]] if args[0] == "lineage-listener" else args
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"})


def compare(example: Example, done: subprocess.CompletedProcess, paths: dict[str, str]) -> list[str]:
    """What differs between a run and the page: the exit code, then the output."""
    problems = []
    expected = example.exit_code
    if expected is None and re.match(r"lineage-listener: (?!warning)", example.output):
        expected = 2  # an error line without `echo $?`: the pages' rule for a bad file or argument
    if expected is not None and done.returncode != expected:
        problems.append(f"exit code {done.returncode}, the page says {expected}")
    printed = normal(done.stdout + done.stderr, paths)
    shown = normal(example.output, {})
    if shown.lstrip().startswith(("{", "[")):
        same = json_matches(printed, shown)
    else:
        same = matches(normal_lines(printed), normal_lines(shown))
    if not same:
        problems.append("printed:\n" + printed)
    return [f"{example.page}:{example.line}: $ {example.command}\n  " + "\n  ".join(problems)] if problems else []


def test_the_governance_page_prints_what_it_shows(retail, tmp_path, monkeypatch):
    """The page's commands in its order (labels set, files loaded, checks), on a copy of the retail
    pipeline's store laid out as the page's ``/tmp/shop``: ``retail/lineage.duckdb`` and ``repo/``."""
    shop = tmp_path / "shop"
    (shop / "retail").mkdir(parents=True)
    (shop / "repo").mkdir()
    shutil.copy(retail.store, shop / "retail" / "lineage.duckdb")
    for name, text in {**yaml_files(GOVERNANCE), **UNSHOWN_FILES}.items():
        (shop / "repo" / name).write_text(text)
    data = str(retail.root)
    # The page's --since falls between the last job and the commands; here: the end of the last job, to the
    # microsecond: cut to the second, it can fall before the job's last capture, made in the same second.
    since = {"2026-11-26T07:09:00": max(t.ended for t in retail.times.values()).isoformat()}
    paths = {data: "/tmp/shop/retail", str(shop / "repo"): "/tmp/shop/repo"}
    problems = []
    printed: dict[str, list[tuple[str, int]]] = {}
    for example in examples(GOVERNANCE):
        if not_run(example):
            continue
        command = example.command.replace("/tmp/shop/retail/", data + "/").replace("/tmp/shop/repo", str(shop / "repo"))
        for shown, real in since.items():
            command = command.replace(shown, real)
        args = shlex.split(command, comments=True)
        assert args[0] == "lineage-listener", f"{GOVERNANCE}:{example.line}: run it here, or list it in NOT_RUN"
        done = run_shown(example, shop / "retail", args)
        problems += compare(example, done, paths)
        printed.setdefault(example.command, []).append((normal(done.stdout + done.stderr, paths), done.returncode))
    assert sum(map(len, printed.values())) >= 10
    assert not problems, "\n\n".join(problems)
    # The page's cog blocks, generated from this run's output, are the page (paths and times aside).
    monkeypatch.setattr(docs_commands, "run", lambda command: printed[command].pop(0))
    page = (ROOT / GOVERNANCE).read_text()
    generated = normal_lines(normal(docs_commands.cogged(page), {}))
    committed = normal_lines(normal(page, {}))
    assert matches(generated, committed), "\n".join(difflib.unified_diff(committed, generated, lineterm=""))


# -- the demo's store: README, getting started, querying ----------------------------------------------

#: Commands that read what a command on the demo's store wrote (run after it, in the page's order).
DEMO_AFTER = {("docs/openlineage.md", "lineage-listener ingest openlineage --store copy.duckdb events.ndjson")}


#: Where the pages' requests find the demo store's server (``serve --store demo-output/lineage.duckdb``).
DEMO_SERVER = "localhost:8765"


def on_demo_store(example: Example) -> bool:
    return DEMO_FOLDER + "lineage.duckdb" in example.command or any(
        example.page == page and example.command.startswith(start) for page, start in DEMO_AFTER) or (
        example.page == "docs/server.md" and example.command.startswith("curl ") and f"'{DEMO_SERVER}/" in example.command)


def test_the_demo_store_commands_print_what_the_pages_show(demo_store, tmp_path):
    """Every command a page runs on ``demo-output/lineage.duckdb`` (the sample job's store, the one
    ``make demo`` makes), from a folder holding ``demo-output``, as the pages run them."""
    (tmp_path / DEMO_FOLDER.rstrip("/")).symlink_to(demo_store.parent, target_is_directory=True)
    # The suite's demo store is made in its shared Spark session, whose application name is its own.
    paths = {str(demo_store.parent): "/tmp/demo-out", "lineage-listener-tests": "sample_job"}
    problems = []
    ran = 0
    server = None
    try:
        for page in pages():
            for example in examples(page):
                if not on_demo_store(example) or not_run(example):
                    continue
                command = example.command.replace("$PWD/" + DEMO_FOLDER, str(demo_store.parent) + "/")
                if command.startswith("curl "):  # the server the page started: on a copy, at a free port
                    if server is None:
                        shutil.copy(demo_store, tmp_path / "served.duckdb")
                        server = Server(tmp_path / "served.duckdb", token=None).start()
                    command = command.replace(DEMO_SERVER, server.url.split("://")[1]).replace(
                        quote("/tmp/demo-out", safe=""), quote(str(demo_store.parent), safe=""))
                args = shlex.split(command, comments=True)
                problems += compare(example, run_shown(example, tmp_path, args), paths)
                ran += 1
    finally:
        if server is not None:
            server.stop()
    assert ran >= 4 and server is not None
    assert not problems, "\n\n".join(problems)


# -- a diff of rows written: two runs of a job, ingested as OpenLineage events -----------------------

def test_the_rows_written_diff_prints_what_the_page_shows(tmp_path):
    """The page's ``diff --rows-factor`` example on its two runs of ``daily_load`` (the second writes
    no rows into ``file:/data/daily``), ingested as the OpenLineage Spark agent's events."""
    import io
    import json

    from lineage_listener.openlineage import ingest
    from tests.test_write_statistics import _write_event

    page = "docs/governance-diff-preview.md"
    ((_, start),) = [key for key in RUN_ALONE if key[0] == page]
    (example,) = [e for e in examples(page) if e.command.startswith(start)]
    first, second = ("0193a000-0000-7000-8000-00000000000" + c for c in "12")
    events = [_write_event(first, "0193a000-0000-7000-8000-0000000000a1", 1000, "2026-01-01T06:00:00Z"),
              _write_event(second, "0193a000-0000-7000-8000-0000000000a2", 0, "2026-01-02T06:00:00Z")]
    ingest.ingest(str(tmp_path / "lineage.duckdb"), io.StringIO("\n".join(json.dumps(e) for e in events)))
    problems = compare(example, run_shown(example, tmp_path, shlex.split(example.command)), {})
    assert not problems, "\n".join(problems)
