"""A pickled Python function, read without running it: PySpark's ``cloudpickle`` payload as plain data.

PySpark ships a UDF, a pandas function, a UDTF class or an RDD pipeline to its workers as a
``cloudpickle`` payload (the plan's ``PythonFunction.command``). Unpickling it normally would
import modules and build live objects; :func:`load` instead unpickles it *symbolically*: every
global the payload names (``pyspark.cloudpickle._make_function``, ``pandas``...) becomes a
:class:`Ref` that is never imported, every call the payload asks for becomes a :class:`Call`
record, and only plain values (strings, numbers, tuples, lists, dicts, bytes) are built. No code
of the payload, of the user's modules or of any library runs.

A function pickled by value (one defined in ``__main__``, a notebook, a lambda, a closure)
carries its code object's pieces: :func:`functions` finds them as :class:`Function` records
(file, first line, name, constants, closure values, the globals it reads). A function of an
importable module is pickled by reference: a :class:`Ref` naming its module and qualified name.

>>> import pickle
>>> load(pickle.dumps(("x", [1, 2]), protocol=5))
('x', [1, 2])
>>> ref = load(pickle.dumps(len))
>>> ref
Ref('builtins', 'len')
"""
from __future__ import annotations

import io
import pickle
from dataclasses import dataclass, field
from typing import Any

#: Payloads above this size are not read (PySpark broadcasts functions above 1 MiB anyway).
MAX_BYTES = 4 << 20


class Unreadable(ValueError):
    """The payload is not a pickle this reader can walk (the reason is the message)."""


@dataclass(frozen=True)
class Ref:
    """A global the payload names (a module attribute pickled by reference): never imported."""

    module: str
    name: str

    def __repr__(self) -> str:
        return f"Ref({self.module!r}, {self.name!r})"

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.name}"


class Call:
    """A call the payload asks the unpickler to make, kept as a record: ``func(*args)`` and the
    state later set on its result (``__setstate__``, cloudpickle's ``_function_setstate``...)."""

    __slots__ = ("func", "args", "state", "items", "entries")

    def __init__(self, func: Any, args: tuple) -> None:
        self.func = func
        self.args = args
        self.state: Any = None
        self.items: list[Any] = []
        self.entries: dict[Any, Any] = {}

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __call__(self, *args: Any) -> "Call":  # a call of a call's result (``_builtin_type('CodeType')(...)``)
        return Call(self, args)

    # Containers rebuilt by APPENDS / SETITEMS on an object of a class the payload names.
    def append(self, value: Any) -> None:
        self.items.append(value)

    def extend(self, values: Any) -> None:
        self.items.extend(values)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.entries[key] = value

    @property
    def called(self) -> str | None:
        """The dotted name of the global called (``pyspark.cloudpickle.cloudpickle._make_function``)."""
        return self.func.dotted if isinstance(self.func, Ref) else None

    def __repr__(self) -> str:
        return f"Call({self.func!r}, {self.args!r})"


