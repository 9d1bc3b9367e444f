"""Plain-text rendering of result rows for the CLI."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_CELL = 80


def cell(value: Any) -> str:
    """One value as a table cell: NULL for None, long text shortened."""
    if value is None:
        return "NULL"
    text = str(value).replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as an aligned text table with a header rule and a row count."""
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    out = [line(columns), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)
