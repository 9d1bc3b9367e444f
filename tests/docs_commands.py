"""The commands the README and the docs pages show, read from the pages: each ``$ command`` of a
plain fenced block with the output the page shows under it and the exit code a following
``$ echo $?`` gives. Shown output may leave text out: a line ``...`` stands for any lines, ``…`` and
``[...]`` for any text within a line (a table cell the CLI cut with ``…`` matches the page's longer
cell, as the cut falls elsewhere when a path is longer). Blank lines do not count.

>>> [(e.command, e.output, e.exit_code) for e in read_block(["$ a --x \\\\", "    y", "out", "$ echo $?", "1"], 3)]
[('a --x y', 'out', 1)]
"""
from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Generated pages: their blocks are synopses from the CLI's parser (tests/test_docs.py checks them).
GENERATED = {"docs/reference/cli.md"}
#: In a block without ``$`` prompts, a line starting with one of these is a command (no output shown).
PROGRAMS = {"lineage-listener", "curl", "make", "spark-submit", "pip", "python", "git", "datahub"}


@dataclass(frozen=True)
class Example:
    page: str
    line: int           # the command's line on the page
    command: str        # continuation lines joined
    output: str         # as shown ("" when none is)
    exit_code: int | None  # from a following `$ echo $?`, else None

    @property
    def key(self) -> tuple[str, str]:
        return self.page, self.command


def pages() -> list[str]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [str(p.relative_to(ROOT)) for p in found if str(p.relative_to(ROOT)) not in GENERATED]


def _open_quote(command: str) -> bool:
    try:
        shlex.split(command, comments=True)
    except ValueError:
        return True
    return False


def read_block(lines: list[str], first_line: int, page: str = "") -> list[Example]:
    """The examples of one fenced block (``lines`` without the fences; ``first_line`` is the first's
    line number on the page)."""
    examples: list[Example] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        start = i
        command = lines[i][2:]
        while (command.endswith("\\") or _open_quote(command)) and i + 1 < len(lines):
            i += 1
            command = command.removesuffix("\\").rstrip() + " " + lines[i].strip()
        i += 1
        output = []
        while i < len(lines) and not lines[i].startswith("$ "):
            output.append(lines[i])
            i += 1
        text = "\n".join(output).strip("\n")
        if command.strip() == "echo $?" and examples:
            last = examples[-1]
            examples[-1] = Example(last.page, last.line, last.command, last.output, int(text))
            continue
        examples.append(Example(page, first_line + start, command.strip(), text, None))
    return examples


def examples(page: str) -> list[Example]:
    """Every ``$ command`` of a plain (or ``console``/``shell``) fenced block of ``page``."""
    lines = (ROOT / page).read_text().splitlines()
    found: list[Example] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        indent, language = fence.groups()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        if language in ("", "console", "shell", "bash", "sh"):
            body = [line[len(indent):] for line in lines[i + 1:end]]
            if not any(line.startswith("$ ") for line in body):  # a list of commands, no output shown
                body = ["$ " + line if line.split(" ", 1)[0] in PROGRAMS else line for line in body]
            found += read_block(body, i + 2, page)
        i = end + 1
    return found


@dataclass(frozen=True)
class CodeBlock:
    page: str
    line: int        # the block's first line on the page
    language: str    # python or sql
    text: str

    @property
    def first(self) -> str:
        """The block's first line: how lists name it."""
        return self.text.splitlines()[0]


def code_blocks(page: str) -> list[CodeBlock]:
    """Every ``python`` and ``sql`` fenced block of ``page`` (an indented one unindented)."""
    lines = (ROOT / page).read_text().splitlines()
    found = []
    for i, line in enumerate(lines):
        fence = re.match(r"^(\s*)```(python|sql)\s*$", line)
        if fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            body = "\n".join(x[len(fence.group(1)):] for x in lines[i + 1:end]) + "\n"
            found.append(CodeBlock(page, i + 2, fence.group(2), body))
    return found


def _line_pattern(shown: str) -> re.Pattern:
    parts = re.split(r"(…|\[\.\.\.\])", shown)
    return re.compile("".join(".*" if p in ("…", "[...]") else re.escape(p) for p in parts))


def _line_matches(printed: str, shown: str) -> bool:
    """Equal, where a ``…`` on either side stands for any text: the page's for what it leaves out,
    the printed line's for a cell the CLI cut (or an id written short)."""
    return (printed == shown or _line_pattern(shown).fullmatch(printed) is not None
            or _line_pattern(printed).fullmatch(shown) is not None)


