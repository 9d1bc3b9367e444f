"""One function of a plan read: each output's input columns, from the pickled command alone.

:func:`read` takes a ``PythonFunction.command`` (the bytes PySpark ships to its workers) and the
:class:`Shape` the plan gives it (the kind of function, its input column names, its output
names), finds the function's source (:mod:`~lineage_listener.pycode.source`), reads it
(:mod:`~lineage_listener.pycode.interp`) and says, per output, which inputs flow into it and
how. What cannot be read falls back to every input, marked as a guess, with the reason
(docs/reference/semantics.md, "Python code"). A reading is kept per distinct command and shape.

>>> import pickle
>>> read(pickle.dumps(("not", "a function")), Shape("scalar", ("a", "b"))).status
'fallback'
"""
from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lineage_listener.pycode import pickled, source
from lineage_listener.pycode.interp import FunctionReader, Module, Unreadable, method_of
from lineage_listener.pycode.values import (AGGREGATE, Const, Func, Instance, Iter, Obj, Seq, Table, Taint, Value,
                                            derive, taint, union)
from lineage_listener.pycode import frames

#: Kinds of functions, by what PySpark calls them with (``PythonEvalType``).
SCALAR, SCALAR_ITER, AGGREGATE_KIND, AGGREGATE_ITER, MAP, GROUPED, GROUPED_ITER, COGROUPED, UDTF, RDD = (
    "scalar", "scalar_iter", "aggregate", "aggregate_iter", "map", "grouped", "grouped_iter", "cogrouped", "udtf",
    "rdd")

#: ``PythonEvalType`` -> kind (PySpark 3.5 and 4.x).
EVAL_TYPES: dict[int, str] = {
    100: SCALAR, 101: SCALAR, 200: SCALAR, 250: SCALAR,
    204: SCALAR_ITER, 251: SCALAR_ITER,
    202: AGGREGATE_KIND, 203: AGGREGATE_KIND, 252: AGGREGATE_KIND, 253: AGGREGATE_KIND,
    217: AGGREGATE_ITER, 254: AGGREGATE_ITER,
    205: MAP, 207: MAP,
    201: GROUPED, 209: GROUPED, 215: GROUPED_ITER, 216: GROUPED_ITER,
    206: COGROUPED, 210: COGROUPED,
    300: UDTF, 301: UDTF, 302: UDTF,
}
#: Kinds whose values are pandas or Arrow columns (a reduction over them is ``aggregate``).
_VECTOR_KINDS = frozenset({MAP, GROUPED, GROUPED_ITER, COGROUPED, AGGREGATE_KIND, AGGREGATE_ITER})
#: Kinds whose result is reduced over the rows it receives.
AGGREGATES = frozenset({AGGREGATE_KIND, AGGREGATE_ITER})
#: Eval types passing Arrow batches rather than pandas frames.
ARROW_EVAL_TYPES = frozenset({207, 209, 210, 215, 250, 251, 252, 253, 254})


@dataclass(frozen=True)
class Shape:
    """What the plan says of a function: its ``kind``, its input columns (flat, in order) and its
    output names (struct fields, a schema's columns; empty: one value). ``frames``: for grouped
    and cogrouped functions, ``(keys, columns)`` per frame, in the order of ``inputs``."""

    kind: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...] = ()
    frames: tuple[tuple[int, int], ...] = ()
    arrow: bool = False
    #: An RDD's elements are single values (lines of a text file), not rows of named columns.
    plain: bool = False

    @property
    def width(self) -> int:
        return max(len(self.outputs), 1)


@dataclass(frozen=True)
class Output:
    """One output's inputs: ``(input index, transform)``; ``guess`` when they may over-state it."""

    flows: frozenset[tuple[int, str]]
    guess: bool = False


