"""Dataset globs and label names, as classifications and policy files write them.

A glob's ``*`` matches within one part of a name (parts are separated by ``/`` and ``.``),
``**`` across parts, ``?`` one character of a part; ``/**/`` also matches a single ``/``:

>>> glob_matches("file:/**/exports/**", "file:/data/exports/partner.csv")
True
>>> glob_matches("spark_catalog.*.partner_*", "spark_catalog.sales.partner_feed")
True
>>> glob_matches("spark_catalog.*.partner_*", "spark_catalog.a.b.partner_feed")
False
>>> glob_matches("file:/**/raw/customers.csv", "file:/raw/customers.csv")
True

Labels are dotted names; ``pii.email`` is a kind of ``pii``:

>>> is_kind_of("pii.email", "pii"), is_kind_of("pii", "pii.email"), is_kind_of("piix", "pii")
(True, False, False)
>>> parse_label("!PII.Email")
('pii.email', False)
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

_LABEL = re.compile(r"^[a-z0-9_][a-z0-9_-]*(\.[a-z0-9_][a-z0-9_-]*)*$")


class PatternError(ValueError):
    """A label or glob that cannot be used; the message says why."""


#: A glob's wildcards as regular expressions (the same in Python's ``re`` and in RE2, DuckDB's).
_WILDCARDS = (("/**/", "/(?:.*/)?"), ("**", ".*"), ("*", "[^/.]*"), ("?", "[^/.]"))


def _glob_parts(glob: str, literal) -> str:  # noqa: ANN001 - str -> str
    """``glob`` as one regular expression (no anchors), each literal character through ``literal``."""
    if not glob:
        raise PatternError("an empty dataset pattern")
    out, i = [], 0
    while i < len(glob):
        for wildcard, regex in _WILDCARDS:
            if glob.startswith(wildcard, i):
                out.append(regex)
                i += len(wildcard)
                break
        else:
            out.append(literal(glob[i]))
            i += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def glob_regex(glob: str) -> re.Pattern[str]:
    """The compiled regular expression of ``glob`` (a whole-name match)."""
    return re.compile(_glob_parts(glob, re.escape) + r"/?\Z")


def globs_sql_regex(globs: Sequence[str]) -> str:
    """One RE2 expression (DuckDB's ``regexp_full_match``) matching a name that one of ``globs`` matches,
    as :func:`glob_matches` decides (every literal character written ``\\x{..}``, so no name needs
    escaping rules of its own).

    >>> import duckdb
    >>> duckdb.connect().execute("SELECT regexp_full_match('file:/d/ex ports/a.csv', ?)",
    ...                          [globs_sql_regex(["x", "file:/**/ex ports/**"])]).fetchall()
    [(True,)]
    """
    if not globs:
        raise PatternError("no dataset patterns")
    def literal(ch: str) -> str:
        return ch if ch.isascii() and (ch.isalnum() or ch == "_") else "\\x{%x}" % ord(ch)
    return "|".join(f"(?:{_glob_parts(g, literal)}/?)" for g in globs)


def glob_matches(glob: str, name: str) -> bool:
    """Whether dataset ``name`` matches ``glob`` (see the module docstring)."""
    return glob_regex(glob).match(name) is not None


def any_matches(globs: Iterable[str], names: Iterable[str]) -> bool:
    """Whether one of ``names`` (a dataset's names: canonical and aliases) matches one of ``globs``."""
    names = list(names)
    return any(glob_matches(g, n) for g in globs for n in names)


def is_kind_of(label: str, general: str) -> bool:
    """``label`` is ``general`` or one of its kinds (``pii.email`` of ``pii``)."""
    return label == general or label.startswith(general + ".")


def kinds_of(label: str) -> list[str]:
    """``label`` and every more general label it is a kind of.

    >>> kinds_of("pii.contact.email")
    ['pii', 'pii.contact', 'pii.contact.email']
    """
    parts = label.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def check_label(label: str) -> str:
    """``label`` in lower case, or :class:`PatternError` naming what is wrong with it."""
    if not isinstance(label, str):
        raise PatternError(f"label {label!r} is not a string")
    norm = label.strip().lower()
    if not _LABEL.match(norm):
        raise PatternError(f"label {label!r} is not a dotted name (letters, digits, _ and -, parts "
                           f"separated by dots, e.g. pii.email)")
    return norm


def parse_label(text: str) -> tuple[str, bool]:
    """``(label, value)``: ``!pii`` is the label ``pii`` with value False (a review: not pii)."""
    text = str(text).strip()
    if text.startswith("!"):
        return check_label(text[1:]), False
    return check_label(text), True
