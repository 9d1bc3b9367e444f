"""The commands the README and the docs pages show are run by the suite on the pipelines the pages
use, and print what the pages show (paths, times and ids written one way; tests/docs_commands.py
reads the pages). A page in ``RUNNERS`` has every command run by its test, a new one included;
any other command is listed in ``NOT_RUN`` with the reason, so a command added to a page fails
here until it is run or listed."""
from __future__ import annotations

import difflib
import json
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

GOVERNANCE = "docs/governance.md"
#: Pages whose every command a test runs: page -> the test.
RUNNERS = {
    "docs/governance.md": "tests/test_docs_commands.py::test_the_governance_page_prints_what_it_shows",
    "docs/streaming.md": "tests/test_docs_commands.py::test_the_streaming_page_prints_what_it_shows",
}
#: Commands on the demo's store (``make demo``'s ``demo-output/``), wherever a page shows them.
DEMO_FOLDER = "demo-output/"
#: Commands run by tests of their own (the test named), on the page's pipeline.
RUN_ELSEWHERE = {
    "docs/querying.md": ("tests/test_docs_examples.py", "## On a store of four applications"),
    "docs/lakehouse.md": ("tests/lakehouse/test_docs_page.py (make test-lakehouse)", "## A real run"),
}
#: Single commands run by a test of this file: (page, the command's start) -> the test.
RUN_ALONE = {("docs/governance-diff-preview.md", "lineage-listener diff --store lineage.duckdb --app daily_load"):
             "test_the_rows_written_diff_prints_what_the_page_shows",
             ("docs/security.md", "lineage-listener serve --store s.duckdb --access access.yml"):
             "test_the_security_pages_bad_access_file_is_one_line",
             ("docs/security.md", 'curl -s -H "Authorization: Bearer $ANN"'): "tests/test_access.py::test_audit",
             ("docs/security.md", "lineage-listener audit --store /srv/lineage.duckdb"):
             "tests/test_access.py::test_audit",
             ("README.md", "lineage-listener sql --store lineage.duckdb \"SELECT target_column, source_column, transform, kind,"): "tests/test_readme_example.py",
             ("docs/querying.md", "lineage-listener sql --store lineage.duckdb \"SELECT target_column, source_column, transform, kind,"):
             "test_the_capture_pages_python_runs_as_written",
             ("docs/server.md", "curl -s 'localhost:8765/api/runs/"):
             "tests/test_zero_code_run.py::test_with_airflows_events_the_run_appears_under_its_dag_run"}
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
_not_run("docs/governance-diff-preview.md", SYNOPSIS + " (applications and files of no pipeline of the pages)",
         "lineage-listener diff --store lineage.duckdb --app daily_orders", "lineage-listener diff --store lineage.duckdb --runs",
         "lineage-listener diff --store lineage.duckdb --windows", "lineage-listener diff --store new.duckdb",
         "lineage-listener preview --store lineage.duckdb")
_not_run("docs/kafka.md", "a SASL_SSL broker at broker:9093 and files under /etc (tests/test_kafka.py runs "
         "publish, serve and consume against a local broker)",
         "spark-submit $(lineage-listener spark-conf --kafka", "cat /etc/lineage/kafka.conf",
         "lineage-listener serve --store /srv/", "lineage-listener consume --store /data/",
         "lineage-listener export tables --store /data/")
_not_run("docs/openlineage.md", "a Marquez or DataHub server", "LINEAGE_OPENLINEAGE_TOKEN=", "datahub ingest")
_not_run("docs/openlineage.md", SYNOPSIS, "lineage-listener export datahub --store lineage.duckdb --out mcps.json [")
_not_run("docs/querying.md", SYNOPSIS, "lineage-listener upstream   --store PATH", "lineage-listener downstream --store PATH",
         "lineage-listener impact     --store PATH", "lineage-listener provenance --store PATH",
         "lineage-listener sql        --store PATH", "lineage-listener html       --store PATH")