@dataclass(frozen=True)
class Reading:
    """A function read: its name as a person knows it, each output's inputs, the inputs deciding
    which rows come out (``filters``), why any of it is a guess, and how it went: ``exact``,
    ``narrowed`` (read, some outputs a conservative guess) or ``fallback`` (not read)."""

    label: str
    outputs: tuple[Output, ...]
    filters: frozenset[int] = frozenset()
    reasons: tuple[str, ...] = ()
    status: str = "exact"

    def note(self) -> str | None:
        """The one line that says why this reading is (partly) a guess, or None."""
        if self.status == "exact":
            return None
        why = "; ".join(self.reasons) or "it could not be read"
        return f"Python function {self.label}: {'not read' if self.status == 'fallback' else 'partly a guess'}: {why}"


def fallback(shape: Shape, reason: str, label: str = "?") -> Reading:
    """Every output from every input, marked as a guess (the function could not be read)."""
    every = frozenset((i, "derived") for i in range(len(shape.inputs)))
    out = Output(every, True)
    return Reading(label, tuple(out for _ in range(shape.width)), frozenset(), (reason,), "fallback")


_CACHE: dict[tuple[bytes, Shape], Reading] = {}
_CACHE_MAX = 2048
_lock = threading.Lock()


def read(command: bytes, shape: Shape) -> Reading:
    """The reading of the pickled function ``command`` in ``shape``, once per distinct pair."""
    key = (hashlib.sha1(command).digest(), shape)
    found = _CACHE.get(key)
    if found is not None:
        return found
    try:
        found = _read(command, shape)
    except (pickled.Unreadable, source.NoSource, Unreadable) as exc:
        found = fallback(shape, str(exc), _label(command))
    except (RecursionError, MemoryError):
        found = fallback(shape, "it is too deeply nested to read", _label(command))
    with _lock:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = found
    return found


def _label(command: bytes) -> str:
    try:
        payload = pickled.load(command)
    except pickled.Unreadable:
        return "?"
    head = payload[0] if isinstance(payload, tuple) and payload else payload
    fn = pickled.function_of(head)
    if fn is not None:
        return fn.label
    cls = pickled.class_of(head)
    if cls is not None:
        return cls.name
    return head.dotted if isinstance(head, pickled.Ref) else "?"


# -- from the pickle to values the reader follows ---------------------------------------


class _Context:
    """Turns pickled values (closure cells, globals) into reader values, finding helpers' source."""

    def __init__(self, reader: FunctionReader) -> None:
        self.reader = reader
        self.modules: dict[int, Module] = {}

    def module(self, tree: ast.Module) -> Module:
        found = self.modules.get(id(tree))
        if found is None:
            found = self.modules[id(tree)] = Module(tree)
        return found

    def outer(self, fn: pickled.Function) -> Callable[[str], Value | None]:
        def lookup(name: str) -> Value | None:
            if name in fn.closure:
                return self.value(fn.closure[name])
            if name in fn.globals:
                return self.value(fn.globals[name])
            return None
        return lookup

    def functions(self, fn: pickled.Function) -> list[Func]:
        """``fn`` as reader functions (two when two lambdas on its line fit it)."""
        found = source.find(fn.code)
        return [self.reader.function(s.node, self.module(s.module), self.outer(fn), fn.label) for s in found]

    def value(self, raw: Any) -> Value:  # noqa: C901 - one branch per kind of pickled value
        if isinstance(raw, (str, int, float, bool, bytes, type(None))):
            return Const(raw)
        if isinstance(raw, (list, tuple, set, frozenset)):
            items = [self.value(v) for v in raw]
            if all(isinstance(i, Const) for i in items):
                return Const(type(raw)(i.value for i in items) if not isinstance(raw, list)  # type: ignore[union-attr]
                             else [i.value for i in items])  # type: ignore[union-attr]
            return Seq.of(items)
        if isinstance(raw, dict):
            items = {k: self.value(v) for k, v in raw.items()}
            if all(isinstance(v, Const) for v in items.values()):
                return Const({k: v.value for k, v in items.items()})  # type: ignore[union-attr]
            return Table(tuple(items.items()), None, "dict")
        if isinstance(raw, pickled.Ref):
            return Obj(raw.dotted)
        fn = pickled.function_of(raw)
        if fn is not None:
            try:
                funcs = self.functions(fn)
            except source.NoSource as exc:
                self.reader.guess(f"the helper {fn.label} is not read ({exc})")
                return Obj(f"?helper:{fn.code.name}")
            return funcs[0]
        if isinstance(raw, pickled.Call):
            called = raw.called or ""
            if called.endswith("subimport") and raw.args and isinstance(raw.args[0], str):
                return Obj(raw.args[0])
            if called == "builtins.getattr" and len(raw.args) == 2 and isinstance(raw.args[1], str):
                base = self.value(raw.args[0])
                return Obj(f"{base.path}.{raw.args[1]}") if isinstance(base, Obj) else Obj("?")
            fields = raw.args[2] if called == "copyreg._reconstructor" and len(raw.args) == 3 \
                and raw.args[0] == pickled.Ref("pyspark.sql.types", "Row") else raw.args \
                if called == "pyspark.sql.types.Row" else None
            if isinstance(fields, tuple) and fields and all(isinstance(a, str) for a in fields):
                return Obj("rowclass:" + "\0".join(fields))  # ``Person = Row("name", "age")``
            if called.endswith("_make_skeleton_class") or called.endswith("_make_skeleton_enum"):
                cls = pickled.class_of(raw)
                return Obj(f"?class:{cls.name if cls else '?'}")
        return Obj("?")


