"""Turn a finished walk into edges: one per (target column, source, transform)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from lineage_listener.lineage import column_path
from lineage_listener.lineage.model import Attribute, Edge, Origin, Transform
from lineage_listener.lineage.walker import Walk


def copy_kind(target: str, source: str) -> Transform:
    """A copied value keeps its name (identity) or gets a new one (rename); names as stored.

    >>> copy_kind("ID", "id").value, copy_kind("city", "address.city").value, copy_kind("b", "a").value
    ('identity', 'identity', 'rename')
    >>> copy_kind("s.a", "a").value, copy_kind("s.x", "a").value, copy_kind("`s.x`", "x").value
    ('identity', 'rename', 'rename')
    """
    field = column_path.quote(column_path.last(target)).lower()  # ``s.x`` written from ``x`` keeps its name
    same = field in (source.lower(), column_path.quote(column_path.last(source)).lower())
    return Transform.IDENTITY if same else Transform.RENAME


def field_origins(name: str, origin: Origin) -> list[tuple[str, Origin]]:
    """The fields of a struct built in the query, nested ones too, by stored name: ``s.x``."""
    out = []
    for field, value in origin.fields:
        path = column_path.child(name, field)
        out.append((path, value))
        out += field_origins(path, value)
    return out


def column_edges(name: str, origin: Origin) -> list[Edge]:
    """Direct and per-column indirect edges of one output column."""
    text = origin.text()
    out = []
    for f in origin.flows:
        transform = copy_kind(name, f.source.name) if f.transform == Transform.COPY else f.transform
        expression = f.source.name if transform == Transform.IDENTITY else text or f.expression
        out.append(Edge(name, f.source, transform, "direct", expression, f.masking, f.guess))
    for i in origin.influences:
        out.append(Edge(name, i.source, i.transform, "indirect", i.expression, False))
    return out


def edges(walk: Walk, outputs: Sequence[Attribute], names: Sequence[str] | None = None) -> list[Edge]:
    """All edges of a query: each output column's, then row-level influences (target null)."""
    names = list(names) if names and len(names) == len(outputs) else [a.name for a in outputs]
    seen: dict[tuple, int] = {}
    result: list[Edge] = []

    def add(e: Edge) -> None:
        key = (e.target_column, e.source, e.transform, e.kind)
        at = seen.get(key)
        if at is None:
            seen[key] = len(result)
            result.append(e)
        elif result[at].guess and not e.guess:  # a path that surely reads the source: no guess
            result[at] = replace(result[at], guess=False)

    for name, attr in zip(names, outputs):
        origin = walk.env.get(attr.expr_id)
        if origin is not None:
            stored = column_path.quote(name)
            # Ties on (source, transform) keep the first expression in text order: the same on every run.
            for column, value in [(stored, origin), *field_origins(stored, origin)]:
                for e in sorted(column_edges(column, value), key=lambda e: (e.kind, e.source, e.transform,
                                                                            e.expression or "")):
                    add(e)
    for i in walk.influences:
        add(Edge(None, i.source, i.transform, "indirect", i.expression, False))
    return result
