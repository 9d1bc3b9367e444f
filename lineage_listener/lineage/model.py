"""The values the walker computes: columns, flows, influences, origins, edges."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import sqlglot.expressions as exp

from lineage_listener.lineage import sqltext


class Transform(str, Enum):
    """The transform types (``docs/reference/semantics.md``), plus ``COPY`` used while walking."""

    COPY = "copy"  # becomes identity or rename once the target column name is known
    IDENTITY = "identity"
    RENAME = "rename"
    DERIVED = "derived"
    AGGREGATE = "aggregate"
    FILTER = "filter"
    JOIN = "join"
    GROUP_BY = "group_by"
    SORT = "sort"
    WINDOW = "window"
    CONDITIONAL = "conditional"

    def __str__(self) -> str:
        return self.value


#: Strength of direct transforms along a chain: the strongest wins.
STRENGTH = {Transform.COPY: 0, Transform.IDENTITY: 0, Transform.RENAME: 0,
            Transform.DERIVED: 1, Transform.AGGREGATE: 2}


def stronger(a: Transform, b: Transform) -> Transform:
    """The stronger of two direct transforms (``aggregate`` > ``derived`` > copy).

    >>> stronger(Transform.DERIVED, Transform.AGGREGATE), stronger(Transform.COPY, Transform.DERIVED)
    (<Transform.AGGREGATE: 'aggregate'>, <Transform.DERIVED: 'derived'>)
    """
    return a if STRENGTH[a] >= STRENGTH[b] else b


@dataclass(frozen=True, order=True)
class Column:
    """A column of a dataset: ``Column("spark_catalog.db.t", "address.city")``."""

    dataset: str
    name: str


@dataclass(frozen=True)
class Flow:
    """A value flowing from ``source`` into a column, through ``transform``."""

    source: Column
    transform: Transform
    masking: bool = False
    #: This flow's own defining expression, when it differs from the column's (a UNION branch).
    expression: str | None = field(default=None, compare=False)
    #: A conservative guess: a Python function that could not be read is taken to compute this
    #: column from every input it receives (docs/reference/semantics.md, "Python code").
    guess: bool = False


@dataclass(frozen=True)
class Influence:
    """A source column that decides rows or values without being copied (indirect)."""

    source: Column
    transform: Transform
    expression: str


@dataclass(frozen=True)
class Origin:
    """Where one attribute (``exprId``) of a plan comes from."""

    flows: frozenset[Flow] = frozenset()
    influences: frozenset[Influence] = frozenset()
    sql: exp.Expression | None = field(default=None, compare=False)
    size: int = field(default=1, compare=False)  # node count of ``sql``, to cap growth
    #: A struct built here (``named_struct('x', a)``): each field's own origin, by field name.
    fields: tuple[tuple[str, "Origin"], ...] = field(default=(), compare=False)

    def text(self) -> str | None:
        """The defining expression as Spark SQL text."""
        return sqltext.render(self.sql)


@dataclass(frozen=True)
class Edge:
    """One row of ``column_lineage`` before run/query/time are attached."""

    target_column: str | None
    source: Column
    transform: Transform
    kind: str  # direct | indirect
    expression: str | None
    masking: bool = False
    guess: bool = False  # a conservative guess (docs/reference/semantics.md, "Python code")


@dataclass(frozen=True)
class Attribute:
    """An output attribute of a plan node."""

    expr_id: int
    name: str
    data_type: Any = None
    nullable: bool = True


# -- combinators over origins (used by plan handlers and expression rules) ---------------


def origin(flows: Iterable[Flow], influences: Iterable[Influence], sql: exp.Expression | None) -> Origin:
    """An :class:`Origin`, its SQL size counted."""
    return Origin(frozenset(flows), frozenset(influences), sql, sqltext.size(sql) if sql is not None else 1)


def combine(parts: Iterable[Origin], transform: Transform, sql: exp.Expression | None,
            masking: bool = False) -> Origin:
    """Flows of ``parts`` raised to at least ``transform``; influences kept.

    >>> a = Origin(frozenset({Flow(Column("t", "a"), Transform.COPY)}))
    >>> b = Origin(frozenset({Flow(Column("t", "b"), Transform.AGGREGATE)}))
    >>> sorted((f.source.name, f.transform.value) for f in combine([a, b], Transform.DERIVED, None).flows)
    [('a', 'derived'), ('b', 'aggregate')]
    """
    flows: set[Flow] = set()
    influences: set[Influence] = set()
    for p in parts:
        influences |= p.influences
        for f in p.flows:
            flows.add(Flow(f.source, stronger(f.transform, transform), f.masking or masking, guess=f.guess))
    return origin(flows, influences, sql)


def as_influences(value: Origin, transform: Transform, expression: str | None = None) -> set[Influence]:
    """Every column ``value`` reads, as influences of type ``transform``.

    >>> cond = Origin(frozenset({Flow(Column("t", "b"), Transform.COPY)}), sql=sqltext.column("b"))
    >>> as_influences(cond, Transform.FILTER)
    {Influence(source=Column(dataset='t', name='b'), transform=<Transform.FILTER: 'filter'>, expression='b')}
    """
    text = expression if expression is not None else (value.text() or "")
    out = {Influence(f.source, transform, text) for f in value.flows}
    out |= {Influence(i.source, transform, text) for i in value.influences}
    return out


def ordered_influences(value: Origin, transform: Transform) -> list[Influence]:
    """:func:`as_influences` in a fixed order: as their text (``str``) orders them. They share
    their transform and expression, so their sources' text decides (the expression, often long,
    is not written out once per influence to sort them).

    >>> cond = Origin(frozenset({Flow(Column("t", "b"), Transform.COPY), Flow(Column("t", "a"), Transform.COPY)}))
    >>> [i.source.name for i in ordered_influences(cond, Transform.FILTER)]
    ['a', 'b']
    """
    return sorted(as_influences(value, transform), key=_source_text)


def _source_text(influence: Influence) -> str:
    return repr(influence.source)
