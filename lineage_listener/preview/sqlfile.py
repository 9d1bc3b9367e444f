"""A file of Spark SQL as statements, and the quoted paths in a statement (sqlglot's tokenizer:
semicolons and quotes inside strings, identifiers and comments are not statement ends).

>>> [(s.index, s.line, s.text) for s in statements("SELECT ';' AS x;\\n-- note\\nSELECT 2;")]
[(1, 1, "SELECT ';' AS x"), (2, 3, 'SELECT 2')]
>>> replace_path("SELECT * FROM parquet.`/data/p`", "file:/data/p", "/tmp/x")
'SELECT * FROM parquet.`/tmp/x`'
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class SqlFileError(ValueError):
    """The text cannot be split into statements (an unclosed quote or comment)."""


@dataclass(frozen=True)
class Statement:
    """One statement of a file: its position (1-based), the line it starts on, its text."""

    index: int
    line: int
    text: str

    def where(self) -> str:
        return f"statement {self.index} (line {self.line})"


def _tokens(text: str) -> list:
    try:
        return Spark().tokenize(text)
    except TokenError as exc:
        raise SqlFileError(f"cannot read the SQL: {str(exc).splitlines()[0]}") from None


def statements(text: str) -> list[Statement]:
    """The statements of ``text`` in order, comments around them left out."""
    out: list[Statement] = []
    first = last = None
    for tok in [*_tokens(text), None]:
        if tok is None or tok.token_type == TokenType.SEMICOLON:
            if first is not None:
                body = text[first.start:last.end + 1]
                out.append(Statement(len(out) + 1, text.count("\n", 0, first.start) + 1, body))
            first = last = None
            continue
        first = first or tok
        last = tok
    return out


def qualified(path: str) -> str:
    """A path as Spark names a local one: ``file:`` and absolute, no trailing slash.

    >>> qualified("/data/p/"), qualified("s3a://b/k"), qualified("file:///data/p")
    ('file:/data/p', 's3a://b/k', 'file:/data/p')
    """
    if path.startswith("file://"):
        path = "file:" + path[len("file://"):]
    if not _SCHEME.match(path):
        path = "file:" + os.path.normpath(os.path.abspath(path))
    return path.rstrip("/") if len(path) > 1 else path


def replace_path(text: str, path: str, replacement: str) -> str:
    """``text`` with every quoted string or identifier naming ``path`` (see :func:`qualified`)
    replaced by ``replacement`` (a path without quotes in it), in the same quotes."""
    want = qualified(path)
    out, at = [], 0
    for tok in _tokens(text):
        raw = text[tok.start:tok.end + 1]
        if tok.token_type not in (TokenType.STRING, TokenType.IDENTIFIER) or raw[:1] not in "'\"`":
            continue
        if qualified(tok.text) == want:
            out += [text[at:tok.start], raw[0], replacement, raw[-1]]
            at = tok.end + 1
    return "".join(out) + text[at:]
