"""What the reader knows about a value of a Python function: the input columns it is made of.

The reader (:mod:`~lineage_listener.pycode.interp`) runs nothing: it follows the function's
source and keeps, for each value, which input columns flow into it and how:

- :class:`Taint`: a scalar, a pandas ``Series``, an Arrow array: its flows ``(input column,
  transform)``; ``guess`` when they may over-state what the code really reads (a column chosen
  at run time, a whole frame handed to code the reader cannot follow);
- :class:`Table`: a pandas ``DataFrame``, an Arrow batch, a ``Row``, a ``dict``: its columns by
  name, in order, each a value; ``extra`` stands for columns the reader cannot name;
- :class:`Seq`: a tuple or list (items by position, or one ``elem`` for any length);
  :class:`Iter`: an iterator or generator (its ``elem``);
- :class:`Const`: a constant of the code (column names are constants); :class:`Obj`: a module,
  a library function, an object the reader only names.

Transforms: ``copy`` (the value as it was), ``derived`` (computed), ``aggregate`` (reduced over
rows), the strongest winning along a path (docs/reference/semantics.md).

>>> a = Taint.column(0)
>>> derive([a, Taint.column(1)]).flows == {(0, DERIVED), (1, DERIVED)}
True
>>> t = Table.of(["id", "email"])
>>> t.column("email"), t.column("nope") is None
(Taint(flows=frozenset({(1, 'copy')}), guess=False, vector=True), True)
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Union

COPY, DERIVED, AGGREGATE = "copy", "derived", "aggregate"
_RANK = {COPY: 0, DERIVED: 1, AGGREGATE: 2}


def stronger(a: str, b: str) -> str:
    """The stronger of two transforms.

    >>> stronger(COPY, AGGREGATE), stronger(DERIVED, COPY)
    ('aggregate', 'derived')
    """
    return a if _RANK[a] >= _RANK[b] else b


@dataclass(frozen=True)
class Taint:
    """A value made of input columns: ``flows`` of ``(input column index, transform)``."""

    flows: frozenset[tuple[int, str]] = frozenset()
    guess: bool = False
    vector: bool = False  # a column of many rows (a Series, an array), not one row's value

    @staticmethod
    def column(index: int, transform: str = COPY) -> "Taint":
        return Taint(frozenset({(index, transform)}), False, True)

    def raised(self, transform: str) -> "Taint":
        """The same sources, each at least ``transform``."""
        return Taint(frozenset((i, stronger(t, transform)) for i, t in self.flows), self.guess, self.vector)

    def __or__(self, other: "Taint") -> "Taint":
        return Taint(self.flows | other.flows, self.guess or other.guess, self.vector or other.vector)


EMPTY = Taint()


@dataclass(frozen=True)
class Const:
    """A constant of the code: a column name, a list of names, a number."""

    value: Any


@dataclass(frozen=True)
class Obj:
    """A module, library function or object the reader knows only by name (``pandas.DataFrame``);
    ``?`` for one it cannot name."""

    path: str = "?"


@dataclass(frozen=True)
class Seq:
    """A tuple or list: ``items`` by position when known, else any number of ``elem``."""

    items: tuple["Value", ...] | None
    elem: "Value" = EMPTY

    @staticmethod
    def of(items: Sequence["Value"]) -> "Seq":
        return Seq(tuple(items), union(list(items)) if items else EMPTY)


@dataclass(frozen=True)
class Iter:
    """An iterator, generator or iterable of ``elem``."""

    elem: "Value" = EMPTY


@dataclass(frozen=True)
class Table:
    """Named columns in order (a DataFrame, an Arrow batch, a Row, a dict); ``extra``: what any
    other column holds when some cannot be named (None: there are no others); ``index``: named
    index levels of a pandas frame (``set_index``, ``groupby(...).sum()``)."""

    cols: tuple[tuple[Any, "Value"], ...]
    extra: Taint | None = None
    kind: str = "frame"  # frame | row | dict | batch
    index: tuple[tuple[Any, "Value"], ...] = ()

    @staticmethod
    def of(names: Iterable[str], offset: int = 0, kind: str = "frame") -> "Table":
        """An input table: each column a copy of the input column at ``offset`` + its position."""
        return Table(tuple((n, Taint.column(offset + i)) for i, n in enumerate(names)), None, kind)

    def names(self) -> list[Any]:
        return [n for n, _ in self.cols]

    def column(self, name: Any) -> "Value | None":
        for n, v in self.cols:
            if n == name:
                return v
        return self.extra

    def with_column(self, name: Any, value: "Value") -> "Table":
        if any(n == name for n, _ in self.cols):
            return replace(self, cols=tuple((n, value if n == name else v) for n, v in self.cols))
        return replace(self, cols=self.cols + ((name, value),))

    def select(self, names: Iterable[Any], missing: "Callable[[Any], Value]") -> "Table":
        """Columns ``names`` (``missing(name)`` for one this table does not have)."""
        cols = []
        for n in names:
            v = self.column(n)
            cols.append((n, v if v is not None else missing(n)))
        return Table(tuple(cols), None, self.kind)

    def drop(self, names: Iterable[Any]) -> "Table":
        gone = set(names)
        return replace(self, cols=tuple((n, v) for n, v in self.cols if n not in gone))

    def rename(self, mapping: dict[Any, Any]) -> "Table":
        return replace(self, cols=tuple((mapping.get(n, n), v) for n, v in self.cols))

    def each(self, fn: Any) -> "Table":
        """Every column (and ``extra``) passed through ``fn``."""
        return replace(self, cols=tuple((n, fn(v)) for n, v in self.cols),
                       extra=fn(self.extra) if self.extra is not None else None)


@dataclass(frozen=True)
class Group:
    """A pandas ``groupby``: the grouped table and the names of its keys."""

    table: Table
    keys: tuple[Any, ...]
    selected: tuple[Any, ...] | None = None  # ``groupby(k)["a"]``


@dataclass
class Instance:
    """``self`` of a UDTF: attributes its methods set and read (mutable, shared by the methods)."""

    attrs: dict[str, "Value"] = field(default_factory=dict)


@dataclass(frozen=True)
class Func:
    """A function of the code (a ``def``, a ``lambda``, a pickled helper): called, it is read."""

    node: Any  # ast.FunctionDef | ast.Lambda
    scope: Any  # the scope it was defined in (interp.Scope)
    bound: tuple["Value", ...] = ()  # a method's ``self``
    label: str = ""


Value = Union[Taint, Const, Obj, Seq, Iter, Table, Group, Instance, Func]


def taint(value: "Value | None") -> Taint:
    """Every input column ``value`` holds, as one :class:`Taint`."""
    if value is None:
        return EMPTY
    if isinstance(value, Taint):
        return value
    if isinstance(value, Table):
        out = value.extra or EMPTY
        for _, v in value.cols + value.index:
            out = out | taint(v)
        return out
    if isinstance(value, Seq):
        out = taint(value.elem)
        for v in value.items or ():
            out = out | taint(v)
        return out
    if isinstance(value, Iter):
        return taint(value.elem)
    if isinstance(value, Group):
        return taint(value.table)
    if isinstance(value, Instance):
        out = EMPTY
        for v in list(value.attrs.values()):
            out = out | taint(v)
        return out
    return EMPTY


def derive(values: Iterable["Value | None"], transform: str = DERIVED) -> Taint:
    """A value computed from ``values``: their sources, each at least ``transform``.

    >>> sorted(derive([Taint.column(0), Const(1)]).flows)
    [(0, 'derived')]
    """
    out = EMPTY
    for v in values:
        out = out | taint(v)
    return out.raised(transform)


def union(values: Sequence["Value | None"]) -> "Value":
    """One value that may be any of ``values`` (two branches, two ``yield``s): shapes kept where
    they agree (tables by column name, tuples by position), else their sources together.

    >>> u = union([Seq.of([Taint.column(0), Const(None)]), Seq.of([Const(None), Taint.column(1)])])
    >>> [sorted(taint(i).flows) for i in u.items]
    [[(0, 'copy')], [(1, 'copy')]]
    """
    live = [v for v in values if v is not None and not isinstance(v, (Const, Obj))]
    if not live:
        return values[0] if values and values[0] is not None else EMPTY
    first = live[0]
    if len(live) == 1:
        return first
    if all(isinstance(v, Taint) for v in live):
        out = EMPTY
        for v in live:
            out = out | v  # type: ignore[operator]
        return out
    if all(isinstance(v, Table) for v in live):
        tables: list[Table] = live  # type: ignore[assignment]
        names: list[Any] = []
        for t in tables:
            names += [n for n in t.names() if n not in names]
        cols = tuple((n, union([t.column(n) for t in tables if t.column(n) is not None])) for n in names)
        extras = [t.extra for t in tables if t.extra is not None]
        index_names: list[Any] = []
        for t in tables:
            index_names += [n for n, _ in t.index if n not in index_names]
        index = tuple((n, union([dict(t.index).get(n) for t in tables])) for n in index_names)
        return Table(cols, union(extras) if extras else None, first.kind, index)  # type: ignore[arg-type]
    if all(isinstance(v, Seq) for v in live):
        seqs: list[Seq] = live  # type: ignore[assignment]
        elem = union([s.elem for s in seqs])
        lengths = {len(s.items) if s.items is not None else -1 for s in seqs}
        if len(lengths) == 1 and -1 not in lengths:
            return Seq(tuple(union([s.items[i] for s in seqs]) for i in range(lengths.pop())), elem)  # type: ignore[index]
        return Seq(None, union([elem] + [i for s in seqs for i in s.items or ()]))
    if all(isinstance(v, Iter) for v in live):
        return Iter(union([v.elem for v in live]))  # type: ignore[union-attr]
    if all(isinstance(v, Instance) for v in live):
        return first
    out = EMPTY
    for v in live:
        out = out | taint(v)
    return Taint(out.flows, True, out.vector)


def with_control(value: "Value", control: Taint) -> "Value":
    """``value`` computed under a condition reading ``control`` (an ``if``): the condition's
    sources join each of its parts, as ``derived``."""
    if not control.flows:
        return value
    extra = control.raised(DERIVED)
    if isinstance(value, Const):  # a constant picked by the condition is computed from it
        return Taint(extra.flows, extra.guess, False)
    if isinstance(value, Taint):
        return value | Taint(extra.flows, extra.guess, value.vector)
    if isinstance(value, Table):
        return value.each(lambda v: with_control(v, control))
    if isinstance(value, Seq):
        return Seq(tuple(with_control(i, control) for i in value.items) if value.items is not None else None,
                   with_control(value.elem, control))
    if isinstance(value, Iter):
        return Iter(with_control(value.elem, control))
    return value
