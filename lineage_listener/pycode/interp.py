"""Reading a function's source: which input columns flow into what it returns, without running it.

:class:`FunctionReader` follows a function's ``ast`` statement by statement, keeping for each variable a
:mod:`~lineage_listener.pycode.values` value (the input columns it is made of). Branches are
read both ways and joined, loops twice (a loop over constant column names once per name),
calls into functions of the code are read in place, and what a condition reads joins every
value computed under it. pandas, Arrow and ``Row`` operations that choose columns by name are
followed column by column (:mod:`~lineage_listener.pycode.frames`); any other operation is
computed from all it receives.

What the reader cannot follow makes a value a *guess* (every column it might hold, marked), and
what would make the whole function unreadable (``exec``, ``eval``, ``globals()``) raises
:class:`Unreadable` with the reason.

>>> import ast
>>> from lineage_listener.pycode.values import Table, taint
>>> tree = ast.parse("def f(it):\\n    for pdf in it:\\n        pdf['d'] = pdf['email'].str.upper()\\n"
...                  "        yield pdf[['id', 'd']]")
>>> reader = FunctionReader(2)
>>> out = reader.call(reader.function(tree.body[0], Module(tree)), [Iter(Table.of(['id', 'email']))])
>>> [(n, sorted(taint(v).flows)) for n, v in out.elem.cols]
[('id', [(0, 'copy')]), ('d', [(1, 'derived')])]
"""
from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from lineage_listener.pycode import frames
from lineage_listener.pycode.values import (AGGREGATE, COPY, DERIVED, EMPTY, Const, Func, Group, Instance, Iter, Obj,
                                            Seq, Table, Taint, Value, derive, taint, union, with_control)

#: Nodes read per function before the reader gives up (a generated or huge function).
MAX_STEPS = 200_000
#: Calls read in place, one inside another, before a call is taken as computed from its arguments.
MAX_DEPTH = 12
#: A loop over constants (column names) is read once per constant up to this many.
MAX_UNROLL = 256

#: Names whose use makes a function unreadable: they run or reach code chosen at run time.
DYNAMIC = frozenset({"exec", "eval", "compile", "globals", "locals", "vars", "__import__", "breakpoint"})


class Unreadable(ValueError):
    """The function cannot be read; the message says why, to a person."""


@dataclass
class Module:
    """What a function's file defines at its top level: imports, functions, constants."""

    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)
    defs: dict[str, ast.AST] = field(default_factory=dict)
    consts: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for node in self.tree.body:
            _bind_imports(node, self.imports)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                try:
                    self.consts[node.targets[0].id] = ast.literal_eval(node.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    self.consts.pop(node.targets[0].id, None)


def _bind_imports(node: ast.AST, into: dict[str, str]) -> None:
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.asname:
                into[a.asname] = a.name
            else:
                into[a.name.split(".")[0]] = a.name.split(".")[0]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        for a in node.names:
            into[a.asname or a.name] = f"{node.module}.{a.name}"


class Scope:
    """Names visible to a function: its variables, then the scopes around it."""

    def __init__(self, values: dict[str, Value] | None = None, parent: "Scope | None" = None,
                 module: Module | None = None, outer: Callable[[str], Value | None] | None = None) -> None:
        self.vars: dict[str, Value] = values if values is not None else {}
        self.parent = parent
        self.module = module if module is not None else (parent.module if parent is not None else None)
        self.outer = outer  # the pickled closure and globals of the function read

    def lookup(self, name: str, reader: "FunctionReader") -> Value:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name]
            if scope.outer is not None:
                found = scope.outer(name)
                if found is not None:
                    return found
            if scope.parent is None and scope.module is not None:
                return reader.module_name(scope.module, name, scope)
            scope = scope.parent
        return Obj(f"builtins.{name}") if hasattr(builtins, name) else Obj(f"?{name}")