_not_run("docs/security.md", "a server at a host with an OIDC issuer and files under /etc and /srv "
         "(tests/test_access.py and tests/test_access_oidc.py run serve --access with a real issuer)",
         "export LINEAGE_TOKEN_CI=", "lineage-listener serve --store /srv/")
_not_run("docs/server.md", INSTALL, "pip install")
_not_run("docs/server.md", "a server at a host with TLS and files under /etc and /srv (tests/test_server.py runs "
         "serve, TLS and push against a real server)", "export LINEAGE_SERVER_TOKEN=...",
         "lineage-listener serve --store /srv/", "lineage-listener push --url https://lineage:8443",
         "spark-submit $(lineage-listener spark-conf) --conf spark.lineage.url=")


QUERYING_CODE = "tests/test_docs_examples.py::test_the_pages_python_and_sql_run_on_the_store"
#: The pages' Python and SQL blocks (tests/docs_commands.py ``code_blocks``): (page, the block's first
#: line) -> the test that runs it on the page's pipeline, or why the suite does not.
CODE_RUN = {
    ("docs/security.md", "SELECT id FROM shop.customers WHERE email = 'alice@example.com'"):
        "test_the_capture_pages_sql_text_modes_table_is_what_each_mode_stores",
    ("docs/capture.md", "CREATE TABLE shop.vip USING parquet AS"):
        "test_the_capture_pages_sql_text_modes_table_is_what_each_mode_stores",
    ("docs/capture.md", "from pyspark.sql import SparkSession"): "test_the_capture_pages_python_runs_as_written",
    ("docs/capture.md", "import duckdb"): "test_the_capture_pages_python_runs_as_written",
    ("docs/development.md", "from lineage_listener.store.batch import Batch"):
        "test_the_development_pages_python_runs_as_written",
    ("docs/querying.md", "from lineage_listener import open_store"): QUERYING_CODE,
    ("docs/querying.md", "SELECT hop, source_dataset, source_column, target_column, transform, expression"):
        QUERYING_CODE,
    ("docs/reference/store.md", "SELECT * FROM (SELECT * FROM edges WHERE target_dataset IN "
                                "('spark_catalog.shop.orders') OFFSET 0)"): QUERYING_CODE,
    (GOVERNANCE, "from lineage_listener.query import open_store"): "test_the_governance_page_prints_what_it_shows",
    ("README.md", "import lineage_listener"): "tests/test_readme_example.py",
    ("docs/streaming.md", 'orders = spark.readStream.schema("id INT, name STRING, amount INT").json("in")'):
        "test_the_streaming_page_prints_what_it_shows",
}
TEMPLATE = "a template: its `...` line stands for the reader's own job"
CODE_NOT_RUN = {
    ("docs/getting-started.md", "import lineage_listener"): TEMPLATE,
    ("docs/reference/python.md", "import lineage_listener"): TEMPLATE,
    ("docs/kafka.md", "import lineage_listener"): "a SASL_SSL broker at broker:9092 (tests/test_kafka.py enables "
                                                  "capture to Kafka in process against a local broker)",
    ("docs/kafka.md", 'spark.read.parquet("/lake/lineage/column_lineage").createOrReplaceTempView("lineage")'):
        "a lake of the reader's (tests/test_export_tables.py reads export tables' output with Spark)",
    ("docs/capture.md", "DECLARE VARIABLE v INT DEFAULT 0;"):
        "tests/test_sql_variables.py runs the same statements on its own tables (PySpark 4 only)",
}


