"""pandas, Arrow and ``Row`` operations as the reader follows them: column by column where the
code names its columns, from everything it receives otherwise.

A frame (:class:`~lineage_listener.pycode.values.Table`) keeps its columns by name: ``pdf['a']``
is column ``a``, ``pdf[['a', 'b']]`` a frame of two, ``pdf['c'] = ...`` / ``assign`` /
``rename`` / ``drop`` change them; a row filter (``pdf[pdf.x > 0]``, ``loc[mask]``, Arrow's
``filter``) keeps them and notes what decides the rows. A reduction (``sum``, ``mean``...) is
``aggregate``; any other method computes its result from its receiver and arguments
(``derived``). Library calls (``pd.DataFrame({...})``, ``pa.RecordBatch.from_pydict``,
``Row(a=...)``, ``np.where``) are modelled the same way, by name.

>>> from lineage_listener.pycode.interp import FunctionReader
>>> t = Table.of(["id", "amount"])
>>> out, _ = method(FunctionReader(2), t, "assign", [], {"double": binary(t.column("amount"), Const(2))})
>>> [(n, sorted(taint(v).flows)) for n, v in out.cols]
[('id', [(0, 'copy')]), ('amount', [(1, 'copy')]), ('double', [(1, 'derived')])]
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from lineage_listener.pycode.values import (AGGREGATE, DERIVED, EMPTY, Const, Func, Group, Instance, Iter, Obj, Seq,
                                            Table, Taint, Value, derive, taint, union)

if TYPE_CHECKING:
    from lineage_listener.pycode.interp import FunctionReader

#: Methods reducing a column (or each column of a frame) over its rows.
REDUCTIONS = frozenset({
    "sum", "mean", "median", "min", "max", "count", "std", "var", "sem", "prod", "product", "nunique", "first",
    "last", "any", "all", "size", "mode", "quantile", "idxmax", "idxmin", "agg", "aggregate", "describe", "cumsum",
    "cummax", "cummin", "cumprod", "value_counts", "unique", "kurt", "skew", "item", "argmax", "argmin",
})
#: Frame methods keeping every column as it is (rows picked, reordered or copied).
ROWS = frozenset({
    "copy", "head", "tail", "sample", "dropna", "drop_duplicates", "sort_values", "sort_index", "nlargest",
    "nsmallest", "query", "take", "slice", "to_pandas", "combine_chunks", "to_batches", "infer_objects",
    "convert_dtypes", "reindex", "sort_by", "truncate", "between_time", "at_time", "to_frame", "unify_dictionaries",
})
#: Frame methods changing every value but no column's name.
VALUES = frozenset({"fillna", "astype", "round", "abs", "clip", "replace", "applymap", "map", "ffill", "bfill",
                    "interpolate", "where", "mask", "cast", "transform", "shift", "diff", "pct_change", "rank"})
#: Attributes describing a frame's shape, not its values.
SHAPE = frozenset({"shape", "empty", "ndim", "size", "dtypes", "dtype", "num_rows", "num_columns", "schema", "index",
                   "nbytes", "num_chunks", "is_unique", "hasnans"})
#: Attributes of a column that are the column (accessors).
ACCESSORS = frozenset({"str", "dt", "cat", "values", "array", "loc", "iloc", "at", "iat", "list", "struct", "sparse",
                       "T", "plot"})
#: Calls that do not change what they are given (builtins and libraries the reader knows).
PURE_MODULES = ("builtins.", "pandas", "numpy", "pyarrow", "math", "re", "json", "datetime", "decimal", "operator",
                "logging", "time", "hashlib", "uuid", "string", "itertools", "functools", "collections", "statistics",
                "random", "pyspark", "typing", "os.path", "urllib", "unicodedata", "zlib", "base64", "dateutil",
                "pytz", "zoneinfo", "html", "textwrap", "ipaddress", "copy", "warnings", "scipy", "sklearn")


def keeps_arguments(path: str) -> bool:
    """Whether a call of ``path`` is taken not to change the objects it receives."""
    return path.startswith(PURE_MODULES) or path.startswith("?class:") or path.startswith("rowclass:")


def constants(value: Value) -> list[Any] | None:
    """The constants a value iterates over (a literal list of column names, a frame's known
    column names), else None."""
    if isinstance(value, Const) and isinstance(value.value, (list, tuple, set, frozenset)):
        return list(value.value)
    if isinstance(value, Const) and isinstance(value.value, dict):
        return list(value.value)
    if isinstance(value, Seq) and value.items is not None and all(isinstance(i, Const) for i in value.items):
        return [i.value for i in value.items]  # type: ignore[union-attr]
    return None


def binary(a: Value, b: Value) -> Value:
    """An operator over two values: computed from both (constants alone stay constants)."""
    if isinstance(a, Const) and isinstance(b, Const):
        try:
            return Const(a.value + b.value) if isinstance(a.value, (list, tuple, str)) else Const(None)
        except TypeError:
            return Const(None)
    if isinstance(a, (Seq, Const)) and isinstance(b, (Seq, Const)) and _items(a) is not None \
            and _items(b) is not None and (isinstance(a, Seq) or isinstance(b, Seq)):  # ``key + (x,)``
        return Seq.of(_items(a) + _items(b))  # type: ignore[operator]
    if isinstance(a, Table) and isinstance(b, (Const, Obj)):  # ``pdf * 2``: each column
        return a.each(lambda v: derive([v]) if v is not None else v)
    t = derive([a, b])
    return Taint(t.flows, t.guess, taint(a).vector or taint(b).vector)


def _items(value: Value) -> list[Value] | None:
    if isinstance(value, Seq):
        return list(value.items) if value.items is not None else None
    if isinstance(value, Const) and isinstance(value.value, tuple):
        return [Const(v) for v in value.value]
    return None


def either(values: list[Value]) -> Value:
    """``a or b`` / ``a and b``: either value, each deciding whether the other is taken."""
    decided = derive(values)
    return Taint(decided.flows, decided.guess, any(taint(v).vector for v in values))


def compare(reader: "FunctionReader", parts: list[Value], ops: list[ast.cmpop]) -> Value:
    """A comparison; ``'a' in pdf.columns`` asks about the frame's shape, not its values."""
    if len(parts) == 2 and isinstance(ops[0], (ast.In, ast.NotIn)) and isinstance(parts[0], Const) \
            and isinstance(parts[1], Table):
        return Const(None)
    t = derive(parts)
    return Taint(t.flows, t.guess, any(taint(p).vector for p in parts))