class Env:
    """One path through a function: its variables (a :class:`Scope`), what decides that the path
    runs (``control``), where returns and yields go."""

    def __init__(self, scope: Scope, out: "Outcome", control: Taint = EMPTY) -> None:
        self.scope = scope
        self.out = out
        self.control = control

    def fork(self) -> "Env":
        return Env(Scope(dict(self.scope.vars), self.scope.parent, self.scope.module, self.scope.outer), self.out,
                   self.control)

    def set(self, name: str, value: Value) -> None:
        self.scope.vars[name] = with_control(value, self.control)


@dataclass
class Outcome:
    """What a function gives back: its returns and yields; ``loops``: paths leaving loop bodies."""

    returns: list[Value] = field(default_factory=list)
    yields: list[Value] = field(default_factory=list)
    loops: list[list[Env]] = field(default_factory=list)


def join(envs: list[Env | None]) -> Env | None:
    """One path standing for several (after an ``if``): each variable may hold any of their values."""
    live = [e for e in envs if e is not None]
    if not live:
        return None
    if len(live) == 1:
        return live[0]
    first = live[0]
    names: dict[str, list[Value]] = {}
    for e in live:
        for k, v in e.scope.vars.items():
            names.setdefault(k, []).append(v)
    merged = {k: (vs[0] if all(v is vs[0] for v in vs) else union(vs)) for k, vs in names.items()}
    control = EMPTY
    for e in live:
        control = control | e.control
    return Env(Scope(merged, first.scope.parent, first.scope.module, first.scope.outer), first.out, control)


