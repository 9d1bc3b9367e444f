"""The documentation stays what it is meant to be: a short README that is a front page, every page
of docs/ in the site's navigation, reference tables that match the code, links that resolve, and no
history or citations of documents outside the repository in any tracked file."""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))

import gen_reference  # noqa: E402 - docs/ is not a package

#: History and process words: issue numbers, work rounds, documents outside the repository, the
#: machine a number was measured on, a developer's local path. Built from parts so that this file
#: does not match itself.
HISTORY = re.compile("|".join([
    r"\b[Ii]ssue #?\d", r"\bthe issue (asks|says)", r"\b[Rr]ound[- ]?\d",
    "CONTRACT" + r"\.md", "ARCHITECTURE" + r"\.md", "CONTRACT" + " section", "this 2" + "-core",
    r"\b[Cc]ontract('s)? (transform|section|rule)",
    "/work/" + r"(wt|main|shared)/",
]))

#: Text about other projects that looks like history: an upstream project's issue, or a verb.
ALLOWED = [re.compile(p) for p in (r"[Mm]arquez #\d", r"required to issue \d START")]


def tracked_files() -> list[Path]:
    if not shutil.which("git"):
        pytest.skip("git is not installed")
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"not a git checkout: {done.stderr.decode().strip()}")
    return [ROOT / name for name in done.stdout.decode().split("\0") if name]


def test_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; the manual belongs in docs/"
    text = "\n".join(lines)
    for command in ("make demo", "make test", "make docs"):
        assert command in text


def test_no_history_or_outside_documents_in_tracked_files():
    found = []
    for path in tracked_files():
        if path.suffix in {".png", ".gz", ".jar", ".ico"} or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if HISTORY.search(line) and not any(a.search(line) for a in ALLOWED):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "history or process words (say what is, cite docs/reference/):\n" + "\n".join(found)


def nav_pages() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:"):]
    return re.findall(r":\s*([\w./-]+\.md)\s*$", nav, re.M)


def test_every_page_is_in_the_navigation():
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    in_nav = nav_pages()
    assert sorted(set(in_nav)) == pages, "docs/ pages and mkdocs.yml's nav differ"
    assert len(in_nav) == len(set(in_nav)), "a page is in the navigation twice"


def test_make_docs_fails_on_any_warning():
    recipe = (ROOT / "Makefile").read_text().split("\ndocs:", 1)[1].split("\n\n", 1)[0]
    assert "mkdocs build --strict" in recipe
    assert "--quiet" not in recipe and " -q" not in recipe, "--quiet hides warnings from --strict"


@pytest.mark.parametrize("page", sorted(gen_reference.PAGES))
def test_generated_reference_matches_the_code(page):
    committed = (ROOT / page).read_text()
    assert gen_reference.render(committed, gen_reference.PAGES[page]()) == committed, (
        f"{page} is out of date: run python docs/gen_reference.py")


def test_cli_reference_names_every_command_and_option():
    """The generated page holds every sub-command and option (a check of the generator itself)."""
    from lineage_listener.cli import build_parser

    page = (DOCS / "reference" / "cli.md").read_text()
    todo = [build_parser(every=True)]
    while todo:
        parser = todo.pop()
        assert f"`{parser.prog}`" in page
        for action in parser._actions:
            for option in action.option_strings:
                if action.help != argparse.SUPPRESS and option not in ("-h", "--help"):
                    assert f"`{option}`" in page, f"{parser.prog} {option}"
            if hasattr(action, "_name_parser_map"):
                todo += list(action._name_parser_map.values())


def slug(heading: str) -> str:
    """The anchor MkDocs' table of contents gives a heading."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", text)).strip("-")


def test_readme_links_resolve():
    """The README is not part of the site build, so its links are checked here: files and anchors."""
    text = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if "://" in target:
            continue
        path, _, anchor = target.partition("#")
        file = ROOT / path
        assert file.exists(), f"README links to {path}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+\s+(.*)$", file.read_text(), re.M)
            assert anchor in {slug(h) for h in headings}, f"README links to {target}: no such heading"


def test_slug_is_mkdocs_anchor():
    assert slug("Cluster deploy mode (YARN, Kubernetes)") == "cluster-deploy-mode-yarn-kubernetes"
    assert slug("`ingest openlineage`") == "ingest-openlineage"


def test_openlineage_facet_schema_names_every_field_of_the_facet():
    """The schema the ``lineage_listener`` run facet's ``_schemaURL`` points at is in docs/ and
    describes exactly the facet's fields; a facet as exported validates against it."""
    import json

    attr = pytest.importorskip("attr")
    jsonschema = pytest.importorskip("jsonschema")
    from lineage_listener.openlineage import events

    schema = json.loads((DOCS / "openlineage-facet.json").read_text())
    assert events.FACET_SCHEMA.endswith("/docs/openlineage-facet.json") and schema["$id"] == events.FACET_SCHEMA
    own = schema["allOf"][1]
    fields = {f.name for f in attr.fields(events.LineageListenerRunFacet)
              if f.name not in {a.name for a in attr.fields(events.RunFacet)}}
    assert set(own["properties"]) == fields
    facet = {"queryId": "app:1:ab", "runId": "app", "action": "command", "command": "Project", "status": "succeeded"}
    jsonschema.Draft202012Validator(own).validate(facet)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(own).validate({"runId": "app"})