def _main(payload: Any, shape: Shape) -> Any:
    """The user's function (or UDTF class) in a command: ``(func, returnType)``, an RDD's
    ``(func, profiler, deserializer, serializer)``, or the function alone."""
    if isinstance(payload, tuple) and payload:
        return payload[0]
    return payload


def _by_reference(ref: pickled.Ref) -> tuple[ast.AST, ast.Module] | None:
    """The definition of a function pickled by reference, found in its module's file without
    importing it (None: a library or built-in function, or not found on this path)."""
    parts = ref.module.split(".")
    try:
        spec = importlib.machinery.PathFinder.find_spec(parts[0])
        for i in range(1, len(parts)):
            if spec is None or not spec.submodule_search_locations:
                return None
            spec = importlib.machinery.PathFinder.find_spec(".".join(parts[: i + 1]), spec.submodule_search_locations)
    except (ImportError, ValueError, OSError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    tree = source.parsed(spec.origin)
    body: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for name in ref.name.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == name), None)
        if node is None:
            return None
        body = node.body  # type: ignore[attr-defined]
    return (node, tree) if node is not None else None


def _read(command: bytes, shape: Shape) -> Reading:
    payload = pickled.load(command)
    reader = FunctionReader(len(shape.inputs))
    context = _Context(reader)
    main = _main(payload, shape)
    if shape.kind == RDD:
        return _read_rdd(context, main, shape)
    if shape.kind == UDTF:
        cls = pickled.class_of(main)
        if cls is None:
            raise Unreadable("the UDTF is not a class pickled by value")
        return _read_udtf(context, cls, shape)
    funcs, label = _resolve(context, main)
    if not funcs:
        if _library(main):  # a library function: computed from every argument
            every = derive([Taint.column(i) for i in range(len(shape.inputs))])
            return _finish(reader, shape, label, [every], ())
        raise Unreadable("it is not a function this reader recognises")
    results = [_call(reader, f, shape) for f in funcs]
    if len(funcs) > 1:
        reader.guess(f"{len(funcs)} lambdas on its line fit it: read as either")
    return _finish(reader, shape, label, results, ())


def _library(main: Any) -> bool:
    """A function pickled by name that is no user's (``str.upper``, ``math.sqrt``) or not found."""
    if isinstance(main, pickled.Ref):
        return True
    return isinstance(main, pickled.Call) and main.called == "builtins.getattr" and bool(main.args) \
        and isinstance(main.args[0], pickled.Ref)