class _Meta(type):
    """The class of the stand-ins :meth:`_Reader.find_class` returns: calling one records a call."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Call:
        ref = cls._ref  # type: ignore[attr-defined]
        if ref.name.endswith("setstate") and len(args) == 2 and isinstance(args[0], Call):
            args[0].state = args[1]  # cloudpickle sets a function's or class's state by a call
        return Call(ref, args)

    def __repr__(cls) -> str:
        return repr(cls._ref)  # type: ignore[attr-defined]


_STAND_INS: dict[tuple[str, str], type] = {}


def _stand_in(module: str, name: str) -> type:
    key = (module, name)
    found = _STAND_INS.get(key)
    if found is None:
        ref = Ref(module, name)

        def new(cls: type, *args: Any) -> Call:  # NEWOBJ: ``cls.__new__(cls, *args)``
            return Call(ref, args)
        if len(_STAND_INS) > 10_000:
            _STAND_INS.clear()
        found = _STAND_INS[key] = _Meta(name if name.isidentifier() else "_", (), {"_ref": ref, "__new__": new})
    return found


class _Reader(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return _stand_in(module, name)

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("a persistent id")


def _plain(value: Any, seen: dict[int, Any] | None = None) -> Any:
    """Stand-in classes left as values (a global used as a value, not called) become :class:`Ref`."""
    if isinstance(value, _Meta):
        return value._ref  # type: ignore[attr-defined]
    seen = {} if seen is None else seen
    key = id(value)
    if key in seen:
        return seen[key]
    if isinstance(value, tuple):
        seen[key] = value
        out: Any = tuple(_plain(v, seen) for v in value)
        seen[key] = out
        return out
    if isinstance(value, list):
        seen[key] = value
        value[:] = [_plain(v, seen) for v in value]
        return value
    if isinstance(value, dict):
        seen[key] = value
        for k in list(value):
            value[k] = _plain(value[k], seen)
        return value
    if isinstance(value, Call):
        seen[key] = value
        value.func = _plain(value.func, seen)
        value.args = _plain(value.args, seen)
        value.state = _plain(value.state, seen)
        value.items = _plain(value.items, seen)
        value.entries = _plain(value.entries, seen)
        return value
    return value


def load(data: bytes) -> Any:
    """The payload as plain data, :class:`Ref` and :class:`Call` records; nothing imported or run.

    Raises :class:`Unreadable` when the bytes are not such a pickle."""
    if len(data) > MAX_BYTES:
        raise Unreadable(f"the pickled function is {len(data)} bytes (over {MAX_BYTES})")
    try:
        return _plain(_Reader(io.BytesIO(data)).load())
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            MemoryError, RecursionError, UnicodeDecodeError) as exc:
        raise Unreadable(f"not a pickle this reader walks ({type(exc).__name__}: {exc})") from None


@dataclass(frozen=True)
class Code:
    """The pieces of a code object a pickle carries (whatever Python pickled it)."""

    filename: str
    name: str
    qualname: str
    firstlineno: int
    argcount: int
    varnames: tuple[str, ...]
    names: tuple[str, ...]
    consts: tuple[Any, ...]
    freevars: tuple[str, ...]

    @property
    def strings(self) -> frozenset[str]:
        """Every string constant of this code and of the code nested in it (comprehensions, lambdas)."""
        out: set[str] = set()
        for c in self.consts:
            if isinstance(c, str):
                out.add(c)
            elif isinstance(c, Code):
                out |= c.strings
            elif isinstance(c, tuple):
                out |= {s for s in c if isinstance(s, str)}
        return frozenset(out)

    @property
    def attributes(self) -> frozenset[str]:
        """Every global and attribute name this code and the code nested in it use."""
        out = set(self.names)
        for c in self.consts:
            if isinstance(c, Code):
                out |= c.attributes
        return frozenset(out)

    @property
    def where(self) -> str:
        return f"{self.filename}:{self.firstlineno}"


#: Positions of the fields in ``CodeType(...)``'s arguments, by how many there are: Python 3.11 and
#: newer pickle 18 (with the qualified name), 3.8 to 3.10 sixteen.
_CODE_LAYOUTS = {
    18: dict(argcount=0, consts=7, names=8, varnames=9, filename=10, name=11, qualname=12, firstlineno=13,
             freevars=16),
    16: dict(argcount=0, consts=7, names=8, varnames=9, filename=10, name=11, qualname=None, firstlineno=12,
             freevars=14),
}


def code_of(value: Any) -> Code | None:
    """The :class:`Code` a ``CodeType(...)`` call record stands for, else None."""
    if not (isinstance(value, Call) and isinstance(value.func, Call) and value.func.args == ("CodeType",)):
        return None
    args = value.args
    layout = _CODE_LAYOUTS.get(len(args))
    if layout is None:
        return None
    try:
        consts = tuple(code_of(c) or c for c in args[layout["consts"]])
        qualname = args[layout["qualname"]] if layout["qualname"] is not None else args[layout["name"]]
        return Code(str(args[layout["filename"]]), str(args[layout["name"]]), str(qualname),
                    int(args[layout["firstlineno"]]), int(args[layout["argcount"]]),
                    tuple(args[layout["varnames"]]), tuple(args[layout["names"]]), consts,
                    tuple(args[layout["freevars"]]))
    except (TypeError, ValueError, IndexError):
        return None


@dataclass
class Function:
    """A function pickled by value: its code, the values of its closure cells (by free variable
    name; a cell cloudpickle left empty is absent), its defaults and the globals it reads."""

    code: Code
    closure: dict[str, Any] = field(default_factory=dict)
    globals: dict[str, Any] = field(default_factory=dict)
    defaults: tuple[Any, ...] = ()
    module: str | None = None

    @property
    def label(self) -> str:
        """How a person names it: ``domains (job.py:12)``."""
        return f"{self.code.qualname} ({self.code.filename.rsplit('/', 1)[-1]}:{self.code.firstlineno})"


_MAKE_FUNCTION = "_make_function"
_MAKE_CELL = "_make_cell"


def function_of(value: Any) -> Function | None:
    """The :class:`Function` a cloudpickle ``_make_function(...)`` record stands for, else None."""
    if not (isinstance(value, Call) and isinstance(value.func, Ref) and value.func.name == _MAKE_FUNCTION):
        return None
    code = code_of(value.args[0]) if value.args else None
    if code is None:
        return None
    base_globals = value.args[1] if len(value.args) > 1 and isinstance(value.args[1], dict) else {}
    fn = Function(code, module=base_globals.get("__name__") if isinstance(base_globals.get("__name__"), str) else None)
    state = value.state
    slots: Any = state[1] if isinstance(state, tuple) and len(state) == 2 else None
    if isinstance(slots, dict):
        cells = slots.get("__closure__") or ()
        for name, cell in zip(code.freevars, cells if isinstance(cells, tuple) else ()):
            if isinstance(cell, Call) and isinstance(cell.func, Ref) and cell.func.name == _MAKE_CELL and cell.args:
                fn.closure[name] = cell.args[0]
        found = slots.get("__globals__")
        if isinstance(found, dict):
            fn.globals = found
        defaults = slots.get("__defaults__")
        if isinstance(defaults, tuple):
            fn.defaults = defaults
        if isinstance(slots.get("__module__"), str):
            fn.module = slots["__module__"]
    return fn


@dataclass
class Class:
    """A class pickled by value (a Python UDTF): its name and its methods."""

    name: str
    methods: dict[str, Function]
    module: str | None = None


def class_of(value: Any) -> Class | None:
    """The :class:`Class` a cloudpickle ``_make_skeleton_class(...)`` record stands for, else None."""
    if not (isinstance(value, Call) and isinstance(value.func, Ref) and value.func.name == "_make_skeleton_class"):
        return None
    name = value.args[1] if len(value.args) > 1 and isinstance(value.args[1], str) else "?"
    state = value.state
    attrs: Any = state[0] if isinstance(state, tuple) and state else None
    methods: dict[str, Function] = {}
    module = None
    if isinstance(attrs, dict):
        module = attrs.get("__module__") if isinstance(attrs.get("__module__"), str) else None
        for key, v in attrs.items():
            if isinstance(v, Call) and isinstance(v.func, Ref) and v.func.name in ("staticmethod", "classmethod") \
                    and v.args:
                v = v.args[0]
            fn = function_of(v)
            if fn is not None:
                methods[str(key)] = fn
    return Class(name, methods, module)
