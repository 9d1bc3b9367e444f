"""How a captured query travels through the package, read from the code: the modules its route enters.

A route is followed statically, through every branch: from a method (``Capture._record``, the
capture loop's step for one read query; ``Recorder.record``; ``QueryReader.read``), each call the code
makes, in the order it is written (arguments before the call, an assignment's value before its
target, every arm of an ``if``, ``try`` and ``match``, each loop body once), is resolved to the
package function it runs and followed into it, down to a depth of calls below the method (2: the
method's callees and theirs, the route rather than every leaf helper; printed for 2 and 3 by
default).

What counts as a call into a module: a function or method defined there, a property of a class
defined there, and making an instance of a class whose construction runs code of that module (an
``__init__``, ``__post_init__`` or a dataclass field's ``default_factory``); a ``NamedTuple`` row
or a plain dataclass runs none. A callee is found from the imports, the module's own names,
annotations (parameters, attributes, return types, class fields) and assignments of what a call
returns; a call through a value (a table of handlers, a callback) is not followed, and a function
already on the route's stack is entered but not followed again (recursion).

The route is the sequence of modules entered, in that order, each call into another module than
the one before it starting a new stay. Printed per route:

- stays: the length of that sequence; modules: how many differ;
- returns: stays in a module the route had already left (stays minus modules);
- climbs: returns from a lower layer to a higher one (the layers of ``tests/test_structure.py``:
  from ``store`` back to ``capture``, say);
- the modules entered more than twice, with their count of stays.

    python bench/trips.py [--depths 2,3] [--quiet] [ROUTE ...]
    (ROUTE: module:Class.method or module:function, as ``capture.recording.records:Recorder.record``)

>>> route = ["capture.pipeline", "capture.recording.records", "lineage.query", "capture.recording.records",
...          "store.batch", "capture.recording.records"]
>>> counts(route)
Counts(stays=6, modules=4, returns=2, climbs=2, entered={'capture.recording.records': 3})
"""
from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.test_structure import LAYERS  # noqa: E402 - one list of the layers: the structure test's

PACKAGE = REPO / "lineage_listener"
ROOT = "lineage_listener"
#: The routes printed by default.
ROUTES = ("capture.pipeline:Capture._record", "capture.recording.records:Recorder.record",
          "capture.reading.queryreader:QueryReader.read")


def layer_of(module: str) -> int:
    """The layer of a package module (``capture.recording.records`` -> the ``capture`` layer's index)."""
    top = module.split(".")[0]
    return next(i for i, names in enumerate(LAYERS) if top in names)


class Counts(NamedTuple):
    stays: int
    modules: int
    returns: int
    climbs: int
    entered: dict[str, int]


def counts(route: list[str]) -> Counts:
    """The counts of a route (a sequence of stays, consecutive stays in one module already merged)."""
    left: set[str] = set()
    returns = climbs = 0
    for before, now in zip(route, route[1:]):
        left.add(before)
        if now in left:
            returns += 1
            climbs += layer_of(now) > layer_of(before)
    entered = {m: n for m, n in Counter(route).most_common() if n > 2}
    return Counts(len(route), len(set(route)), returns, climbs, entered)


# -- the package, read ------------------------------------------------------------------

@dataclass
class Klass:
    module: str
    node: ast.ClassDef
    methods: dict[str, ast.FunctionDef] = field(default_factory=dict)
    properties: set[str] = field(default_factory=set)
    attrs: dict[str, ast.expr] = field(default_factory=dict)  # attribute -> its annotation or value
    bases: list[ast.expr] = field(default_factory=list)

    def runs_code_when_made(self) -> bool:
        if {"__init__", "__post_init__", "__new__"} & set(self.methods):
            return True
        return any(isinstance(v, ast.Call) and any(k.arg == "default_factory" for k in v.keywords)
                   for s in self.node.body if isinstance(s, ast.AnnAssign) for v in [s.value])


@dataclass
class Module:
    name: str
    tree: ast.Module
    names: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # local name -> (module, attr)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    classes: dict[str, Klass] = field(default_factory=dict)
    values: dict[str, ast.expr] = field(default_factory=dict)  # module-level name -> its annotation or value


def _read_package() -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = Module(name, ast.parse(path.read_text(encoding="utf-8")))
    for module in modules.values():
        _index(module, modules)
    return modules