def test_every_code_block_on_a_page_is_run_or_listed_with_a_reason():
    from tests.docs_commands import code_blocks

    blocks = [(b.page, b.first) for page in pages() for b in code_blocks(page)]
    unlisted = [key for key in blocks if key not in CODE_RUN and key not in CODE_NOT_RUN]
    assert not unlisted, "code blocks no test runs (run them, or list them in CODE_NOT_RUN with why):\n" + \
        "\n".join(map(str, unlisted))
    stale = [key for key in {**CODE_RUN, **CODE_NOT_RUN} if key not in blocks]
    assert not stale and not set(CODE_RUN) & set(CODE_NOT_RUN), stale


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
            if page in RUNNERS or example.command in elsewhere or on_demo_store(example) or run_alone(example) \
                    or not_run(example):
                continue
            unlisted.append(f"{page}:{example.line}: {example.command}")
    assert not unlisted, "commands no test runs (run them, or list them in NOT_RUN with why):\n" + "\n".join(unlisted)


def test_not_run_names_only_commands_the_pages_show():
    shown = [e for page in pages() for e in examples(page)]
    stale = [key for key in NOT_RUN if not any(e.page == key[0] and e.command.startswith(key[1]) for e in shown)]
    assert not stale, stale


# -- docs/governance.md on the retail pipeline -------------------------------------------------------

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
    """Output written one way: the page's folders for the test's, times and durations in ms as a word,
    Spark's run and query ids as the pages shorten them (``local-…``, ``local-…:…``)."""
    for real, shown in paths.items():
        text = text.replace(real, shown)
    text = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?", "TIME", text)
    text = re.sub(r'("\w+_ms"):\s*[\d.]+', r"\1: MS", text)
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
    serving = _section_commands(GOVERNANCE, SERVE_SECTION)
    for example in examples(GOVERNANCE):
        if not_run(example) or example.command in serving:
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
    # The server section, on the store as the commands above left it.
    problems = serve_section([e for e in examples(GOVERNANCE) if e.command in serving], shop, paths)
    assert not problems, "\n\n".join(problems)
    # The page's Python, on the same store: its answers are the commands' it names.
    monkeypatch.chdir(shop / "retail")
    code = code_block(GOVERNANCE, "from lineage_listener.query import open_store").text
    names: dict = {}
    exec(compile(code.replace("/tmp/shop/retail/", data + "/"), GOVERNANCE, "exec"), names)  # noqa: S102
    store, column_labels, partner = names["store"], names["column_labels"], names["exports"][0]
    assert as_json(column_labels(store, partner)) == cli_json("classify", "list", "--store", "lineage.duckdb",
                                                              "--dataset", partner, "--propagated", "--format", "json")
    assert as_json(names["check_store"](store, names["load"]("../repo/policy.yml"), since="1d")) == cli_json(
        "check", "--store", "lineage.duckdb", "--policy", "../repo/policy.yml", "--since", "1d", "--format", "json")
    answers = names["answers"]
    assert answers == {d: column_labels(store, d, influence=False) for d in names["exports"]}
    assert answers[partner]["columns"] and not any(c.get("influenced_by") for c in answers[partner]["columns"])


def as_json(value: object) -> object:
    """A Python answer as the CLI's JSON gives it (times in ISO format)."""
    return json.loads(json.dumps(value, default=lambda t: t.isoformat()))


def cli_json(*args: str) -> object:
    """What a ``lineage-listener`` command prints as JSON (exit 0 or 1), run in this process, in the
    current folder."""
    import contextlib
    import io

    from lineage_listener.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(args)) in (0, 1)
    return json.loads(out.getvalue())


def code_block(page: str, first: str):
    """The page's Python or SQL block that starts with the line ``first``."""
    from tests.docs_commands import code_blocks

    (block,) = [b for b in code_blocks(page) if b.first == first]
    return block


SERVE_SECTION = "## The lineage server watches"
#: Where the page's server and webhook receiver listen (the test's listen at free ports).
PAGE_SERVER, PAGE_RECEIVER = "127.0.0.1:8765", "127.0.0.1:9901"