def _resolve(context: _Context, main: Any) -> tuple[list[Func], str]:
    fn = pickled.function_of(main)
    if fn is not None:
        return context.functions(fn), fn.label
    if isinstance(main, pickled.Ref):
        found = _by_reference(main)
        if found is None:
            return [], main.dotted
        node, tree = found
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise Unreadable(f"{main.dotted} is not a function")
        return [context.reader.function(node, context.module(tree), None, main.dotted)], main.dotted
    if _library(main):
        return [], "a library function"
    raise Unreadable("it is not a function pickled by value or by name")


def _arity(fn: Func) -> int:
    args = fn.node.args
    return len(args.posonlyargs) + len(args.args)


def _call(reader: FunctionReader, fn: Func, shape: Shape) -> Value:
    """Call ``fn`` with the inputs its kind gives it."""
    vector = shape.kind in _VECTOR_KINDS or shape.kind == SCALAR and shape.arrow
    columns = [Taint(frozenset({(i, "copy")}), False, vector) for i in range(len(shape.inputs))]
    kind_of_table = "batch" if shape.arrow else "frame"
    if shape.kind in (SCALAR, AGGREGATE_KIND):
        return reader.call(fn, columns)
    if shape.kind in (SCALAR_ITER, AGGREGATE_ITER):
        batch: Value = columns[0] if len(columns) == 1 else Seq.of(columns)
        return reader.call(fn, [Iter(batch)])
    if shape.kind == MAP:
        return reader.call(fn, [Iter(Table.of(shape.inputs, 0, kind_of_table))])
    if shape.kind in (GROUPED, GROUPED_ITER, COGROUPED):
        groups = shape.frames or ((0, len(shape.inputs)),)
        tables: list[Value] = []
        keys: list[Value] = []
        offset = 0
        for nkeys, ncols in groups:
            keys += [Taint(frozenset({(offset + k, "copy")}), False, False) for k in range(nkeys)]
            offset += nkeys
            table = Table.of(shape.inputs[offset: offset + ncols], offset, kind_of_table)
            tables.append(Iter(table) if shape.kind == GROUPED_ITER else table)
            offset += ncols
        first_keys = keys[: groups[0][0]]
        args = tables if _arity(fn) <= len(tables) else [Seq.of(first_keys)] + tables
        return reader.call(fn, args)
    raise Unreadable(f"functions of kind {shape.kind} are not read")


def _outputs(reader: FunctionReader, value: Value, shape: Shape) -> list[Taint]:
    """Each output's value, from what the function gives back: by name from a frame, dict or
    Row, by position from a tuple; an iterator's items for map and iterator functions."""
    if shape.kind in (MAP, SCALAR_ITER, GROUPED_ITER) and isinstance(value, Iter):
        value = value.elem
    if not shape.outputs:
        return [taint(value)]
    if isinstance(value, Iter):
        value = value.elem
    out: list[Taint] = []
    if isinstance(value, Table) and value.extra is None and value.cols \
            and all(isinstance(n, int) for n in value.names()):  # a frame of unnamed columns: by position
        value = Seq.of([v for _, v in value.cols])
    if isinstance(value, Table):
        by_name = value.kind != "row" or all(value.column(n) is not None for n in shape.outputs)
        for i, name in enumerate(shape.outputs):
            found = value.column(name) if by_name else frames.positional(reader, value, i)
            out.append(taint(found) if found is not None else
                       reader.guess(f"output {name!r} is not among the columns the function makes", value))
        return out
    if isinstance(value, Const) and isinstance(value.value, (tuple, list)) \
            and len(value.value) == len(shape.outputs):  # constants only
        return [taint(None) for _ in shape.outputs]
    if isinstance(value, Seq) and value.items is not None:
        if len(value.items) != len(shape.outputs):
            return [reader.guess("it gives back a tuple of another width than its output", value)
                    for _ in shape.outputs]
        return [taint(v) for v in value.items]
    if isinstance(value, Seq) and isinstance(value.elem, (Seq, Table)):
        return _outputs(reader, value.elem, shape)
    whole = taint(value)
    if len(shape.outputs) == 1:
        return [whole]
    return [reader.guess("its result is not split field by field", value) for _ in shape.outputs]


