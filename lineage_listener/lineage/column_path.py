"""Column names as stored: one unambiguous text per column, nested struct fields included.

A stored column name is a path of name segments joined by ``.``. A segment that
holds a ``.`` or a backtick is written in backticks, a backtick inside doubled,
the way Spark SQL quotes such names; every other segment is written as it is
(spaces and case kept):

=====================================  ==================
column                                 stored as
=====================================  ==================
top-level ``amount``                   ``amount``
field ``city`` of struct ``address``   ``address.city``
top-level column named ``s.x``         ```s.x```
field ``x`` of struct ``s``            ``s.x``
field ``a.b`` of struct ``s``          ``s.`a.b```
=====================================  ==================

>>> quote("s.x"), child("s", "x"), child("s", "a.b"), split("`s.x`.y")
('`s.x`', 's.x', 's.`a.b`', ['s.x', 'y'])
"""
from __future__ import annotations

_TICK = "`"


def quote(segment: str) -> str:
    """One name segment as stored: in backticks when it holds a dot or a backtick."""
    if "." in segment or _TICK in segment:
        return _TICK + segment.replace(_TICK, _TICK * 2) + _TICK
    return segment


def child(path: str, field: str) -> str:
    """The stored name of struct field ``field`` of the column stored as ``path``."""
    return f"{path}.{quote(field)}"


def join(segments: list[str]) -> str:
    """The stored name of a path of raw segments (inverse of :func:`split`).

    >>> join(["s", "x"]), join(["s.x"]), join(["s", "a.b"])
    ('s.x', '`s.x`', 's.`a.b`')
    """
    return ".".join(quote(s) for s in segments)


def split(path: str) -> list[str]:
    """The raw segments of a stored name (inverse of joining :func:`quote`-d segments).

    >>> split("a.`b``c`.d"), split("plain")
    (['a', 'b`c', 'd'], ['plain'])
    """
    parts: list[str] = []
    current: list[str] = []
    i, quoted = 0, False
    while i < len(path):
        ch = path[i]
        if quoted:
            if ch == _TICK and path[i + 1:i + 2] == _TICK:
                current.append(_TICK)
                i += 1
            elif ch == _TICK:
                quoted = False
            else:
                current.append(ch)
        elif ch == _TICK and not current:
            quoted = True
        elif ch == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def last(path: str) -> str:
    """The raw name of the innermost segment: ``city`` of ``address.city``."""
    return split(path)[-1]


def lookups(typed: str) -> list[str]:
    """Stored names a user may mean by ``typed``, best first.

    As typed first (``s.x`` is the field ``x`` of struct ``s``, ```s.x``` the
    top-level column); then the whole text as one top-level name, so ``s.x``
    also finds a column literally named ``s.x`` when no struct field ``s.x`` exists.

    >>> lookups("s.x"), lookups("`s.x`"), lookups("amount")
    (['s.x', '`s.x`'], ['`s.x`'], ['amount'])
    """
    out = [typed]
    whole = quote(typed)
    if whole != typed and not typed.startswith(_TICK):
        out.append(whole)
    return out