def serve_section(section: list[Example], shop: Path, paths: dict[str, str]) -> list[str]:
    """The page's server section in its order, from ``shop``: the store copied, the environment
    exported, ``serve`` started (at a free port, telling a receiver at another), and once its watch has
    checked the store and the webhook has been told of every violation, the page's requests."""
    from lineage_listener.govern.watch import violation_id
    from tests.test_governance import Receiver, settled

    env: dict[str, str] = {}
    receiver = Receiver()
    server = None
    paths = {**paths, f"127.0.0.1:{receiver.port}": PAGE_RECEIVER}
    problems = []
    try:
        for example in section:
            args = shlex.split(example.command, comments=True)
            if args[0] == "export":
                env.update(arg.split("=", 1) for arg in args[1:])
            elif args[:2] == ["lineage-listener", "serve"]:
                assert args[2] == "--store" and not example.output, example
                options = [a.replace(PAGE_RECEIVER, f"127.0.0.1:{receiver.port}") for a in args[4:]]
                server = Server(Path(args[3]), token=env.pop("LINEAGE_SERVER_TOKEN"), extra_args=options, env=env,
                                cwd=shop, output=shop / "serve.log").start()
                paths[server.url.split("://")[1]] = PAGE_SERVER
                # settled: the check at start, then the one the classifications file's labels (written by the
                # server's writer after the first check began) call for, and every violation delivered
                answer = settled(server, lambda v: v["watch"]["full_checks"] >= 2 and v["violations"]
                                 and v["webhook"]["sent"] == len(v["violations"]))
                posts = receiver.wait(len(answer["violations"]))
                assert {h["Authorization"] for h, _ in posts} == {f"Bearer {env['LINEAGE_WEBHOOK_TOKEN']}"}
                for v in answer["violations"]:  # its id names the page's dataset and path
                    page_v = json.loads(normal(json.dumps(v), paths))
                    paths[v["id"]] = violation_id(page_v)
            else:
                assert server is not None or args[0] == "cp", f"{GOVERNANCE}:{example.line}: run it here"
                command = example.command.replace("/tmp/shop/retail/", paths_back(paths, "/tmp/shop/retail") + "/")
                if server is not None:
                    command = command.replace(PAGE_SERVER, server.url.split("://")[1])
                done = subprocess.run(command, shell=True, cwd=shop, capture_output=True, text=True, timeout=120)
                problems += compare(example, done, paths)
    finally:
        if server is not None:
            server.stop()
        receiver.close()
    assert server is not None
    return problems


def paths_back(paths: dict[str, str], shown: str) -> str:
    """The test's folder the page shows as ``shown``."""
    (real,) = [r for r, s in paths.items() if s == shown]
    return real


# -- the demo's store: README, getting started, querying ----------------------------------------------

#: Commands that read what a command on the demo's store wrote (run after it, in the page's order).
DEMO_AFTER = {("docs/openlineage.md", "lineage-listener ingest openlineage --store copy.duckdb events.ndjson")}


#: Where the pages' requests find the demo store's server (``serve --store demo-output/lineage.duckdb``).
DEMO_SERVER = "localhost:8765"


def run_alone(example: Example) -> bool:
    return any(example.page == page and example.command.startswith(start) for page, start in RUN_ALONE)


def on_demo_store(example: Example) -> bool:
    return not run_alone(example) and (DEMO_FOLDER + "lineage.duckdb" in example.command or any(
        example.page == page and example.command.startswith(start) for page, start in DEMO_AFTER) or (
        example.page == "docs/server.md" and example.command.startswith("curl ") and f"'{DEMO_SERVER}/" in example.command))


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


# -- docs/streaming.md: the page's stream, six files arriving --------------------------------------

STREAMING = "docs/streaming.md"


def page_block(page: str, language: str, after: str) -> str:
    """The first ``language`` fenced block of ``page`` after the text ``after``."""
    text = (ROOT / page).read_text()
    return re.search(rf"```{language}\n(.*?)```", text[text.index(after):], re.S).group(1)