def _yields(node: ast.AST) -> bool:
    """Whether a function body yields (nested functions aside)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))
    return False


class FunctionReader:
    """Reads functions over ``inputs`` input columns; ``top`` is every one of them, a guess."""

    def __init__(self, inputs: int, resolve: Callable[[Any, "FunctionReader"], Value] | None = None) -> None:
        self.top = Taint(frozenset((i, DERIVED) for i in range(inputs)), True, True)
        self.reasons: list[str] = []
        self.filters: set[int] = set()
        self.resolve = resolve  # a pickled value (closure cell, global) -> Value
        self.steps = 0
        self.depth = 0
        self.active: set[int] = set()

    # -- notes ----------------------------------------------------------------------
    def guess(self, reason: str, value: Value | None = None) -> Taint:
        """A value the reader cannot follow: ``value``'s sources (default: every input), marked."""
        if reason not in self.reasons:
            self.reasons.append(reason)
        if value is None:
            return self.top
        t = taint(value)
        return Taint(t.raised(DERIVED).flows, True, True)

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Unreadable(f"it is too long to read (over {MAX_STEPS} steps)")

    # -- names ----------------------------------------------------------------------
    def module_name(self, module: Module, name: str, scope: Scope) -> Value:
        if name in module.imports:
            return Obj(module.imports[name])
        if name in module.defs:
            node = module.defs[name]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return Func(node, Scope(parent=None, module=module, outer=scope.outer), label=name)
            return Obj(f"?class:{name}")
        if name in module.consts:
            return Const(module.consts[name])
        return Obj(f"builtins.{name}") if hasattr(builtins, name) else Obj(f"?{name}")

    def function(self, node: ast.AST, module: Module, outer: Callable[[str], Value | None] | None = None,
                 label: str = "") -> Func:
        """The function ``node`` of ``module`` as a value (its globals through ``outer``)."""
        return Func(node, Scope(parent=None, module=module, outer=outer), label=label)

    # -- calls ----------------------------------------------------------------------
    def call(self, fn: Value, args: list[Value], kwargs: dict[str, Value] | None = None) -> Value:
        """The value ``fn(*args, **kwargs)`` gives back."""
        kwargs = kwargs or {}
        if isinstance(fn, Func):
            return self._run(fn, args, kwargs)
        if isinstance(fn, Obj):
            return frames.library_call(self, fn.path, args, kwargs)
        if isinstance(fn, Const):
            return derive(list(args) + list(kwargs.values()))
        return self._unknown_call(f"a value called as a function", args, kwargs)

    def _unknown_call(self, what: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
        everything = list(args) + list(kwargs.values())
        if any(isinstance(a, (Table, Group, Instance)) for a in everything):
            return self.guess(f"{what} receives a whole frame or row", union(everything))
        t = derive(everything)
        return Taint(t.flows, t.guess, any(taint(a).vector for a in everything))

    def _run(self, fn: Func, args: list[Value], kwargs: dict[str, Value]) -> Value:
        node = fn.node
        key = id(node)
        if key in self.active or self.depth >= MAX_DEPTH:
            return self._unknown_call(f"the recursive call of {fn.label or 'a function'}", list(args),
                                      kwargs)
        self.active.add(key)
        self.depth += 1
        try:
            return self._body(fn, list(fn.bound) + list(args), kwargs)
        finally:
            self.depth -= 1
            self.active.discard(key)

    def _body(self, fn: Func, args: list[Value], kwargs: dict[str, Value]) -> Value:
        node = fn.node
        scope = Scope({}, fn.scope, fn.scope.module if fn.scope is not None else None)
        out = Outcome()
        env = Env(scope, out)
        self._bind(node.args, args, kwargs, env, fn.scope)
        if isinstance(node, ast.Lambda):
            return self.ev(node.body, env)
        end = self.block(node.body, env)
        if _yields(node):
            return Iter(union(out.yields) if out.yields else EMPTY)
        results = list(out.returns)
        if end is not None or not results:
            results.append(Const(None))
        return union(results)

    def _bind(self, spec: ast.arguments, args: list[Value], kwargs: dict[str, Value], env: Env,
              defining: Scope | None) -> None:
        positional = [*spec.posonlyargs, *spec.args]
        defaults = [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults)
        rest = list(args)
        for param, default in zip(positional, defaults):
            if rest:
                value = rest.pop(0)
            elif param.arg in kwargs:
                value = kwargs.pop(param.arg)
            elif default is not None:
                value = self.ev(default, Env(defining or Scope(), Outcome())) if defining else Const(None)
            else:
                value = Const(None)
            env.scope.vars[param.arg] = value
        if spec.vararg is not None:
            env.scope.vars[spec.vararg.arg] = Seq.of(rest)
        for param, default in zip(spec.kwonlyargs, spec.kw_defaults):
            env.scope.vars[param.arg] = kwargs.pop(param.arg, Const(None) if default is None else
                                                   self.ev(default, Env(defining or Scope(), Outcome())))
        if spec.kwarg is not None:  # PySpark may pass named arguments the plan gives by position
            env.scope.vars[spec.kwarg.arg] = Table(tuple(kwargs.items()), self.top if self.depth == 1 else None,
                                                   "dict")

    # -- statements -----------------------------------------------------------------
    def block(self, stmts: list[ast.stmt], env: Env | None) -> Env | None:
        """Read statements in order; None when every path through them ended (return, raise)."""
        for stmt in stmts:
            if env is None:
                return None
            env = self.stmt(stmt, env)
        return env

    def stmt(self, node: ast.stmt, env: Env) -> Env | None:  # noqa: C901 - one branch per statement kind
        self._tick()
        if isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Yield):
                env.out.yields.append(with_control(self.ev(node.value.value, env) if node.value.value
                                                   else Const(None), env.control))
            elif isinstance(node.value, ast.YieldFrom):
                env.out.yields.append(with_control(frames.element(self, self.ev(node.value.value, env)), env.control))
            else:
                self.ev(node.value, env)
            return env
        if isinstance(node, ast.Assign):
            value = self.ev(node.value, env)
            for target in node.targets:
                self.assign(target, value, env)
            return env
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.assign(node.target, self.ev(node.value, env), env)
            return env
        if isinstance(node, ast.AugAssign):
            old = self.ev(node.target, env)
            self.assign(node.target, frames.binary(old, self.ev(node.value, env)), env)
            return env
        if isinstance(node, ast.Return):
            env.out.returns.append(with_control(self.ev(node.value, env) if node.value else Const(None),
                                                env.control))
            return None
        if isinstance(node, ast.If):
            test = self.ev(node.test, env)
            yes, no = env.fork(), env.fork()
            for branch in (yes, no):
                branch.control = env.control | taint(test)
            after = join([self.block(node.body, yes), self.block(node.orelse, no)])
            if after is not None:
                after.control = env.control
            return after
        if isinstance(node, (ast.For, ast.AsyncFor)):
            return self._for(node, env)
        if isinstance(node, ast.While):
            test = self.ev(node.test, env)
            inner = env.fork()
            inner.control = env.control | taint(test)
            return self._loop(node.body, node.orelse, inner, env, lambda e: None)
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                value = self.ev(item.context_expr, env)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, value, env)
            return self.block(node.body, env)
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            before = env.fork()
            after = self.block(node.body, env)
            paths: list[Env | None] = [self.block(node.orelse, after) if after is not None else None]
            for handler in node.handlers:  # type: ignore[attr-defined]
                start = join([before, after.fork() if after is not None else None])
                if start is not None and handler.name:
                    start.scope.vars[handler.name] = Obj("?exception")
                paths.append(self.block(handler.body, start))
            joined = join(paths)
            return self.block(node.finalbody, joined) if node.finalbody else joined
        if isinstance(node, (ast.Break, ast.Continue)):
            if env.out.loops:
                env.out.loops[-1].append(env)
            return None
        if isinstance(node, ast.Raise):
            return None
        if isinstance(node, (ast.Pass, ast.Assert, ast.Global, ast.Nonlocal)):
            return env
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names: dict[str, str] = {}
            _bind_imports(node, names)
            for k, v in names.items():
                env.scope.vars[k] = Obj(v)
            return env
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            env.scope.vars[node.name] = Func(node, env.scope, label=node.name)
            return env
        if isinstance(node, ast.ClassDef):
            env.scope.vars[node.name] = Obj(f"?class:{node.name}")
            return env
        if isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    base = self.ev(target.value, env)
                    key = self.ev(target.slice, env)
                    if isinstance(base, Table) and isinstance(key, Const):
                        self.rebind(env, target.value.id, base, base.drop([key.value]))
            return env
        if type(node).__name__ == "Match":
            subject = self.ev(node.subject, env)  # type: ignore[attr-defined]
            paths = []
            for case in node.cases:  # type: ignore[attr-defined]
                branch = env.fork()
                branch.control = env.control | taint(subject)
                paths.append(self.block(case.body, branch))
            paths.append(env)
            after = join(paths)
            if after is not None:
                after.control = env.control
            return after
        raise Unreadable(f"it uses a statement this reader does not read ({type(node).__name__}, line "
                         f"{getattr(node, 'lineno', '?')})")

    def _for(self, node: ast.For | ast.AsyncFor, env: Env) -> Env | None:
        iterable = self.ev(node.iter, env)
        constants = frames.constants(iterable)
        if constants is not None and len(constants) <= MAX_UNROLL:  # once per column name
            current: Env | None = env
            exits: list[Env | None] = []
            for value in constants:
                if current is None:
                    break
                self.assign(node.target, Const(value), current)
                env.out.loops.append([])
                current = self.block(node.body, current)
                exits += env.out.loops.pop()
            end = join([current, *exits])
            return self.block(node.orelse, end) if end is not None else None
        element = frames.element(self, iterable)
        inner = env.fork()

        def bind(e: Env) -> None:
            self.assign(node.target, element, e)
        return self._loop(node.body, node.orelse, inner, env, bind)

    def _loop(self, body: list[ast.stmt], orelse: list[ast.stmt], inner: Env, before: Env,
              bind: Callable[[Env], None]) -> Env | None:
        """A loop body read twice (what the first round assigns reaches the second), joined with
        the path that skips it and the paths that leave it early."""
        paths: list[Env | None] = [before]
        current: Env | None = inner
        for _ in range(2):
            if current is None:
                break
            bind(current)
            before.out.loops.append([])
            current = self.block(body, current)
            paths += before.out.loops.pop()
            paths.append(current)
            if current is not None:
                current = join([current, inner])
                current.control = inner.control
        after = join(paths)
        if after is not None:
            after.control = before.control
            after = self.block(orelse, after)
        return after

    # -- assignment -----------------------------------------------------------------
    def assign(self, target: ast.expr, value: Value, env: Env) -> None:
        if isinstance(target, ast.Name):
            env.set(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = frames.unpack(self, value, len(target.elts))
            starred = [i for i, t in enumerate(target.elts) if isinstance(t, ast.Starred)]
            for i, t in enumerate(target.elts):
                if isinstance(t, ast.Starred):
                    self.assign(t.value, Seq(None, frames.element(self, value)), env)
                elif not starred or i < starred[0]:
                    self.assign(t, parts[i], env)
                else:
                    self.assign(t, frames.element(self, value), env)
        elif isinstance(target, ast.Subscript):
            self._set_item(target, value, env)
        elif isinstance(target, ast.Attribute):
            base = self.ev(target.value, env)
            if isinstance(base, Instance):
                base.attrs[target.attr] = union([base.attrs[target.attr], with_control(value, env.control)]) \
                    if target.attr in base.attrs else with_control(value, env.control)
            elif isinstance(base, Table) and isinstance(target.value, ast.Name):
                if target.attr == "columns":  # ``df.columns = [...]``: new names by position
                    names = frames.constants(value)
                    new = frames.renamed_by_position(self, base, names)
                else:
                    new = base.with_column(target.attr, with_control(value, env.control))
                self.rebind(env, target.value.id, base, new)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, value, env)

    def _set_item(self, target: ast.Subscript, value: Value, env: Env) -> None:
        holder = target.value
        accessor = None
        if isinstance(holder, ast.Attribute) and holder.attr in ("loc", "iloc", "at", "iat"):
            accessor, holder = holder.attr, holder.value
        base = self.ev(holder, env)
        key = self.ev(target.slice, env)
        value = with_control(value, env.control)
        new = frames.set_item(self, base, key, value, accessor)
        if new is not None and new is not base:
            name = holder.id if isinstance(holder, ast.Name) else None
            if name is not None:
                self.rebind(env, name, base, new)
            elif isinstance(holder, ast.Attribute) and isinstance(self.ev(holder.value, env), Instance):
                self.ev(holder.value, env).attrs[holder.attr] = new  # type: ignore[union-attr]

    def rebind(self, env: Env, name: str, old: Value, new: Value) -> None:
        """``name`` now holds ``new`` (a changed frame); so does every variable that held the same
        frame object (``out = pdf`` then ``out['x'] = ...`` changes ``pdf`` too)."""
        env.scope.vars[name] = new
        scope: Scope | None = env.scope
        while scope is not None:
            for k, v in list(scope.vars.items()):
                if v is old:
                    scope.vars[k] = new
            scope = scope.parent

    # -- expressions ----------------------------------------------------------------
    def ev(self, node: ast.expr, env: Env) -> Value:  # noqa: C901 - one branch per expression kind
        self._tick()
        if isinstance(node, ast.Constant):
            return Const(node.value)
        if isinstance(node, ast.Name):
            if node.id in DYNAMIC and not _bound(env.scope, node.id):
                raise Unreadable(f"it calls {node.id}() (line {node.lineno}): code chosen at run time")
            return env.scope.lookup(node.id, self)
        if isinstance(node, ast.Attribute):
            return frames.attribute(self, self.ev(node.value, env), node.attr)
        if isinstance(node, ast.Subscript):
            holder = node.value
            if isinstance(holder, ast.Attribute) and holder.attr in ("loc", "iloc", "at", "iat"):
                base = self.ev(holder.value, env)
                return frames.get_item(self, base, self.ev(node.slice, env), holder.attr)
            return frames.get_item(self, self.ev(holder, env), self.ev(node.slice, env), None)
        if isinstance(node, ast.Call):
            return self._call_node(node, env)
        if isinstance(node, (ast.BinOp,)):
            return frames.binary(self.ev(node.left, env), self.ev(node.right, env))
        if isinstance(node, ast.UnaryOp):
            value = self.ev(node.operand, env)
            return value if isinstance(value, Const) else frames.binary(value, Const(None))
        if isinstance(node, ast.BoolOp):
            values = [self.ev(v, env) for v in node.values]
            if all(isinstance(v, Const) for v in values):
                return Const(None)
            return frames.either(values)
        if isinstance(node, ast.Compare):
            parts = [self.ev(node.left, env)] + [self.ev(c, env) for c in node.comparators]
            if all(isinstance(p, (Const, Obj)) for p in parts):
                return Const(None)
            return frames.compare(self, parts, node.ops)
        if isinstance(node, ast.IfExp):
            test = self.ev(node.test, env)
            return with_control(union([self.ev(node.body, env), self.ev(node.orelse, env)]), taint(test))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items: list[Value] = []
            known = True
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    known = False
                    items.append(frames.element(self, self.ev(e.value, env)))
                else:
                    items.append(self.ev(e, env))
            if known and all(isinstance(i, Const) for i in items):
                values = [i.value for i in items]  # type: ignore[union-attr]
                return Const(tuple(values) if isinstance(node, ast.Tuple) else values)
            return Seq.of(items) if known else Seq(None, union(items))
        if isinstance(node, ast.Dict):
            return self._dict(node, env)
        if isinstance(node, (ast.JoinedStr, ast.FormattedValue)):
            parts = [self.ev(v, env) for v in ast.iter_child_nodes(node) if isinstance(v, ast.expr)]
            return derive(parts) if any(taint(p).flows for p in parts) else Const(None)
        if isinstance(node, ast.Lambda):
            return Func(node, env.scope, label="lambda")
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            elem = self._comprehension(node.generators, env, lambda e: self.ev(node.elt, e))
            return Iter(elem) if isinstance(node, ast.GeneratorExp) else Seq(None, elem)
        if isinstance(node, ast.DictComp):
            return self._dict_comprehension(node, env)
        if isinstance(node, ast.NamedExpr):
            value = self.ev(node.value, env)
            self.assign(node.target, value, env)
            return value
        if isinstance(node, ast.Starred):
            return self.ev(node.value, env)
        if isinstance(node, ast.Slice):
            return frames.SLICE
        if isinstance(node, ast.Await):
            return self.ev(node.value, env)
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            value = self.ev(node.value, env) if node.value else Const(None)
            env.out.yields.append(with_control(value if isinstance(node, ast.Yield) else frames.element(self, value),
                                               env.control))
            return Obj("?sent")
        raise Unreadable(f"it uses an expression this reader does not read ({type(node).__name__}, line "
                         f"{getattr(node, 'lineno', '?')})")

    def _dict(self, node: ast.Dict, env: Env) -> Value:
        cols: list[tuple[Any, Value]] = []
        extra: list[Value] = []
        for k, v in zip(node.keys, node.values):
            value = self.ev(v, env)
            if k is None:  # ``{**row.asDict(), 'x': 1}``
                if isinstance(value, Table):
                    for name, col in value.cols:
                        cols = [(n, c) for n, c in cols if n != name] + [(name, col)]
                    if value.extra is not None:
                        extra.append(value.extra)
                else:
                    extra.append(self.guess("a mapping unpacked into a dict is not followed key by key", value))
                continue
            key = self.ev(k, env)
            if isinstance(key, Const):
                cols = [(n, c) for n, c in cols if n != key.value] + [(key.value, value)]
            else:
                extra.append(self.guess("a dict key is computed at run time", union([key, value])))
        if not extra and all(isinstance(v, Const) for _, v in cols):
            return Const({n: v.value for n, v in cols})  # type: ignore[union-attr]
        return Table(tuple(cols), union(extra) if extra else None, "dict")  # type: ignore[arg-type]

    def _comprehension(self, generators: list[ast.comprehension], env: Env, element: Callable[[Env], Value]) -> Value:
        inner = env.fork()
        results: list[Value] = []

        def level(i: int, e: Env) -> None:
            if i == len(generators):
                results.append(with_control(element(e), e.control))
                return
            gen = generators[i]
            iterable = self.ev(gen.iter, e)
            constants = frames.constants(iterable)
            values = [Const(c) for c in constants] if constants is not None and len(constants) <= MAX_UNROLL \
                else [frames.element(self, iterable)]
            for value in values:
                branch = e.fork()
                self.assign(gen.target, value, branch)
                for cond in gen.ifs:
                    branch.control = branch.control | taint(self.ev(cond, branch))
                level(i + 1, branch)
        level(0, inner)
        return union(results) if results else EMPTY

    def _dict_comprehension(self, node: ast.DictComp, env: Env) -> Value:
        pairs: list[tuple[Value, Value]] = []

        def pair(e: Env) -> Value:
            pairs.append((self.ev(node.key, e), self.ev(node.value, e)))
            return EMPTY
        self._comprehension(node.generators, env, pair)
        if pairs and all(isinstance(k, Const) for k, _ in pairs):
            cols: dict[Any, Value] = {}
            for k, v in pairs:
                cols[k.value] = union([cols[k.value], v]) if k.value in cols else v  # type: ignore[union-attr]
            return Table(tuple(cols.items()), None, "dict")
        return Table((), self.guess("dict keys are computed at run time", union([v for _, v in pairs]))
                     if pairs else EMPTY, "dict")

    def _call_node(self, node: ast.Call, env: Env) -> Value:
        args: list[Value] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                value = self.ev(a.value, env)
                if isinstance(value, Seq) and value.items is not None:
                    args.extend(value.items)
                elif isinstance(value, Table) and value.kind == "row" and value.extra is None:
                    args.extend(v for _, v in value.cols)
                elif isinstance(value, Const) and isinstance(value.value, (list, tuple)):
                    args.extend(Const(v) for v in value.value)
                else:
                    args.append(frames.element(self, value))
            else:
                args.append(self.ev(a, env))
        kwargs: dict[str, Value] = {}
        for k in node.keywords:
            value = self.ev(k.value, env)
            if k.arg is None:  # ``**mapping``
                if isinstance(value, Table):
                    kwargs.update({str(n): v for n, v in value.cols})
                    if value.extra is not None:
                        kwargs["**"] = value.extra
                elif isinstance(value, Const) and isinstance(value.value, dict):
                    kwargs.update({str(n): Const(v) for n, v in value.value.items()})
                else:
                    kwargs["**"] = self.guess("keyword arguments unpacked from a value read at run time", value)
            else:
                kwargs[k.arg] = value
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self.ev(func.value, env)
            if isinstance(receiver, Obj):
                return frames.library_call(self, f"{receiver.path}.{func.attr}", args, kwargs)
            result, changed = frames.method(self, receiver, func.attr, args, kwargs)
            if changed is not None and changed is not receiver and isinstance(func.value, ast.Name):
                self.rebind(env, func.value.id, receiver, changed)
            return result
        if isinstance(func, ast.Name) and func.id == "getattr" and not _bound(env.scope, "getattr"):
            if len(args) >= 2 and isinstance(args[1], Const):
                return frames.attribute(self, args[0], str(args[1].value))
            return self.guess("getattr() with a name chosen at run time", args[0] if args else None)
        callee = self.ev(func, env)
        before = list(args)
        result = self.call(callee, args, kwargs)
        if not isinstance(callee, (Func,)) and not (isinstance(callee, Obj) and frames.keeps_arguments(callee.path)):
            for value, arg in zip(before, node.args):  # a frame handed to code that may change it
                if isinstance(value, Table) and isinstance(arg, ast.Name):
                    self.rebind(env, arg.id, value, value.each(
                        lambda v: self.guess(f"a frame is handed to {ast.unparse(func)}(), which may change it",
                                             union([v, value]))))
        return result


def _bound(scope: Scope, name: str) -> bool:
    s: Scope | None = scope
    while s is not None:
        if name in s.vars:
            return True
        s = s.parent
    return False


def method_of(reader: FunctionReader, fn: Func, receiver: Value) -> Func:
    """``fn`` bound to ``receiver`` (a UDTF's ``self``)."""
    return replace(fn, bound=(receiver,))


__all__ = ["FunctionReader", "Module", "Unreadable", "Env", "Scope", "method_of", "AGGREGATE", "COPY", "Group", "Iter"]