def element(reader: "FunctionReader", value: Value) -> Value:
    """What iterating over ``value`` gives one at a time."""
    if isinstance(value, (Iter, Seq)):
        return value.elem if not (isinstance(value, Seq) and value.items) else union(list(value.items) + [value.elem])
    if isinstance(value, Table):
        if value.kind == "frame" or value.kind == "batch" or value.kind == "dict":
            return Const(None) if value.extra is None else Obj("?label")  # column labels
        return reader.guess("a row's values are read one by one, in a loop", value)
    if isinstance(value, Const):
        if isinstance(value.value, (list, tuple, set, frozenset, dict)):
            return union([Const(v) for v in value.value]) if value.value else Const(None)
        return Const(None)
    if isinstance(value, Taint):
        return Taint(value.flows, value.guess, False)
    if isinstance(value, Group):
        return Seq.of([Seq.of([Taint(derive([value.table.column(k) for k in value.keys]).flows, False, False)
                               for _ in value.keys]), value.table])
    return Obj("?item")


def unpack(reader: "FunctionReader", value: Value, n: int) -> list[Value]:
    """``a, b = value``: its first ``n`` parts by position."""
    if isinstance(value, Seq) and value.items is not None and len(value.items) >= n:
        return list(value.items[:n])
    if isinstance(value, Table) and value.kind == "row" and value.extra is None and len(value.cols) >= n:
        return [v for _, v in value.cols[:n]]
    if isinstance(value, Const) and isinstance(value.value, (tuple, list)) and len(value.value) >= n:
        return [Const(v) for v in value.value[:n]]
    part = element(reader, value)
    return [part] * n


# -- reading from frames, rows and columns --------------------------------------------


def _missing(reader: "FunctionReader", table: Table, name: Any) -> Value:
    """A column the reader did not see made: it lost track of something, so it may hold any input."""
    return reader.guess(f"column {name!r} is not one the reader saw made")


def column(reader: "FunctionReader", table: Table, name: Any) -> Value:
    found = table.column(name)
    if found is None:
        found = dict(table.index).get(name)
    return found if found is not None else _missing(reader, table, name)


def positional(reader: "FunctionReader", table: Table, index: int) -> Value:
    if table.extra is None and -len(table.cols) <= index < len(table.cols):
        return table.cols[index][1]
    return reader.guess("a column is read by its position", table)


def attribute(reader: "FunctionReader", value: Value, name: str) -> Value:
    """``value.name``."""
    if isinstance(value, Obj):
        return Obj(f"{value.path}.{name}")
    if isinstance(value, Instance):
        return value.attrs.get(name, Obj(f"?self.{name}"))
    if isinstance(value, Table):
        if name == "columns" or name == "column_names":
            return Const(tuple(value.names())) if value.extra is None else Obj("?columns")
        if name in SHAPE:
            return Const(None)
        if name in ("loc", "iloc", "at", "iat", "T"):
            return value if name != "T" else reader.guess("a frame is transposed", value)
        found = value.column(name)
        if found is not None:
            return found
        return Obj(f"?method:{name}")
    if isinstance(value, Taint):
        if name in SHAPE:
            return Const(None)
        return value if name in ACCESSORS else Taint(value.flows, value.guess, value.vector)
    if isinstance(value, Group):
        if name in value.table.names():
            return Group(value.table, value.keys, (name,))
        return Obj(f"?group.{name}")
    if isinstance(value, (Seq, Iter, Const, Func)):
        return Obj(f"?attr.{name}")
    return Obj("?")


def get_item(reader: "FunctionReader", base: Value, key: Value, accessor: str | None) -> Value:
    """``base[key]`` (``accessor``: through ``.loc`` / ``.iloc`` / ``.at`` / ``.iat``)."""
    if isinstance(base, Table):
        return _table_item(reader, base, key, accessor)
    if isinstance(base, Seq):
        if isinstance(key, Const) and isinstance(key.value, int) and base.items is not None \
                and -len(base.items) <= key.value < len(base.items):
            return base.items[key.value]
        if is_slice(key) and base.items is not None:
            return base
        return element(reader, base) if not isinstance(key, Taint) else union([element(reader, base), derive([key])])
    if isinstance(base, Group):
        names = [key.value] if isinstance(key, Const) and isinstance(key.value, str) else _names(key)
        return Group(base.table, base.keys, tuple(names)) if names is not None else base
    if isinstance(base, Taint):
        if isinstance(key, Taint):  # ``s[mask]``: the rows of s a condition picks
            reader.filters.update(i for i, _ in key.flows)
            return base
        if is_slice(key):  # a slice of rows
            return base
        return Taint(derive([base, key]).flows, base.guess or taint(key).guess, base.vector)
    if isinstance(base, Const):
        try:
            return Const(base.value[key.value]) if isinstance(key, Const) else Obj("?")
        except (TypeError, KeyError, IndexError):
            return Const(None)
    if isinstance(base, Iter):
        return element(reader, base)
    return derive([base, key]) if taint(key).flows else Obj("?item")