def test_the_streaming_page_prints_what_it_shows(spark, lineage, tmp_path):
    """The page's job (its Python block, its relative folders in the test's folder) under capture, six
    files arriving one micro-batch each, then the page's commands on its store, from its folder."""
    from tests.test_streaming import drop

    code = re.sub(r'"(in|out|ck)"', lambda m: repr(str(tmp_path / m.group(1))),
                  page_block(STREAMING, "python", "## A real example"))
    (tmp_path / "in").mkdir()
    names: dict = {"spark": spark}
    exec(compile(code, STREAMING, "exec"), names)  # noqa: S102 - the page's own code
    q = names["q"]
    try:
        for i in range(6):
            drop(tmp_path / "in", f"{i}.json", [{"id": i, "name": f"c{i}", "amount": 3 * i}])
            q.processAllAvailable()
    finally:
        q.stop()
    assert lineage.handle.flush(60) and lineage.store == tmp_path / "lineage.duckdb"
    problems = []
    ran = 0
    for example in examples(STREAMING):
        problems += compare(example, run_shown(example, tmp_path, shlex.split(example.command)),
                            {str(tmp_path): "/tmp/stream-demo"})
        ran += 1
    assert ran == 2 and not problems, "\n\n".join(problems)


# -- docs/capture.md and docs/development.md: their Python, as written ---------------------------------

CAPTURE = "docs/capture.md"
SECURITY = "docs/security.md"


def test_the_capture_pages_python_runs_as_written(spark, tmp_path, monkeypatch):
    """``enable`` / ``flush`` / ``disable`` on the suite's session, from a folder of its own (the page's
    relative store), then the page's read of the released file: the job's edges are there."""
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    try:
        code = code_block(CAPTURE, "from pyspark.sql import SparkSession").text
        exec(compile(code, CAPTURE, "exec"), names)  # noqa: S102 - the page's own code
    finally:
        for table in ("scores", "users"):
            spark.sql(f"DROP TABLE IF EXISTS {table}")
    assert names["spark"] is spark
    *body, last = code_block(CAPTURE, "import duckdb").text.rstrip("\n").splitlines()
    exec(compile("\n".join(body), CAPTURE, "exec"), names)  # noqa: S102
    try:
        [(count,)] = eval(last, names)  # noqa: S307 - the page's last line, an expression
        targets = names["con"].execute("SELECT DISTINCT target_column FROM column_lineage WHERE target_dataset "
                                       "= 'spark_catalog.default.scores'").fetchall()
    finally:
        names["con"].close()
    assert count > 0 and {t for (t,) in targets} >= {"uid", "name", "email_hash", "score"}
    # the querying page's SQL, after this job
    ((page, start),) = [key for key in RUN_ALONE if key[0] == "docs/querying.md"]
    (example,) = [e for e in examples(page) if e.command.startswith(start)]
    problems = compare(example, run_shown(example, tmp_path, shlex.split(example.command)), {})
    assert not problems, "\n".join(problems)


def test_the_development_pages_python_runs_as_written():
    names: dict = {}
    exec(compile(code_block("docs/development.md", "from lineage_listener.store.batch import Batch").text,  # noqa: S102
                 "docs/development.md", "exec"), names)
    assert len(names["batch"].rows["datasets"]) == 1


# -- docs/server.md: a run Airflow launched, with Airflow's events ingested ---------------------------

def the_server_pages_run_request(server: Server, run_id: str, folder: Path) -> list[str]:
    """The server page's request for a run Airflow launched, to ``server`` (a store holding that run,
    ``run_id``, and Airflow's events): what differs from the page."""
    ((_, start),) = [key for key in RUN_ALONE if key[0] == "docs/server.md"]
    (example,) = [e for e in examples("docs/server.md") if e.command.startswith(start)]
    command = re.sub(r"local-\d+", run_id, example.command.replace(DEMO_SERVER, server.url.split("://")[1]))
    done = subprocess.run(command, shell=True, cwd=folder, capture_output=True, text=True, timeout=120)
    return compare(example, done, {})