def _finish(reader: FunctionReader, shape: Shape, label: str, results: list[Value], extra: tuple[str, ...]) -> Reading:
    per_output: list[list[Taint]] = [_outputs(reader, r, shape) for r in results]
    outs = []
    for i in range(shape.width):
        value = union([p[i] for p in per_output])
        t = taint(value)
        if shape.kind in AGGREGATES:
            t = t.raised(AGGREGATE)
        flows = frozenset((j, tr)
                          for j, tr in t.flows if 0 <= j < len(shape.inputs))
        outs.append(Output(flows, t.guess or len(results) > 1))
    reasons = tuple(reader.reasons) + extra
    guessed = any(o.guess for o in outs)
    status = "narrowed" if guessed or reasons else "exact"
    return Reading(label, tuple(outs), frozenset(i for i in reader.filters if 0 <= i < len(shape.inputs)),
                   reasons if guessed or reasons else (), status)


# -- UDTFs ------------------------------------------------------------------------------


def _read_udtf(context: _Context, cls: pickled.Class, shape: Shape) -> Reading:
    reader = context.reader
    if "eval" not in cls.methods:
        raise Unreadable(f"the UDTF {cls.name} has no eval method pickled with it")
    me = Instance()
    methods: dict[str, Func] = {}
    for name, fn in cls.methods.items():
        funcs = context.functions(fn)
        methods[name] = funcs[0]
        me.attrs[name] = method_of(reader, funcs[0], me)
    args = [Taint(frozenset({(i, "copy")}), False, False) for i in range(len(shape.inputs))]
    yields: list[Value] = []
    if "__init__" in methods:
        init_arity = _arity(methods["__init__"]) - 1
        reader.call(me.attrs["__init__"], [Obj("?analyze_result")] * max(init_arity, 0))
    for _ in range(2):  # what one row's eval leaves in self reaches the next
        yields.append(_elements(reader.call(me.attrs["eval"], args)))
    if "terminate" in methods:
        yields.append(_elements(reader.call(me.attrs["terminate"], [])))
    return _finish(reader, shape, f"{cls.name} ({methods['eval'].label.rsplit('(', 1)[-1].rstrip(')')})",
                   [union(yields)], ())


def _elements(value: Value) -> Value:
    return value.elem if isinstance(value, Iter) else value


# -- RDD pipelines ----------------------------------------------------------------------

#: PySpark's own RDD module (3.5: ``pyspark/rdd.py``; 4.x: ``pyspark/core/rdd.py``).
_PYSPARK_FILES = ("/pyspark/rdd.py", "/pyspark/core/rdd.py", "/pyspark/util.py", "/pyspark/sql/")


def _pyspark(code: pickled.Code) -> bool:
    return code.filename.replace("\\", "/").endswith(_PYSPARK_FILES[:3]) or "/pyspark/sql/" in code.filename


#: PySpark's closures around a user's function, by qualified name: what the stage does with it.
_STAGES = {
    "RDD.map.<locals>.func": "map",
    "RDD.flatMap.<locals>.func": "flatMap",
    "RDD.filter.<locals>.func": "filter",
    "RDD.mapPartitions.<locals>.func": "partitions",
}


def stages(raw: Any) -> list[tuple[str, Any]]:
    """The steps of a pickled RDD pipeline, in order: ``(what, the user's pickled function)``;
    ``convert`` for PySpark's own conversions to the DataFrame's schema, ``unknown`` for a step
    this reader does not know. PySpark's own helpers around a user's function (``keyBy``,
    ``mapValues``) are read as code, like the user's."""
    fn = pickled.function_of(raw)
    if fn is None:
        return [("unknown", raw)]
    q = fn.code.qualname
    if not _pyspark(fn.code):
        return [("indexed", fn)]  # ``mapPartitionsWithIndex(f)``: PySpark calls f(split, iterator)
    if q.endswith("pipeline_func") and "func" in fn.closure and "prev_func" in fn.closure:
        return stages(fn.closure["prev_func"]) + stages(fn.closure["func"])
    if q in _STAGES and "f" in fn.closure:
        user = _unwrapped(fn.closure["f"])
        inner = pickled.function_of(user)
        if _STAGES[q] == "partitions" and inner is not None and _pyspark(inner.code) \
                and inner.code.qualname == "RDD.filter.<locals>.func" and "f" in inner.closure:
            return [("filter", _unwrapped(inner.closure["f"]))]  # ``filter(f)`` is ``mapPartitions`` of it
        return [("convert", None)] if _pyspark_own(user) else [(_STAGES[q], user)]
    if "/pyspark/sql/" in fn.code.filename:
        return [("convert", None)]
    return [("unknown", fn)]