def _index(module: Module, modules: dict[str, Module]) -> None:
    for node in ast.walk(module.tree):  # imports anywhere (lazy ones and TYPE_CHECKING ones too)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(ROOT):
            base = node.module[len(ROOT) + 1:] if node.module != ROOT else ""
            for alias in node.names:
                sub = f"{base}.{alias.name}".lstrip(".")
                local = alias.asname or alias.name
                module.names[local] = (sub, None) if sub in modules else (base, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(ROOT + ".") and alias.asname:
                    module.names[alias.asname] = (alias.name[len(ROOT) + 1:], None)
    for node in module.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            module.functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            module.classes[node.name] = _klass(module.name, node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            module.values[node.target.id] = node.annotation
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    module.values[target.id] = node.value


def _klass(module: str, node: ast.ClassDef) -> Klass:
    k = Klass(module, node, bases=list(node.bases))
    for s in node.body:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            k.methods[s.name] = s
            decorators = {ast.unparse(d).split(".")[-1] for d in s.decorator_list}
            if decorators & {"property", "cached_property"}:
                k.properties.add(s.name)
            for n in ast.walk(s):  # self.x: T = ... / self.x = Cls(...)
                if isinstance(n, ast.AnnAssign) and _is_self_attr(n.target):
                    k.attrs.setdefault(n.target.attr, n.annotation)  # type: ignore[union-attr]
                elif isinstance(n, ast.Assign):
                    for t in n.targets:
                        if _is_self_attr(t):
                            k.attrs.setdefault(t.attr, n.value)  # type: ignore[union-attr]
        elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
            k.attrs[s.target.id] = s.annotation
    return k


def _is_self_attr(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


# -- what a name or an expression is ------------------------------------------------------

@dataclass(frozen=True)
class Fn:
    """A function or method of the package (``klass``: its class, for ``self``)."""

    module: str
    node: ast.FunctionDef
    klass: str | None = None


@dataclass(frozen=True)
class Instance:
    module: str
    klass: str


@dataclass(frozen=True)
class ClassRef:
    module: str
    klass: str


@dataclass(frozen=True)
class ModuleRef:
    module: str


class Package:
    def __init__(self) -> None:
        self.modules = _read_package()

    def klass(self, ref: ClassRef | Instance) -> Klass:
        return self.modules[ref.module].classes[ref.klass]

    def mro(self, ref: ClassRef | Instance) -> list[ClassRef]:
        out, todo = [], [ClassRef(ref.module, ref.klass)]
        while todo:
            c = todo.pop(0)
            if c in out:
                continue
            out.append(c)
            for base in self.klass(c).bases:
                b = self.lookup(c.module, base)
                if isinstance(b, ClassRef):
                    todo.append(b)
        return out

    def name(self, module: str, name: str) -> Fn | ClassRef | ModuleRef | None:
        """What a module-level name of ``module`` is (a def, a class, an imported module or name)."""
        m = self.modules.get(module)
        if m is None:
            return None
        if name in m.functions:
            return Fn(module, m.functions[name])
        if name in m.classes:
            return ClassRef(module, name)
        if name in m.names:
            target, attr = m.names[name]
            return ModuleRef(target) if attr is None else self.name(target, attr)
        return None

    def lookup(self, module: str, node: ast.expr, local: dict[str, object] | None = None):
        """What expression ``node`` (a name, an attribute, a call) in ``module`` refers to or makes."""
        local = local or {}
        if isinstance(node, ast.Name):
            if node.id in local:
                return local[node.id]
            found = self.name(module, node.id)
            if found is None and node.id in self.modules[module].values:
                return self.type_of(module, self.modules[module].values[node.id])
            return found
        if isinstance(node, ast.Attribute):
            base = self.lookup(module, node.value, local)
            return self.member(base, node.attr)
        if isinstance(node, ast.Call):
            return self.made_by(self.lookup(module, node.func, local))
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
            try:
                return self.lookup(module, ast.parse(node.value, mode="eval").body, local)
            except SyntaxError:
                return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | None
            return self.lookup(module, node.left, local) or self.lookup(module, node.right, local)
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) in ("Optional", "typing.Optional"):
            return self.lookup(module, node.slice, local)
        return None

    def member(self, base, attr: str):
        if isinstance(base, _Property):  # what the property returns
            base = self.made_by(base.fn)
        if isinstance(base, ModuleRef):
            found = self.name(base.module, attr)
            if found is None and base.module in self.modules and attr in self.modules[base.module].values:
                return self.type_of(base.module, self.modules[base.module].values[attr])
            return found
        if isinstance(base, (Instance, ClassRef)):
            for c in self.mro(base):
                k = self.klass(c)
                if attr in k.methods:
                    fn = Fn(c.module, k.methods[attr], c.klass)
                    if attr in k.properties and isinstance(base, Instance):
                        return _Property(fn)
                    return fn
                if attr in k.attrs and isinstance(base, Instance):
                    return self.type_of(c.module, k.attrs[attr])
        return None

    def type_of(self, module: str, annotation_or_value: ast.expr):
        """The instance an annotation or an assigned value describes (None: not one of the package's)."""
        found = self.lookup(module, annotation_or_value)
        if isinstance(annotation_or_value, ast.Call):
            return found if isinstance(found, Instance) else None
        return Instance(found.module, found.klass) if isinstance(found, ClassRef) else \
            found if isinstance(found, Instance) else None

    def made_by(self, callee):
        """What calling ``callee`` gives: an instance of a class, or what a function's annotation says."""
        if isinstance(callee, ClassRef):
            return Instance(callee.module, callee.klass)
        if isinstance(callee, Fn) and callee.node.returns is not None:
            return self.type_of(callee.module, callee.node.returns)
        return None

    def returns_tuple(self, callee) -> list[object] | None:
        """``a, b = f()``: the instances ``f``'s ``tuple[A, B]`` annotation names."""
        if not isinstance(callee, Fn) or callee.node.returns is None:
            return None
        ann = callee.node.returns
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            ann = ast.parse(ann.value, mode="eval").body
        if isinstance(ann, ast.Subscript) and ast.unparse(ann.value) == "tuple" \
                and isinstance(ann.slice, ast.Tuple):
            return [self.type_of(callee.module, e) for e in ann.slice.elts]
        return None


@dataclass(frozen=True)
class _Property:
    fn: Fn


# -- the route ----------------------------------------------------------------------------

class Route:
    """The modules a route enters, in order (see the module's docstring)."""

    def __init__(self, package: Package, depth: int) -> None:
        self.package, self.depth = package, depth
        self.stays: list[str] = []
        self._stack: list[ast.FunctionDef] = []

    def enter(self, fn: Fn) -> None:
        if not self.stays or self.stays[-1] != fn.module:
            self.stays.append(fn.module)
        if fn.node in self._stack or len(self._stack) >= self.depth:
            return
        self._stack.append(fn.node)
        try:
            local: dict[str, object] = {}
            if fn.klass is not None:
                local["self"] = Instance(fn.module, fn.klass)
                local["cls"] = ClassRef(fn.module, fn.klass)
            args = fn.node.args
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if a.annotation is not None and a.arg not in local:
                    local[a.arg] = self.package.type_of(fn.module, a.annotation)
            for nested in fn.node.body:  # nested defs: followed where they are called
                if isinstance(nested, ast.FunctionDef):
                    local[nested.name] = Fn(fn.module, nested, fn.klass)
            _Walker(self, fn.module, local).walk_body(fn.node.body)
        finally:
            self._stack.pop()

    def call(self, module: str, callee) -> None:
        if isinstance(callee, _Property):
            self.enter(callee.fn)
        elif isinstance(callee, Fn):
            self.enter(callee)
        elif isinstance(callee, ClassRef):
            k = self.package.klass(callee)
            for c in self.package.mro(callee):
                methods = self.package.klass(c).methods
                for special in ("__new__", "__init__", "__post_init__"):
                    if special in methods:
                        self.enter(Fn(c.module, methods[special], c.klass))
            if k.runs_code_when_made() and not {"__init__", "__post_init__", "__new__"} & set(k.methods):
                self.enter(Fn(callee.module, ast.FunctionDef(name=callee.klass, args=ast.arguments(
                    posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=[],
                    decorator_list=[]), callee.klass))


class _Walker:
    """The calls of one function body, in the order they are written, every branch taken."""

    def __init__(self, route: Route, module: str, local: dict[str, object]) -> None:
        self.route, self.module, self.local = route, module, local

    def walk_body(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.stmt(stmt)

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # a nested def runs where it is called
        if isinstance(s, ast.Assign):
            self.expr(s.value)
            self.bind(s.targets, s.value)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.expr(s.value)
            if isinstance(s.target, ast.Name):
                self.local[s.target.id] = self.route.package.type_of(self.module, s.annotation)
        elif isinstance(s, ast.AugAssign):
            self.expr(s.value)
        elif isinstance(s, (ast.Expr, ast.Return)):
            if s.value is not None:
                self.expr(s.value)
        elif isinstance(s, ast.If):
            self.expr(s.test)
            self.walk_body(s.body)
            self.walk_body(s.orelse)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self.expr(s.iter)
            self.walk_body(s.body)
            self.walk_body(s.orelse)
        elif isinstance(s, ast.While):
            self.expr(s.test)
            self.walk_body(s.body)
            self.walk_body(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                self.expr(item.context_expr)
            self.walk_body(s.body)
        elif isinstance(s, ast.Try):
            self.walk_body(s.body)
            for h in s.handlers:
                if h.type is not None:
                    self.expr(h.type)
                self.walk_body(h.body)
            self.walk_body(s.orelse)
            self.walk_body(s.finalbody)
        elif isinstance(s, ast.Match):
            self.expr(s.subject)
            for case in s.cases:
                self.walk_body(case.body)
        else:
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.expr):
                    self.expr(child)

    def bind(self, targets: list[ast.expr], value: ast.expr) -> None:
        package = self.route.package
        for target in targets:
            if isinstance(target, ast.Name):
                self.local[target.id] = package.lookup(self.module, value, self.local) \
                    if isinstance(value, (ast.Call, ast.Name, ast.Attribute)) else None
                if not isinstance(self.local[target.id], Instance):
                    self.local[target.id] = None
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Call):
                kinds = package.returns_tuple(package.lookup(self.module, value.func, self.local)) or []
                for i, elt in enumerate(target.elts):
                    if isinstance(elt, ast.Name):
                        self.local[elt.id] = kinds[i] if i < len(kinds) else None

    def expr(self, e: ast.expr) -> None:
        if isinstance(e, ast.Call):
            if isinstance(e.func, ast.Attribute):
                self.expr(e.func.value)
            for a in e.args:
                self.expr(a)
            for k in e.keywords:
                self.expr(k.value)
            self.route.call(self.module, self.route.package.lookup(self.module, e.func, self.local))
        elif isinstance(e, ast.Attribute):
            self.expr(e.value)
            found = self.route.package.lookup(self.module, e, self.local)
            if isinstance(found, _Property):
                self.route.call(self.module, found)
        elif isinstance(e, ast.Lambda):
            return  # runs where it is called
        elif isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for g in e.generators:
                self.expr(g.iter)
                for cond in g.ifs:
                    self.expr(cond)
            for part in ([e.key, e.value] if isinstance(e, ast.DictComp) else [e.elt]):
                self.expr(part)
        elif isinstance(e, ast.NamedExpr):
            self.expr(e.value)
        else:
            for child in ast.iter_child_nodes(e):
                if isinstance(child, ast.expr):
                    self.expr(child)


def route_of(package: Package, spec: str, depth: int) -> list[str]:
    """The stays of route ``spec`` (``module:Class.method`` or ``module:function``)."""
    module, _, qualname = spec.partition(":")
    owner, _, method = qualname.rpartition(".")
    if owner:
        fn = Fn(module, package.modules[module].classes[owner].methods[method], owner)
    else:
        fn = Fn(module, package.modules[module].functions[method])
    route = Route(package, depth)
    route.enter(fn)
    return route.stays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("routes", nargs="*", default=list(ROUTES))
    parser.add_argument("--depths", default="2,3",
                        help="calls followed below the route's method, comma-separated")
    parser.add_argument("--quiet", action="store_true", help="counts only, not the sequence of modules")
    args = parser.parse_args()
    package = Package()
    for depth in (int(d) for d in args.depths.split(",")):
        print(f"routes followed statically through every branch, {depth} calls deep")
        for spec in args.routes:
            stays = route_of(package, spec, depth)
            c = counts(stays)
            entered = ", ".join(f"{m} {n}" for m, n in c.entered.items()) or "none"
            print(f"{spec}: {c.stays} stays in {c.modules} modules, {c.returns} returns, {c.climbs} climbs; "
                  f"entered more than twice: {entered}")
            if not args.quiet:
                print("   " + " -> ".join(stays))


if __name__ == "__main__":
    main()