# -- docs/security.md: an access file with a misspelt group -----------------------------------------

def test_the_security_pages_bad_access_file_is_one_line(tmp_path):
    """The page's access file with ann's group misspelt, its variables set: ``serve`` refuses it in one
    line, as the page shows, and starts nothing."""
    page = "docs/security.md"
    ((_, start),) = [key for key in RUN_ALONE if key[0] == page and " serve " in key[1]]
    (example,) = [e for e in examples(page) if e.command.startswith(start)]
    access = page_block(page, "yaml", "## The access file")
    misspelt = access.replace("{name: ann, env: LINEAGE_TOKEN_ANN, groups: [analysts]}",
                              "{name: ann, env: LINEAGE_TOKEN_ANN, groups: [anlysts]}")
    assert misspelt != access
    (tmp_path / "access.yml").write_text(misspelt)
    secrets = {name: f"{name.lower()}-0123456789abcdef" for name in re.findall(r"env: (\w+)", access)}
    done = subprocess.run([sys.executable, "-m", "lineage_listener", *shlex.split(example.command)[1:]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **secrets, "PYTHONPATH": str(ROOT)})
    problems = compare(example, done, {})
    assert not problems and not (tmp_path / "s.duckdb").exists(), "\n".join(problems)


#: The access tests' databases are the security page's with this prefix.
ACCESS_PREFIX = {"spark_catalog.acc_": "spark_catalog."}


