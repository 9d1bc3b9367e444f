"""The newcomer path: `make demo` installs only what the demo runs, and the demo ends with
the two ways to see its lineage in a browser (an HTML file, and `serve` with the column's URL)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.server_helpers import Server

ROOT = Path(__file__).resolve().parents[1]


def dry_run(target: str) -> list[str]:
    """The commands `make TARGET` runs from scratch (every stamp outdated), without running them."""
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # not as a sub-make
    out = subprocess.run(["make", "--no-print-directory", "-n", "-B", target], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def test_make_demo_installs_only_what_the_demo_runs_and_make_test_what_tests_need():
    demo = dry_run("demo")
    installs = [line for line in demo if " install " in line and "pip" in line and "--upgrade pip" not in line]
    assert installs == [".venv/bin/pip install --quiet -e '.[server]'"]
    assert not [line for line in demo if "chromium" in line or "apt-get" in line or "sudo" in line]
    assert demo[-1] == "bash examples/demo.sh"
    test = dry_run("test")
    assert ".venv/bin/pip install --quiet -e '.[test]'" in test
    assert any("apt-get install" in line and "chromium" in line for line in test)


def test_the_demo_ends_with_its_lineage_in_a_browser(demo_store, tmp_path):
    target = f"file:{demo_store.parent / 'revenue_by_country'}"
    html = tmp_path / "revenue_lineage.html"
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VIRTUAL_ENV": str(Path(sys.prefix)),
           "PATH": f"{bindir}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(ROOT / "examples" / "in_browser.sh"), str(demo_store), target, "revenue",
                           str(html)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line.strip() for line in done.stdout.splitlines()]
    # 1. the file: written where it says, the graph inline
    (said,) = [line for line in lines if line.startswith("1. ")]
    assert said.endswith(f"open {html}")
    page = html.read_text()
    data = json.loads(re.search(r"window\.LINEAGE_STATIC = (.*?);</script>", page, re.S).group(1))
    assert (data["start"]["dataset"], data["start"]["column"]) == (target, "revenue")
    assert re.search(rf"\({len(data['nodes'])} columns, {len(data['edges'])} edges\)", said)
    # 2. the server command and the column's URL: the UI there shows the same edges as the file
    assert f"lineage-listener serve --store {demo_store}" in lines
    (url,) = [line.split("open ", 1)[1] for line in lines if line.startswith("then open http")]
    parts = urllib.parse.urlsplit(url)
    assert (parts.netloc, parts.path) == ("127.0.0.1:8765", "/")  # serve's defaults
    route, ds, col = parts.fragment.split("/")[1:]
    assert (route, urllib.parse.unquote(ds), urllib.parse.unquote(col)) == ("column", target, "revenue")
    server = Server(demo_store, token=None).start()  # the printed command, on a free port
    try:
        with urllib.request.urlopen(f"{server.url}/", timeout=30) as r:
            assert b"/static/router.js" in r.read()
        api = f"{server.url}/v3/namespaces/default/datasets/{ds}/columns/{col}/lineage"
        with urllib.request.urlopen(api, timeout=60) as r:
            served = json.load(r)
    finally:
        server.stop()

    def edges(d: dict) -> set[tuple]:
        return {(e["source"]["dataset"], e["source"]["column"], e["target"]["dataset"], e["target"]["column"],
                 e["transform"]) for e in d["edges"]}
    assert edges(served) == edges(data)
    assert ("file:" + str(demo_store.parent / "paid_orders"), "amount_eur", target, "revenue",
            "aggregate") in edges(data)


def test_the_editable_install_make_demo_runs_prints_no_warning_block(tmp_path):
    """`make demo`'s `pip install -e` of a fresh clone: the build backend warns nothing (pip shows a
    backend's warnings as a block on the newcomer's first screen). Built from a copy of the tracked
    files, by the same backend hook pip calls, with every warning shown."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split("\0")
    clone = tmp_path / "clone"
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    done = subprocess.run([sys.executable, "-W", "always", "-c",
                           "import sys, setuptools.build_meta as backend; "
                           "print(backend.build_editable(sys.argv[1]))", str(tmp_path / "wheel")],
                          cwd=clone, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith(".whl")
    assert "Warning" not in done.stderr and "!!" not in done.stderr, done.stderr[-3000:]