def _pyspark_own(raw: Any) -> bool:
    """Whether a step's function is PySpark's own conversion into a DataFrame's rows (a closure of
    ``pyspark.sql``, or a method of a PySpark type such as ``StructType.toInternal``)."""
    fn = pickled.function_of(raw)
    if fn is not None:
        return "/pyspark/sql/" in fn.code.filename.replace("\\", "/")
    if isinstance(raw, pickled.Call) and isinstance(raw.func, pickled.Call) and raw.func.args == ("MethodType",):
        bound = raw.args[0] if raw.args else None
        return isinstance(bound, pickled.Ref) and bound.module.startswith("pyspark.")
    return isinstance(raw, pickled.Ref) and raw.module.startswith("pyspark.sql")


def _unwrapped(raw: Any) -> Any:
    """The user's function inside PySpark's ``fail_on_stopiteration`` wrapper."""
    fn = pickled.function_of(raw)
    if fn is not None and _pyspark(fn.code) and "fail_on_stopiteration" in fn.code.qualname and "f" in fn.closure:
        return fn.closure["f"]
    return raw


def _read_rdd(context: _Context, main: Any, shape: Shape) -> Reading:
    """An RDD pipeline over the rows of a DataFrame (``df.rdd.map(...)...``), up to PySpark's
    conversion into the new DataFrame's schema: each output column from the row's columns."""
    reader = context.reader
    steps = stages(main)
    value: Value = Iter(Taint(frozenset({(0, "copy")})) if shape.plain and len(shape.inputs) == 1 else
                        Table(tuple((n, Taint(frozenset({(i, "copy")}), False, False))
                                    for i, n in enumerate(shape.inputs)), None, "row"))
    labels: list[str] = []
    for what, raw in steps:
        if what == "convert":
            continue
        if what == "unknown":
            label = pickled.function_of(raw).code.qualname if pickled.function_of(raw) else "?"
            value = Iter(reader.guess(f"the RDD step {label} is not one this reader knows", value))
            continue
        fn = raw if isinstance(raw, pickled.Function) else pickled.function_of(raw)
        if fn is None:
            if isinstance(raw, pickled.Ref):
                labels.append(raw.dotted)
                value = Iter(derive([frames.element(reader, value)])) if what != "filter" else value
                continue
            value = Iter(reader.guess("an RDD step's function is not pickled by value", value))
            continue
        labels.append(fn.label)
        funcs = context.functions(fn)
        results = []
        for f in funcs:
            item = frames.element(reader, value)
            if what == "map":
                results.append(Iter(reader.call(f, [item])))
            elif what == "flatMap":
                results.append(Iter(frames.element(reader, reader.call(f, [item]))))
            elif what == "filter":
                reader.filters.update(i for i, _ in taint(reader.call(f, [item])).flows)
                results.append(value)
            elif what == "partitions":
                results.append(Iter(frames.element(reader, reader.call(f, [value]))))
            else:
                results.append(Iter(frames.element(reader, reader.call(f, [Const(0), value]))))
        if len(funcs) > 1:
            reader.guess(f"{len(funcs)} lambdas on its line fit {fn.label}: read as either")
        value = union(results)
    label = " -> ".join(labels) if labels else "an RDD pipeline"
    element = frames.element(reader, value)
    if isinstance(element, Taint) and len(shape.outputs) > 1:
        element = reader.guess("its rows are single values the reader cannot split into columns", element)
    return _finish(reader, shape, label, [element], ())
