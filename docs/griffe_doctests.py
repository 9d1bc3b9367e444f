"""Griffe extension for the Python API page: docstrings read as the code reads them.

The package's docstrings keep their doctests in the text (they run in the test suite), not under an
``Examples:`` heading, and name other objects with Sphinx roles (``:meth:`upstream```). Read as
Markdown, ``>>>`` would start nested quotes, ``x[n]["key"]`` a link reference and a role stay as
typed; this extension fences each run of doctest lines as a ``pycon`` block, without the
``# doctest:`` flags, and shows a role's target as code, before the docstring is rendered.
"""
from __future__ import annotations

import re
from typing import Any

import griffe

FLAGS = re.compile(r"\s*#\s*doctest:\s*[+-]\w+(\s*,\s*[+-]\w+)*\s*$")
ROLE = re.compile(r":(?:meth|func|class|data|attr|mod|exc|obj):`(~?)([^`]+)`")


def plain_roles(text: str) -> str:
    """Sphinx roles as code: ``~`` keeps the last part of the name, as Sphinx shows it.

    >>> plain_roles("see :meth:`upstream` and :mod:`~lineage_listener.capture.recording.wrappers`")
    'see `upstream` and `wrappers`'
    """
    return ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)


def fence_doctests(text: str) -> str:
    """``text`` with each run of doctest lines (from a ``>>>`` line to the next blank line) fenced.

    >>> fence_doctests("Sum.\\n\\n>>> 1 + 1   # doctest: +SKIP\\n2\\n\\nMore.").split("\\n")
    ['Sum.', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'More.']
    >>> fence_doctests("```\\n>>> kept\\n```")
    '```\\n>>> kept\\n```'
    """
    out: list[str] = []
    fenced = in_example = False
    indent = ""
    for line in text.split("\n"):
        stripped = line.strip()
        if in_example and not stripped:
            out.append(indent + "```")
            in_example = False
        if stripped.startswith("```") and not in_example:
            fenced = not fenced
        elif stripped.startswith(">>>") and not fenced and not in_example:
            indent = line[:len(line) - len(line.lstrip())]
            out.append(indent + "```pycon")
            in_example = True
        out.append(FLAGS.sub("", line) if in_example else line)
    if in_example:
        out.append(indent + "```")
    return "\n".join(out)


class DoctestsAsCode(griffe.Extension):
    """Fences the doctests and plains the roles of every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(plain_roles(obj.docstring.value))
