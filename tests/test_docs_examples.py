"""The querying page's examples are real: ``examples/shop_jobs.py`` runs its four applications again,
every documented ``lineage-listener`` command runs on the new store, and its output equals the page's
once run ids, query ids, capture times and the output folder are written the same way."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "querying.md"
SECTION = "## On a store of four applications"
#: Where the page's examples ran (the folder the page names).
DOCUMENTED_OUT = "/tmp/shop"


def documented() -> list[tuple[str, str]]:
    """(command line, output) of every ``$ lineage-listener`` example in the page's section."""
    text = PAGE.read_text()
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", len(SECTION))]
    examples = []
    for block in re.findall(r"```\n(.*?)```", section, flags=re.S):
        for chunk in re.split(r"\n(?=\$ lineage-listener )", "\n" + block):
            chunk = chunk.strip("\n")
            if chunk.startswith("$ lineage-listener "):
                command, _, output = chunk.partition("\n")
                examples.append((command[2:], output))
    return examples


def normal(text: str, out: str) -> str:
    """Output with what differs between two runs of the same jobs written one way: the output folder,
    application and query ids, times; runs of spaces and table rules (their widths follow those)."""
    text = text.replace(out, DOCUMENTED_OUT)
    text = re.sub(r"local-\d+(:\d+:[0-9a-f]{8})?", lambda m: "QUERY" if m.group(1) else "RUN", text)
    text = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d", "TIME", text)
    text = re.sub(r"-{2,}", "-", text)
    return "\n".join(re.sub(r"\s+", " ", line).strip() for line in text.strip().splitlines())


def same(printed: str, shown: str) -> bool:
    """Whether a normalised printed line is the page's line; a table cell cut with "…" (its text
    outgrew the column because the output folder's name is longer) matches the page's full cell."""
    head, cut, tail = printed.partition("…")
    return printed == shown or bool(cut) and shown.startswith(head) and shown.endswith(tail)


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("shop")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "shop_jobs.py"), str(out)], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_the_page_documents_each_command_once():
    commands = [c.split()[1] for c, _ in documented()]
    assert {"upstream", "downstream", "impact", "provenance"} <= set(commands)


@pytest.mark.parametrize("command, output", documented(), ids=lambda v: v if v.startswith("lineage") else "")
def test_a_documented_command_prints_what_the_page_shows(shop: Path, command: str, output: str):
    args = shlex.split(command)[1:]
    done = subprocess.run([sys.executable, "-m", "lineage_listener", *args], cwd=shop, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    printed = normal(done.stdout + done.stderr, str(shop)).splitlines()
    shown = normal(output, DOCUMENTED_OUT).splitlines()
    assert len(printed) == len(shown), "\n".join(printed)
    assert [p for p, s in zip(printed, shown) if not same(p, s)] == []


def _code(first: str, page: str = "docs/querying.md") -> str:
    from tests.docs_commands import code_blocks

    (block,) = [b for b in code_blocks(page) if b.first == first]
    return block.text


def test_the_pages_python_and_sql_run_on_the_store(shop: Path, monkeypatch):
    """The page's Python (from the store's folder) and its SQL macro give the same edges, as the page
    says; the store page's indexed lookup finds the direct edges into ``shop.orders``."""
    monkeypatch.chdir(shop)
    names: dict = {}
    *body, last = _code("from lineage_listener import open_store").rstrip("\n").splitlines()
    exec(compile("\n".join(body), str(PAGE), "exec"), names)  # noqa: S102 - the page's own code
    assert eval(last, names)[0][0] > 0  # noqa: S307 - the page's last line, an expression
    g = names["g"]
    assert {("spark_catalog.shop.clean", "amount"), ("spark_catalog.shop.report", "total")} <= set(g.nodes)
    macro = names["store"].sql(_code("SELECT hop, source_dataset, source_column, target_column, transform, "
                                     "expression")).fetchall()
    assert {(hop, ds, sc) for hop, ds, sc, *_ in macro} == {(d["hop"], s[0], s[1]) for s, _, d in g.edges(data=True)}
    lookup = names["store"].sql(_code("SELECT * FROM (SELECT * FROM edges WHERE target_dataset IN "
                                      "('spark_catalog.shop.orders') OFFSET 0)", "docs/reference/store.md"))
    rows = [dict(zip(lookup.columns, r)) for r in lookup.fetchall()]
    assert rows and {(r["target_dataset"], r["kind"]) for r in rows} == {("spark_catalog.shop.orders", "direct")}
