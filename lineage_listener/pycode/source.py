"""The source of a pickled function: its file's text (or a notebook cell's), parsed with ``ast``.

A code object names its file and first line. :func:`find` reads that text with :mod:`linecache`
(a file on disk, or the cell text IPython keeps for a notebook in this process), parses it once
per distinct text, finds the ``def``, ``lambda`` or ``class`` that starts there and checks it
is the code that ran: its string constants and the names it uses must all be in the source
(an edited file fails the check). Nothing is imported or run.
"""
from __future__ import annotations

import ast
import hashlib
import linecache
from dataclasses import dataclass
from typing import Union

from lineage_listener.pycode.pickled import Code

Definition = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef]

#: Parsed files by the digest of their text (bounded: emptied when full).
_PARSED: dict[str, ast.Module] = {}
_MAX_PARSED = 256


class NoSource(ValueError):
    """Why a function's source could not be used (the message says it to a person)."""


@dataclass(frozen=True)
class Source:
    """A function's definition in its parsed file."""

    module: ast.Module
    node: Definition
    filename: str


def parsed(filename: str) -> ast.Module:
    """The parsed text of ``filename`` (a file, or a notebook cell :mod:`linecache` holds)."""
    lines = linecache.getlines(filename)
    if not lines:
        raise NoSource(f"its source {filename} is not readable here")
    text = "".join(lines)
    key = hashlib.sha1(filename.encode() + b"\0" + text.encode("utf-8", "surrogatepass")).hexdigest()
    found = _PARSED.get(key)
    if found is None:
        try:
            found = ast.parse(text, filename)
        except (SyntaxError, ValueError) as exc:
            raise NoSource(f"its source {filename} does not parse with this Python ({exc.__class__.__name__})") \
                from None
        if len(_PARSED) >= _MAX_PARSED:
            _PARSED.clear()
            _BY_LINE.clear()
        _PARSED[key] = found
    return found


def _start(node: Definition) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decorators])


def _name(node: Definition) -> str:
    return "<lambda>" if isinstance(node, ast.Lambda) else node.name


#: Each parsed module's definitions by the lines they may start on (their first decorator's, their own).
#: (Each entry holds its module, so the id it is kept by names no other while it is kept.)
_BY_LINE: dict[int, tuple[ast.Module, dict[int, list[Definition]]]] = {}


def _definitions(module: ast.Module) -> dict[int, list[Definition]]:
    entry = _BY_LINE.get(id(module))
    if entry is None or entry[0] is not module:
        found: dict[int, list[Definition]] = {}
        for node in ast.walk(module):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                for line in {_start(node), node.lineno}:
                    found.setdefault(line, []).append(node)
        if len(_BY_LINE) >= _MAX_PARSED:
            _BY_LINE.clear()
        entry = _BY_LINE[id(module)] = (module, found)
    return entry[1]


def candidates(module: ast.Module, code: Code) -> list[Definition]:
    """Definitions starting on the code's first line with its name."""
    return [n for n in _definitions(module).get(code.firstlineno, ()) if _name(n) == code.name]


def _source_words(node: ast.AST) -> tuple[set[str], set[str], set[str], set[str]]:
    """String constants and identifiers (names, attributes, arguments, keywords) in ``node``; then
    the string constants and attribute names it writes itself (the code that ran must have them)."""
    strings: set[str] = set()
    words: set[str] = set()
    literals: set[str] = set()
    attributes: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            strings.add(n.value)
            literals.add(n.value)
        elif isinstance(n, ast.Name):
            words.add(n.id)
        elif isinstance(n, ast.Attribute):
            words.add(n.attr)
            attributes.add(n.attr)
        elif isinstance(n, ast.arg):
            words.add(n.arg)
        elif isinstance(n, ast.keyword) and n.arg:
            words.add(n.arg)
            strings.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            if isinstance(n, ast.ImportFrom) and n.module:
                words.add(n.module)
                words.update(n.module.split("."))
            for a in n.names:
                words.update({a.name, a.asname or a.name, (a.asname or a.name).split(".")[0]})
                words.update(a.name.split("."))
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            words.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            words.update(n.names)
    return strings, words, literals, attributes


def _arguments(node: Definition) -> list[str] | None:
    if isinstance(node, ast.ClassDef):
        return None
    a = node.args
    return [x.arg for x in (*a.posonlyargs, *a.args)]


def matches(node: Definition, code: Code) -> bool:
    """Whether ``node`` can be the source of ``code``: the same positional parameters, and every
    string constant and every name the code uses appears in it (compiler-made names aside)."""
    params = _arguments(node)
    if params is not None and code.argcount <= len(code.varnames) and params != list(code.varnames[:code.argcount]):
        return False
    strings, words, _, _ = _source_words(node)
    joined = "\0".join(strings)
    for s in code.strings:
        if s in strings or s.startswith(("<", ".")) or s == code.qualname or s == "__class__":
            continue
        if s and s not in joined:  # f-string parts and docstrings are pieces of longer constants
            return False
    for name in code.names:
        if name not in words and not name.startswith("__"):
            return False
    if isinstance(node, ast.ClassDef):
        return True
    body = node.body if isinstance(node.body, list) else [node.body]  # defaults and decorators ran elsewhere
    literals, attributes = set(), set()
    for part in body:
        _, _, more_literals, more_attributes = _source_words(part)
        literals |= more_literals
        attributes |= more_attributes
    ran = code.strings
    ran_joined = "\0".join(ran)
    if any(s not in ran and s not in ran_joined for s in literals):  # a constant added since
        return False
    return attributes <= code.attributes | {"__class__"}  # an attribute read added since


def find(code: Code) -> list[Source]:
    """The definitions in ``code``'s source that can be it (checked against it; two lambdas on
    one line may both fit: the caller reads both).

    Raises :class:`NoSource` with the reason when there is no such source here."""
    module = parsed(code.filename)
    found = [n for n in candidates(module, code) if matches(n, code)]
    if not found:
        raise NoSource(f"its source at {code.filename}:{code.firstlineno} is not the code that ran "
                       "(edited since?)" if candidates(module, code) else
                       f"no definition of {code.name} at {code.filename}:{code.firstlineno}")
    return [Source(module, n, code.filename) for n in found]