def the_security_pages_lineage_request(server: Server, token: str, folder: Path) -> list[str]:
    """The security page's request as ann (``$ANN``, here ``token``) to ``server``, the access tests'
    server of the store the page's examples describe: what differs from the page."""
    ((page, start),) = [key for key in RUN_ALONE if key[0] == "docs/security.md" and key[1].startswith("curl ")]
    (example,) = [e for e in examples(page) if e.command.startswith(start)]
    command = example.command.replace(DEMO_SERVER, server.url.split("://")[1])
    for ours, shown in ACCESS_PREFIX.items():
        command = command.replace(shown, ours)
    done = subprocess.run(command, shell=True, cwd=folder, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ANN": token})
    return compare(example, done, ACCESS_PREFIX)


def the_security_pages_audit(store: Path) -> list[str]:
    """The security page's ``audit`` on ``store``, the access tests' store after ann's requests the page
    shows (its databases are the page's with an ``acc_`` prefix): what differs from the page."""
    ((page, start),) = [key for key in RUN_ALONE if key[0] == "docs/security.md" and " audit " in key[1]]
    (example,) = [e for e in examples(page) if e.command.startswith(start)]
    command = example.command.replace("/srv/lineage.duckdb", str(store))
    return compare(example, run_shown(example, store.parent, shlex.split(command)), ACCESS_PREFIX)


# -- docs/capture.md: the same job in each SQL text mode --------------------------------------------

def _cell_matches(value: str | None, cell: str, statement: str) -> bool:
    """A table cell of the modes' table: ``NULL``, "the statement as written", or text in backticks
    where ``...`` stands for any text (a parenthesis after it says what is not there), written on one
    line (runs of white space as one space)."""
    if cell == "NULL":
        return value is None
    if cell == "the statement as written":
        return value == statement
    shown, _, note = cell.partition("` (")
    absent = re.findall(r"no `([^`]+)` part", note)
    pattern = ".*".join(re.escape(p) for p in shown.strip("`").split("..."))
    return value is not None and re.fullmatch(pattern, " ".join(value.split()), re.S) is not None and \
        not any(a in value for a in absent)


def test_the_capture_pages_sql_text_modes_table_is_what_each_mode_stores(spark, tmp_path):
    """The page's two statements (a CTAS, a query that fails) captured once per mode into a store each,
    on a ``shop.customers`` made before capture: each cell of the page's table is what that store holds."""
    import duckdb

    import lineage_listener

    text = (ROOT / CAPTURE).read_text()
    code = code_block(CAPTURE, "CREATE TABLE shop.vip USING parquet AS").text
    ctas, failing = (s.strip() for s in re.sub(r"--[^\n]*", "", code).split(";")[:2])
    select = code_block(SECURITY, "SELECT id FROM shop.customers WHERE email = 'alice@example.com'").text.strip()
    table = text[text.index("| | `full` | `masked` | `none` |"):].split("\n\n")[0].splitlines()[2:]
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split(" | ")] for line in table)}
    spark.sql("CREATE DATABASE IF NOT EXISTS shop")
    try:
        spark.sql("CREATE TABLE shop.customers USING parquet AS SELECT * FROM VALUES "
                  "(1, 'alice@example.com', 10.0D, DATE '2024-02-01') AS t(id, email, amount, since)")
        stored, selected = {}, {}
        for mode in ("full", "masked", "none"):
            spark.sql("DROP TABLE IF EXISTS shop.vip")
            store = tmp_path / f"{mode}.duckdb"
            handle = lineage_listener.enable(spark, store=str(store), sql_text=mode)
            try:
                spark.sql(ctas).collect()
                spark.sql(select).collect()
                with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
                    spark.sql(failing).collect()
                assert handle.flush(60)
            finally:
                lineage_listener.disable(spark)
            with duckdb.connect(str(store), read_only=True) as con:
                def one(sql: str) -> str | None:
                    (value,) = {r[0] for r in con.execute(sql).fetchall()}
                    return value
                stored[mode] = {
                    "the CTAS's `sql_text`": one("SELECT sql_text FROM queries "
                                                 "WHERE target_dataset = 'spark_catalog.shop.vip'"),
                    "`tier <- email`": one("SELECT expression FROM column_lineage WHERE target_column = 'tier' "
                                           "AND source_column = 'email'"),
                    "`gross <- amount`": one("SELECT expression FROM column_lineage WHERE target_column = 'gross' "
                                             "AND source_column = 'amount'"),
                    "`(all) <- email`, filter": one("SELECT expression FROM column_lineage WHERE target_column IS NULL "
                                                    "AND source_column = 'email' AND transform = 'filter'"),
                    "the failed query's `error`": one("SELECT error FROM queries WHERE status = 'failed'"),
                }
                read = "FROM queries WHERE status = 'succeeded' AND target_dataset IS NULL"
                selected[mode] = {
                    "`queries.sql_text`": one(f"SELECT sql_text {read}"),
                    "the filter edge's `expression`": one(
                        f"SELECT expression FROM column_lineage WHERE query_id IN (SELECT query_id {read}) "
                        "AND transform = 'filter'")}
    finally:
        spark.sql("DROP DATABASE IF EXISTS shop CASCADE")
    assert set(rows) == set(stored["full"]), rows
    wrong = [(name, mode, stored[mode][name], cell) for name, cells in rows.items()
             for mode, cell in zip(("full", "masked", "none"), cells)
             if not _cell_matches(stored[mode][name], cell, ctas)]
    # the security page's statement and its table (a row per mode, a column per kept text)
    security = (ROOT / SECURITY).read_text()
    table = security[security.index("| mode | `queries.sql_text` |"):].split("\n\n")[0].splitlines()
    header = [c.strip() for c in table[0].strip("|").split(" | ")][1:]
    for line in table[2:]:
        mode, *cells = [c.strip() for c in line.strip("|").split(" | ")]
        mode = mode.strip("`")
        for name, cell in zip(header, cells):
            cell = "the statement as written" if cell == "as written" else cell
            if not _cell_matches(selected[mode][name], cell, select):
                wrong.append((SECURITY, name, mode, selected[mode][name], cell))
    assert not wrong, "\n".join(map(str, wrong))