#: ``a[1:3]``, ``pdf.loc[:, 'x']``: a slice picks rows or items, never names a column.
SLICE = Obj("slice")


def is_slice(value: Value) -> bool:
    return value == SLICE


def _names(key: Value) -> list[Any] | None:
    if isinstance(key, Const) and isinstance(key.value, (list, tuple)) and not isinstance(key.value, str):
        return list(key.value)
    if isinstance(key, Seq) and key.items is not None and all(isinstance(i, Const) for i in key.items):
        return [i.value for i in key.items]  # type: ignore[union-attr]
    return None


def _table_item(reader: "FunctionReader", table: Table, key: Value, accessor: str | None) -> Value:
    if accessor in ("loc", "at") and isinstance(key, Seq) and key.items is not None and len(key.items) == 2:
        rows, cols = key.items
        picked = _rows(reader, table, rows)
        return _table_item(reader, picked, cols, None) if not is_slice(cols) \
            else picked
    if accessor in ("iloc", "iat") and isinstance(key, Seq) and key.items is not None and len(key.items) == 2:
        rows, cols = key.items
        picked = _rows(reader, table, rows)
        if isinstance(cols, Const) and isinstance(cols.value, int):
            return positional(reader, picked, cols.value)
        if is_slice(cols):
            return picked
        return reader.guess("columns are picked by position", picked)
    if accessor in ("loc", "iloc") or isinstance(key, Taint) or is_slice(key):
        return _rows(reader, table, key)
    if isinstance(key, Const):
        if isinstance(key.value, str):
            return column(reader, table, key.value)
        if isinstance(key.value, int) and table.kind == "row":
            return positional(reader, table, key.value)
        if key.value is None:  # a key computed from constants only: which column is not known here
            return reader.guess("a column is chosen at run time", table)
        names = _names(key)
        if names is not None:
            return table.select(names, lambda n: _missing(reader, table, n))
        if isinstance(key.value, int):
            return column(reader, table, key.value)
    names = _names(key)
    if names is not None:
        return table.select(names, lambda n: _missing(reader, table, n))
    return reader.guess("a column is chosen at run time", table)


def _rows(reader: "FunctionReader", table: Table, key: Value) -> Table:
    """The rows of ``table`` a key picks (a condition's columns decide them)."""
    if isinstance(key, Taint):
        reader.filters.update(i for i, _ in key.flows)
    return table


def set_item(reader: "FunctionReader", base: Value, key: Value, value: Value, accessor: str | None) -> Value | None:
    """``base[key] = value``: the changed container (None: nothing the reader follows changed)."""
    if isinstance(base, Table):
        if accessor in ("loc", "at") and isinstance(key, Seq) and key.items is not None and len(key.items) == 2:
            rows, cols = key.items
            names = [cols.value] if isinstance(cols, Const) and not isinstance(cols.value, (list, tuple)) \
                else _names(cols)
            if names is None:
                return table_guess(reader, base, "a column is written that is chosen at run time")
            out = base
            for n in names:  # some rows get the new value: the column is either, decided by ``rows``
                old = base.column(n)
                new = union([old, value]) if old is not None else value
                out = out.with_column(n, Taint(derive([new, rows]).flows, taint(new).guess or rows.guess, True)
                                      if isinstance(rows, Taint) else new)
            return out
        if isinstance(key, Const) and isinstance(key.value, (str, int)) and not isinstance(key.value, bool):
            return base.with_column(key.value, value)
        names = _names(key)
        if names is not None:
            out = base
            for i, n in enumerate(names):
                part = value.cols[i][1] if isinstance(value, Table) and value.extra is None and i < len(value.cols) \
                    else value.items[i] if isinstance(value, Seq) and value.items and i < len(value.items) else value
                out = out.with_column(n, part)
            return out
        if isinstance(key, Taint):  # ``pdf[mask] = 0``: every column may change where mask holds
            return base.each(lambda v: union([v, derive([value, key])]) if v is not None else v)
        return table_guess(reader, base, "a column is written that is chosen at run time", value)
    if isinstance(base, Seq):
        return Seq(None, union([element(reader, base), value]))
    if isinstance(base, Taint):  # a struct argument (a pandas frame of its fields): every field may hold it
        return reader.guess("a value is written into by key", union([base, value]))
    return None


def table_guess(reader: "FunctionReader", table: Table, reason: str, value: Value | None = None) -> Table:
    """A frame whose columns the reader lost track of: each may hold anything it held."""
    everything = reader.guess(reason, union([table, value]) if value is not None else table)
    return Table(tuple((n, everything) for n in table.names()), everything, table.kind)


def renamed_by_position(reader: "FunctionReader", table: Table, names: list[Any] | None) -> Table:
    """``df.columns = [...]`` / Arrow's ``rename_columns([...])``: new names by position."""
    if names is None or table.extra is not None or len(names) != len(table.cols):
        return table_guess(reader, table, "columns are renamed by a list the reader cannot line up")
    return Table(tuple((n, v) for n, (_, v) in zip(names, table.cols)), None, table.kind, table.index)