def matches(printed: list[str], shown: list[str]) -> bool:
    """Whether printed lines are the shown ones, ``...`` lines standing for any lines.

    >>> matches(["a", "b", "c"], ["a", "...", "c"]), matches(["a x1", "c"], ["a …"]), matches(["a"], ["a", "b"])
    (True, False, False)
    >>> matches(["from x -> spark_cat…  derived"], ["from x -> spark_catalog.sales…  derived"])
    True
    """
    if not shown:
        return not printed
    if shown[0] == "...":
        return any(matches(printed[k:], shown[1:]) for k in range(len(printed) + 1))
    return bool(printed) and _line_matches(printed[0], shown[0]) and matches(printed[1:], shown[1:])


def normal_lines(text: str) -> list[str]:
    """Lines with runs of spaces as one and table rules as one dash (their widths follow the cells),
    without blank lines."""
    text = re.sub(r"-{2,}", "-", text)
    return [line for line in (re.sub(r"\s+", " ", line).strip() for line in text.splitlines()) if line]


def normal_json(text: str) -> str:
    """JSON text as one line with single spaces: the page indents a shortened document by hand."""
    return " ".join(re.sub(r"([\[\]{},])", r" \1 ", text).split())


def json_matches(printed: str, shown: str) -> bool:
    """A shortened JSON document: ``...`` and ``[...]`` stand for any text (across lines), ``, ...``
    and ``..., `` for any items or none.

    >>> json_matches('{"a": [1, 2], "b": 3}', '{"a": [...], ...}')
    True
    >>> [json_matches(t, '[..., {"x": 2}, ...]') for t in ('[{"x": 2}]', '[{"x": 1}, {"x": 2}]', '[{"x": 1}]')]
    [True, True, False]
    """
    shown = re.sub(r" , \.\.\.|\.\.\. , ", "...", normal_json(shown))
    parts = re.split(r"(\[ \.\.\. \]|\.\.\.)", shown)
    pattern = "".join(r".*?" if p.strip() in ("[ ... ]", "...") else re.escape(p) for p in parts)
    return re.fullmatch(pattern.replace(re.escape(" "), r"\s*"), normal_json(printed), re.S) is not None


def run_in_shell(command: str) -> tuple[str, int]:
    """A page's command run as the page runs it, in the current folder: its output and exit code."""
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=600)
    return done.stdout + done.stderr, done.returncode


#: How a cog block's commands are run: a shell by default; tests give what their run printed.
run: Callable[[str], tuple[str, int]] = run_in_shell


def rerun_block(previous: str, run: Callable[[str], tuple[str, int]]) -> str:
    """A fenced block of ``$`` commands with each command's output (and each ``$ echo $?``'s exit
    code) replaced by what ``run`` gives for it: what a cog block of the pages generates.

    >>> rerun_block("```\\n$ a \\\\\\n  -x\\nold\\n$ echo $?\\n0\\n```\\n", lambda c: (f"new {c}", 1))
    '```\\n$ a \\\\\\n  -x\\nnew a -x\\n$ echo $?\\n1\\n```\\n'
    """
    lines = previous.splitlines()
    out: list[str] = []
    code = None
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            if lines[i].strip() == "```":
                out.append(lines[i])
            i += 1
            continue
        fence = next((j for j in range(i, len(lines)) if lines[j].strip() == "```"), len(lines))
        example = read_block(lines[i:fence], 0)[0]
        taken = 1
        while lines[i + taken - 1].endswith("\\") or _open_quote(" ".join(lines[i:i + taken])):
            taken += 1
        out += lines[i:i + taken]
        i += taken
        while i < len(lines) and not lines[i].startswith("$ ") and lines[i].strip() != "```":
            i += 1
        if example.command == "echo $?":
            out.append(str(code))
            continue
        text, code = run(example.command)
        out += [text.rstrip("\n")] if text.strip() else []
        if i < len(lines) and lines[i].startswith("$ ") and not lines[i].startswith("$ echo $?") and text.strip():
            out.append("")
    return "\n".join(out) + "\n"


def rerun() -> None:
    """The generator of the pages' cog blocks (``<!-- [[[cog from tests.docs_commands import rerun;
    rerun() ]]] -->`` before a fenced block of commands, ``<!-- [[[end]]] -->`` after it): the
    block's commands run anew, each followed by its output. ``cog -r PAGE``, run where the page
    runs its commands, writes them into the page; the tests run cog with their own run's output."""
    import cog

    cog.out(rerun_block(cog.previous, run))


def cogged(page_text: str) -> str:
    """The page with every cog block generated anew (by ``run``)."""
    from cogapp import Cog

    return Cog().process_string(page_text, fname="page")
