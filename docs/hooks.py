"""MkDocs hook: links from a page to a repository file outside docs/ point at the repository's copy.

In the repository a page links such files by relative path (``../lineage_listener/store/schema.sql``),
which works wherever the Markdown is read as files. In the built site the same link becomes the file's
address under ``repo_url``; a link to a file that does not exist fails the build.
"""
from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
LINK = re.compile(r"(\]\()(\.\./[^)\s#]+)(#[^)\s]*)?(\))")


def repository_link(page_path: str, target: str) -> str | None:
    """The repository path of ``target`` linked from the page at ``page_path`` (relative to docs/),
    when it lies outside docs/; else None.

    >>> repository_link("reference/store.md", "../../lineage_listener/store/schema.sql")
    'lineage_listener/store/schema.sql'
    >>> repository_link("reference/store.md", "../index.md") is None
    True
    """
    joined = posixpath.normpath(posixpath.join("docs", posixpath.dirname(page_path), target))
    return None if joined == "docs" or joined.startswith("docs/") else joined


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 - MkDocs' hook signature
    base = (config.get("repo_url") or "").rstrip("/")

    def rewrite(m: re.Match) -> str:
        path = repository_link(page.file.src_uri, m.group(2))
        if path is None:
            return m.group(0)
        if path.startswith("..") or not (ROOT / path).exists():
            raise PluginError(f"{page.file.src_uri}: link to {m.group(2)}: no such file in the repository")
        kind = "tree" if (ROOT / path).is_dir() else "blob"
        return f"{m.group(1)}{base}/{kind}/main/{path}{m.group(3) or ''}{m.group(4)}"

    return LINK.sub(rewrite, markdown)