# -- methods --------------------------------------------------------------------------


def method(reader: "FunctionReader", receiver: Value, name: str, args: list[Value],
           kwargs: dict[str, Value]) -> tuple[Value, Value | None]:
    """``receiver.name(*args, **kwargs)``: the result and, for a method that changes its receiver
    in place (``insert``, ``inplace=True``, a list's ``append``), the changed receiver."""
    if isinstance(receiver, Table):
        return _table_method(reader, receiver, name, args, kwargs)
    if isinstance(receiver, Group):
        return _group_method(reader, receiver, name, args, kwargs), None
    if isinstance(receiver, Seq):
        if name in ("append", "add"):
            return Const(None), Seq(None, union([element(reader, receiver)] + args))
        if name in ("extend", "update"):
            return Const(None), Seq(None, union([element(reader, receiver)] + [element(reader, a) for a in args]))
        if name in ("insert",) and len(args) == 2:
            return Const(None), Seq(None, union([element(reader, receiver), args[1]]))
        if name in ("pop",):
            return element(reader, receiver), None
        if name in ("copy",):
            return receiver, None
        return derive([receiver] + args), None
    if isinstance(receiver, Instance):
        found = receiver.attrs.get(name)
        if isinstance(found, Func):
            return reader.call(found, args, kwargs), None
        return reader.call(Obj(f"?self.{name}"), args, kwargs), None
    if isinstance(receiver, Func):
        return reader.call(receiver, args, kwargs), None
    if isinstance(receiver, Iter):
        return derive([receiver] + args), None
    if isinstance(receiver, Const):
        if name == "format" or name == "join":
            everything = list(args) + list(kwargs.values())
            return (derive(everything) if any(taint(a).flows for a in everything) else Const(None)), None
        if isinstance(receiver.value, dict) and name == "get" and args and isinstance(args[0], Const):
            return Const(receiver.value.get(args[0].value)), None
        everything = list(args) + list(kwargs.values())
        return (derive(everything) if any(taint(a).flows for a in everything) else Const(None)), None
    if isinstance(receiver, Taint):
        return _column_method(reader, receiver, name, args, kwargs), None
    return reader.call(Obj(f"?method:{name}"), [receiver] + args, kwargs), None


def _column_method(reader: "FunctionReader", col: Taint, name: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
    everything = list(args) + list(kwargs.values())
    if name in ("apply", "map", "transform", "agg", "aggregate", "pipe") and args and isinstance(args[0], Func):
        result = reader.call(args[0], [Taint(col.flows, col.guess, False)] + args[1:], {})
        out = derive([result] + everything[1:])
        return Taint(out.raised(AGGREGATE).flows if name in ("agg", "aggregate") else out.flows, out.guess, col.vector)
    if name in REDUCTIONS:
        return Taint(derive([col] + everything, AGGREGATE).flows, col.guess, False)
    if name in ("copy", "rename", "to_numpy", "tolist", "to_list", "to_pylist", "reset_index", "to_pandas",
                "combine_chunks", "to_frame", "head", "tail", "sort_values", "dropna", "drop_duplicates", "sample",
                "as_py", "cast", "astype"):
        return Taint(col.flows, col.guess or any(taint(a).guess for a in everything), col.vector)
    if name in ("filter", "where") and args and isinstance(args[0], Taint) and name == "filter":
        reader.filters.update(i for i, _ in args[0].flows)
        return col
    out = derive([col] + everything)
    return Taint(out.flows, out.guess, col.vector or any(taint(a).vector for a in everything))


def _table_method(reader: "FunctionReader", table: Table, name: str, args: list[Value],  # noqa: C901 - one per method
                  kwargs: dict[str, Value]) -> tuple[Value, Value | None]:
    inplace = isinstance(kwargs.get("inplace"), Const) and kwargs["inplace"].value is True  # type: ignore[union-attr]
    result: Value
    if name in ("asDict", "to_dict", "to_pydict", "_asdict"):
        orient = args[0] if args else kwargs.get("orient")
        if isinstance(orient, Const) and orient.value == "records":
            return Seq(None, Table(table.cols, table.extra, "dict")), None
        return Table(table.cols, table.extra, "dict", table.index), None
    if name in ("to_pylist", "to_records"):
        return Seq(None, Table(table.cols, table.extra, "dict")), None
    if name in ("iterrows",):
        return Iter(Seq.of([Const(None), Table(table.cols, table.extra, "row")])), None
    if name in ("itertuples", "iterrows", "to_batches"):
        return Iter(Table(table.cols, table.extra, "row" if name == "itertuples" else table.kind)), None
    if name in ("items", "iteritems") and table.kind in ("dict", "frame"):
        return Iter(Seq.of([Obj("?label"), union([v for _, v in table.cols] + [table.extra])])), None
    if name == "keys":
        return (Const(tuple(table.names())) if table.extra is None else Obj("?labels")), None
    if name == "values" and table.kind == "dict":
        return Seq(None, union([v for _, v in table.cols] + [table.extra])), None
    if name in ("get", "column", "pop", "field") and args:
        key = args[0]
        if isinstance(key, Const) and isinstance(key.value, int) and table.kind in ("batch",):
            result = positional(reader, table, key.value)
        elif isinstance(key, Const):
            result = column(reader, table, key.value)
            if table.column(key.value) is None and name == "get" and table.kind == "dict" and table.extra is None:
                result = args[1] if len(args) > 1 else Const(None)
        else:
            result = reader.guess("a column is chosen at run time", table)
        return result, (table.drop([key.value]) if name == "pop" and isinstance(key, Const) else None)
    if name in ROWS:
        if name == "query" and args:
            reader.filters.update(i for i, _ in taint(table).flows)  # the condition is text: any column
        if name == "dropna":
            subset = _names(kwargs.get("subset", Const(None))) or []
            for n in subset:
                reader.filters.update(i for i, _ in taint(table.column(n)).flows)
        result = table
        return (Const(None), result) if inplace else (result, None)
    if name in ("filter",) and table.kind == "batch" and args:
        reader.filters.update(i for i, _ in taint(args[0]).flows)
        return table, None
    if name == "filter":  # pandas: columns by name
        names = _names(kwargs.get("items", args[0] if args else Const(None)))
        if names is not None:
            return table.select([n for n in names if table.column(n) is not None], lambda n: Const(None)), None
        return table_guess(reader, table, "columns are picked by a pattern"), None
    if name in ("select", "reindex_columns") and args:
        names = _names(args[0])
        if names is not None and all(isinstance(n, str) for n in names):
            return table.select(names, lambda n: _missing(reader, table, n)), None
        return reader.guess("columns are picked by position or at run time", table), None
    if name in VALUES:
        extra = list(args) + list(kwargs.values())
        result = table.each(lambda v: derive([v] + extra) if v is not None else v)
        if name in ("applymap", "map", "transform") and args and isinstance(args[0], Func):
            result = table.each(lambda v: derive([reader.call(args[0], [v], {})]) if v is not None else v)
        return (Const(None), result) if inplace else (result, None)
    if name == "assign":
        out = table
        for key, value in kwargs.items():
            if key == "**":
                return table_guess(reader, table, "assign() with keyword names chosen at run time", value), None
            if isinstance(value, Func):
                value = reader.call(value, [out], {})
            out = out.with_column(key, value)
        return out, None
    if name in ("drop", "drop_columns", "remove_column"):
        names = _names(kwargs.get("columns", args[0] if args else Const(None)))
        if names is None and args and isinstance(args[0], Const) and isinstance(args[0].value, str):
            names = [args[0].value]
        axis = kwargs.get("axis", args[1] if len(args) > 1 else Const(0))
        by_label = "columns" in kwargs or name != "drop" or (isinstance(axis, Const) and axis.value in (1, "columns"))
        if name == "remove_column" and args and isinstance(args[0], Const) and isinstance(args[0].value, int):
            i = args[0].value
            return Table(table.cols[:i] + table.cols[i + 1:], table.extra, table.kind), None
        if names is None:
            return table_guess(reader, table, "columns are dropped by a list chosen at run time"), None
        if not by_label:  # rows dropped by label
            return (Const(None), table) if inplace else (table, None)
        result = table.drop(names)
        return (Const(None), result) if inplace else (result, None)
    if name in ("rename", "rename_columns", "add_prefix", "add_suffix", "set_axis"):
        if name in ("rename_columns", "set_axis") and args:
            return renamed_by_position(reader, table, _names(args[0])), None
        mapping = kwargs.get("columns", args[0] if args and name == "rename" else None)
        if isinstance(mapping, Const) and isinstance(mapping.value, dict):
            result = table.rename(mapping.value)
            return (Const(None), result) if inplace else (result, None)
        if name in ("add_prefix", "add_suffix") and args and isinstance(args[0], Const):
            fix = str(args[0].value)
            result = table.rename({n: (fix + str(n) if name == "add_prefix" else str(n) + fix) for n in table.names()})
            return result, None
        return table_guess(reader, table, "columns are renamed by a function"), None
    if name in ("insert", "add_column", "set_column", "append_column"):
        if name == "append_column" and len(args) >= 2:
            label = args[0]
            value = args[1]
        elif len(args) >= 3:
            label, value = args[1], args[2]
        else:
            return table_guess(reader, table, f"{name}() is called in a way the reader does not follow"), None
        label_name = label.value if isinstance(label, Const) else None
        if not isinstance(label_name, (str, int)):
            return table_guess(reader, table, "a column is added under a name chosen at run time", value), None
        if name == "set_column" and isinstance(args[0], Const) and isinstance(args[0].value, int) \
                and table.extra is None and 0 <= args[0].value < len(table.cols):
            i = args[0].value
            cols = list(table.cols)
            cols[i] = (label_name, value)
            return Table(tuple(cols), None, table.kind), None
        new = table.with_column(label_name, value)
        return (Const(None), new) if name == "insert" else (new, None)
    if name in ("set_index",):
        keys = _names(args[0]) if args and _names(args[0]) is not None else \
            [args[0].value] if args and isinstance(args[0], Const) else None
        if keys is None:
            return table_guess(reader, table, "an index is set from columns chosen at run time"), None
        drop = kwargs.get("drop", Const(True))
        index = tuple((k, table.column(k) or EMPTY) for k in keys)
        rest = table.drop(keys) if not (isinstance(drop, Const) and drop.value is False) else table
        result = Table(rest.cols, rest.extra, rest.kind, index)
        return (Const(None), result) if inplace else (result, None)
    if name == "reset_index":
        drop = kwargs.get("drop", Const(False))
        if isinstance(drop, Const) and drop.value is True:
            result = Table(table.cols, table.extra, table.kind)
        else:
            result = Table(table.index + table.cols if table.index else (("index", Const(None)),) + table.cols,
                           table.extra, table.kind)
        return (Const(None), result) if inplace else (result, None)
    if name == "groupby" or name == "group_by":
        keys = _names(args[0]) if args and _names(args[0]) is not None else \
            [args[0].value] if args and isinstance(args[0], Const) else None
        by = kwargs.get("by")
        if keys is None and by is not None:
            keys = _names(by) or ([by.value] if isinstance(by, Const) else None)
        if keys is None:
            return reader.guess("rows are grouped by keys chosen at run time", table), None
        return Group(table, tuple(keys)), None
    if name in ("merge", "join", "merge_asof", "merge_ordered") and args and isinstance(args[0], Table):
        other: Table = args[0]  # type: ignore[assignment]
        on = _names(kwargs.get("on", Const(None))) or ([kwargs["on"].value] if isinstance(kwargs.get("on"), Const)
                                                       and isinstance(kwargs["on"].value, str) else [])
        for key in on:
            reader.filters.update(i for i, _ in taint(table.column(key)).flows)
            reader.filters.update(i for i, _ in taint(other.column(key)).flows)
        return union([table, other]) if isinstance(union([table, other]), Table) else table, None
    if name in ("merge", "join") and args and isinstance(args[0], Taint):  # a Series joined by index
        return Table(table.cols, union([table.extra, reader.guess(f"{name}() adds a column the reader cannot "
                                                                  "name", args[0])]) if table.extra else
                     reader.guess(f"{name}() adds a column the reader cannot name", args[0]), table.kind,
                     table.index), None
    if name == "pipe" and args and isinstance(args[0], Func):
        return reader.call(args[0], [table] + args[1:], kwargs), None
    if name == "apply" and args and isinstance(args[0], Func):
        axis = kwargs.get("axis", args[1] if len(args) > 1 else Const(0))
        if isinstance(axis, Const) and axis.value in (1, "columns"):
            row = Table(tuple((n, Taint(taint(v).flows, taint(v).guess, False)) for n, v in table.cols),
                        table.extra, "row")
            result = reader.call(args[0], [row], {})
            if isinstance(result, (Table, Seq)):
                return reader.guess("apply(axis=1) returns several values per row", result), None
            out = taint(result)
            return Taint(out.flows, out.guess, True), None
        return table.each(lambda v: derive([reader.call(args[0], [v], {})]) if v is not None else v), None
    if name in REDUCTIONS:
        return table.each(lambda v: Taint(derive([v], AGGREGATE).flows, taint(v).guess, False)
                          if v is not None else v), None
    if name in ("to_numpy", "to_arrow", "to_list", "tolist", "to_string", "to_json", "to_csv", "__array__"):
        return reader.guess(f"a frame becomes one value ({name})", table), None
    if name in ("__getitem__",) and args:
        return get_item(reader, table, args[0], None), None
    if name in ("update",) and args and isinstance(args[0], Table):
        out = table
        for n, v in args[0].cols:
            out = out.with_column(n, v)
        return Const(None), out
    if name in ("setdefault",) and len(args) == 2 and isinstance(args[0], Const):
        found = table.column(args[0].value)
        if found is not None:
            return found, None
        return args[1], table.with_column(args[0].value, args[1])
    if name in ("copy",):
        return table, None
    return reader.guess(f"the frame method {name}() is not followed column by column", union([table] + args)), None


def _group_method(reader: "FunctionReader", group: Group, name: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
    keys = tuple((k, group.table.column(k) or EMPTY) for k in group.keys)
    for _, v in keys:
        pass
    data = group.table.drop(group.keys)
    if group.selected is not None:
        data = data.select(group.selected, lambda n: EMPTY)
    as_index = kwargs.get("as_index")
    if name in REDUCTIONS and group.selected is not None and len(group.selected) == 1 \
            and not isinstance(as_index, Const):  # ``groupby(k)["a"].sum()``: one column, a Series
        only = data.column(group.selected[0])
        return Taint(derive([only], AGGREGATE).flows, taint(only).guess, True)
    if name in REDUCTIONS and not args and name not in ("agg", "aggregate"):
        values = data.each(lambda v: Taint(derive([v], AGGREGATE).flows, taint(v).guess, True) if v is not None else v)
        return _grouped(values, keys, as_index)
    if name in ("agg", "aggregate"):
        spec = args[0] if args else None
        if spec is None and kwargs:  # named aggregation: agg(total=("amount", "sum"))
            cols = []
            for out_name, how in kwargs.items():
                parts = constants(how) if not isinstance(how, Seq) else [
                    i.value if isinstance(i, Const) else None for i in how.items or ()]
                source = parts[0] if parts else None
                cols.append((out_name, Taint(derive([group.table.column(source)], AGGREGATE).flows, False, True)
                             if source is not None and group.table.column(source) is not None
                             else reader.guess("a named aggregation the reader cannot line up", data)))
            return _grouped(Table(tuple(cols), None, "frame"), keys, as_index)
        if isinstance(spec, Const) and isinstance(spec.value, dict):
            cols = [(n, Taint(derive([data.column(n)], AGGREGATE).flows, False, True)) for n in spec.value
                    if data.column(n) is not None]
            return _grouped(Table(tuple(cols), None, "frame"), keys, as_index)
        values = data.each(lambda v: Taint(derive([v], AGGREGATE).flows, taint(v).guess, True) if v is not None else v)
        return _grouped(values, keys, as_index)
    if name in ("apply", "transform") and args and isinstance(args[0], Func):
        result = reader.call(args[0], [group.table], {})
        return reader.guess("a function applied per group returns values the reader does not line up",
                            union([result, Table(keys, None)])) if not isinstance(result, Taint) else \
            Taint(derive([result], AGGREGATE).flows, result.guess, True)
    if name in ("filter",):
        return group.table
    return reader.guess(f"the group method {name}() is not followed column by column", group.table)


def _grouped(values: Table, keys: tuple[tuple[Any, Value], ...], as_index: Value | None) -> Table:
    if isinstance(as_index, Const) and as_index.value is False:
        return Table(keys + values.cols, values.extra, "frame")
    return Table(values.cols, values.extra, "frame", keys)


# -- library calls --------------------------------------------------------------------


def _kind(path: str) -> str:
    return "batch" if path.startswith("pyarrow") else "frame"


def library_call(reader: "FunctionReader", path: str, args: list[Value],  # noqa: C901 - one branch per known call
                 kwargs: dict[str, Value]) -> Value:
    """A call of the library function (or class) ``path`` (a dotted name from the code's imports)."""
    last = path.rsplit(".", 1)[-1]
    everything = list(args) + list(kwargs.values())
    if path.startswith("rowclass:"):  # ``Person = Row("name", "age")``, then ``Person(...)``
        names = path[len("rowclass:"):].split("\0")
        return Table(tuple(zip(names, args)), None, "row")
    if last == "Row" and path.startswith("pyspark"):
        if args and all(isinstance(a, Const) and isinstance(a.value, str) for a in args) and not kwargs:
            return Obj("rowclass:" + "\0".join(str(a.value) for a in args))  # type: ignore[union-attr]
        if kwargs:
            extra = kwargs.pop("**", None)
            return Table(tuple(kwargs.items()), extra, "row")  # type: ignore[arg-type]
        return Seq.of(args)
    if path == "builtins.len" and args and isinstance(args[0], Taint) and not args[0].vector:
        return derive(args[:1])  # the length of one row's value (a string, a list), not a count of rows
    if path in ("builtins.len", "builtins.isinstance", "builtins.print", "builtins.type", "builtins.hasattr",
                "builtins.id", "builtins.callable", "builtins.range", "builtins.issubclass"):
        if path == "builtins.range":
            return Iter(Const(None))
        return Const(None)
    if path in ("builtins.list", "builtins.tuple", "builtins.set", "builtins.frozenset", "builtins.sorted",
                "builtins.reversed", "builtins.iter"):
        if not args:
            return Seq.of([])
        source = args[0]
        if isinstance(source, Table) and source.kind == "row":
            return Seq.of([v for _, v in source.cols]) if source.extra is None else Seq(None, taint(source))
        if isinstance(source, Seq) and path in ("builtins.list", "builtins.tuple"):
            return source
        if isinstance(source, Const):
            return source
        return Seq(None, element(reader, source))
    if path == "builtins.dict":
        if args and isinstance(args[0], Table):
            return Table(args[0].cols + tuple(kwargs.items()), args[0].extra, "dict")
        if args and isinstance(args[0], (Iter, Seq)):
            return reader.guess("a dict is built from pairs the reader does not line up", args[0])
        return Table(tuple(kwargs.items()), None, "dict")
    if path in ("builtins.zip",):
        return Iter(Seq.of([element(reader, a) for a in args]))
    if path in ("builtins.enumerate",):
        return Iter(Seq.of([Const(None), element(reader, args[0]) if args else EMPTY]))
    if path in ("builtins.map",) and len(args) >= 2:
        return Iter(reader.call(args[0], [element(reader, a) for a in args[1:]], {}))
    if path in ("builtins.filter",) and len(args) >= 2:
        decided = reader.call(args[0], [element(reader, args[1])], {}) if not isinstance(args[0], Const) else EMPTY
        reader.filters.update(i for i, _ in taint(decided).flows)
        return Iter(element(reader, args[1]))
    if path in ("builtins.next",) and args:
        return element(reader, args[0])
    if path in ("builtins.sum", "builtins.min", "builtins.max", "builtins.any", "builtins.all") and args:
        source = args[0] if len(args) == 1 else Seq.of(args)
        part = taint(source)
        return Taint(part.raised(AGGREGATE if part.vector else DERIVED).flows, part.guess, False)
    if path.startswith("pandas") and last == "DataFrame" or path.endswith("DataFrame.from_dict") \
            or path.endswith("DataFrame.from_records"):
        return _frame(reader, args, kwargs)
    if path.startswith("pandas") and last == "Series":
        part = derive(everything) if len(everything) != 1 else taint(everything[0])
        return Taint(part.flows, part.guess, True)
    if path.startswith("pandas") and last == "concat" and args:
        return _concat(reader, args[0], kwargs.get("axis", Const(0)))
    if path.startswith("pandas") and last in ("merge", "merge_asof", "merge_ordered") and len(args) >= 2:
        return method(reader, args[0], last, args[1:], kwargs)[0]
    if path.startswith("pyarrow") and last in ("from_pandas",) and args:
        source = args[0]
        if isinstance(source, Table):
            return Table(source.cols, source.extra, "batch")
        return Taint(taint(source).flows, taint(source).guess, True)
    if path.startswith("pyarrow") and last in ("from_pydict", "table", "record_batch") and args:
        source = as_table(args[0])
        if isinstance(source, Table):
            return Table(source.cols, source.extra, "batch")
        if isinstance(source, (Seq, Const)) and "names" in kwargs:
            return _from_arrays(reader, source, kwargs["names"])
        if isinstance(source, Table) or isinstance(source, Const):
            return source
        return reader.guess("a batch is built from values the reader does not line up", source)
    if path.startswith("pyarrow") and last in ("from_arrays", "from_pylist", "from_batches") and args:
        if last == "from_arrays":
            names = kwargs.get("names", args[1] if len(args) > 1 else None)
            return _from_arrays(reader, args[0], names)
        if last == "from_pylist":
            return Table(element(reader, args[0]).cols, None, "batch") \
                if isinstance(element(reader, args[0]), Table) else reader.guess("rows the reader cannot line up",
                                                                               args[0])
        return union([element(reader, args[0])])
    if path.startswith("pyarrow") and last in ("array", "chunked_array", "scalar"):
        part = taint(args[0]) if args else EMPTY
        return Taint(part.flows, part.guess, True)
    if path.startswith("numpy") and last in REDUCTIONS | {"average", "nansum", "nanmean", "nanmax", "nanmin"}:
        return Taint(derive(everything, AGGREGATE).flows, derive(everything).guess, False)
    if path.startswith("pyarrow.compute") and last in REDUCTIONS | {"min_max", "approximate_median", "tdigest",
                                                                     "count_distinct", "stddev", "variance"}:
        return Taint(derive(everything, AGGREGATE).flows, derive(everything).guess, False)
    if path.startswith(PURE_MODULES) or path.startswith("?class:"):
        if any(isinstance(a, (Table, Group)) for a in everything):
            return reader.guess(f"the whole frame goes to {path}()", union(everything))
        part = derive(everything)
        return Taint(part.flows, part.guess, any(taint(a).vector for a in everything))
    return reader._unknown_call(f"{path.lstrip('?')}()", args, kwargs)


def as_table(value: Value) -> Value:
    """A dict of constants as a table of constant columns (``{"left": [n]}``); other values as they are."""
    if isinstance(value, Const) and isinstance(value.value, dict):
        return Table(tuple((k, Const(None)) for k in value.value), None, "dict")
    return value


def _from_arrays(reader: "FunctionReader", arrays: Value, names: Value | None) -> Value:
    labels = _names(names) if names is not None else None
    items = arrays.items if isinstance(arrays, Seq) else None
    if labels is None or items is None or len(items) != len(labels):
        return reader.guess("a batch is built from arrays the reader cannot line up with names", arrays)
    return Table(tuple(zip(labels, items)), None, "batch")


def _frame(reader: "FunctionReader", args: list[Value], kwargs: dict[str, Value]) -> Value:
    """``pd.DataFrame(data, columns=...)``: from a dict of columns, a frame, rows (dicts,
    tuples, Rows) or a list of values."""
    data = args[0] if args else kwargs.get("data", Const(None))
    columns = _names(kwargs.get("columns", args[2] if len(args) > 2 else Const(None)))
    if isinstance(data, Table):
        table = Table(tuple((n, _vector(_column_of(reader, v))) for n, v in data.cols), data.extra, "frame")
        return table.select(columns, lambda n: Const(None)) if columns is not None else table
    if isinstance(data, Const):
        if isinstance(data.value, dict):
            return Table(tuple((n, Const(None)) for n in data.value), None, "frame")
        if columns is not None:
            return Table(tuple((n, Const(None)) for n in columns), None, "frame")
        return Table((), None, "frame")
    row = element(reader, data) if isinstance(data, (Seq, Iter)) else data
    if isinstance(row, Table):
        table = Table(tuple((n, _vector(v)) for n, v in row.cols), row.extra, "frame")
        return table.select(columns, lambda n: Const(None)) if columns is not None else table
    if isinstance(row, Seq) and row.items is not None and columns is not None and len(columns) == len(row.items):
        return Table(tuple((n, _vector(v)) for n, v in zip(columns, row.items)), None, "frame")
    if isinstance(row, Seq) and row.items is not None and columns is None:  # columns 0, 1, ... by position
        return Table(tuple((i, _vector(v)) for i, v in enumerate(row.items)), None, "frame")
    if isinstance(row, Taint) and columns is not None and len(columns) == 1:
        return Table(((columns[0], _vector(row)),), None, "frame")
    everything = reader.guess("a frame is built from values the reader cannot line up with columns", data)
    if columns is not None:
        return Table(tuple((n, everything) for n in columns), None, "frame")
    return Table((), everything, "frame")


def _column_of(reader: "FunctionReader", value: Value) -> Value:
    """A dict value made a column: a list of values is one column of them."""
    if isinstance(value, Seq):
        return union([value.elem] + list(value.items or ()))
    return value


def _vector(value: Value) -> Value:
    if isinstance(value, Taint):
        return Taint(value.flows, value.guess, True)
    return value


def _concat(reader: "FunctionReader", frames: Value, axis: Value) -> Value:
    parts = list(frames.items) if isinstance(frames, Seq) and frames.items is not None else [element(reader, frames)]
    tables = [p for p in parts if isinstance(p, Table)]
    if len(tables) != len(parts):
        return reader.guess("frames are concatenated that the reader cannot line up", frames)
    if isinstance(axis, Const) and axis.value in (1, "columns"):
        out = tables[0]
        for t in tables[1:]:
            for n, v in t.cols:
                out = out.with_column(n, v)
        return out
    return union(tables)  # type: ignore[arg-type]
