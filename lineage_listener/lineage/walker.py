"""The walk: its state and the dispatch tables that plan handlers and expression rules fill.

This module owns one walk's state (:class:`Walk`: attribute origins by exprId, row
influences, datasets seen) and the two tables keyed by Spark class name:
:data:`HANDLERS` for plan nodes (:mod:`~lineage_listener.lineage.nodes`) and
:data:`RULES` for expressions (:mod:`~lineage_listener.lineage.expressions`). Those
modules import this one and register themselves with :func:`handler` / :func:`rule`;
this module imports neither (:func:`lineage_listener.lineage.query.lineage` loads both).

>>> from lineage_listener.plan.tree import parse
>>> @rule("Example")
... def example(node, walk):
...     return Origin(sql=sqltext.column("x"))
>>> Walk().expression(parse('[{"class": "a.Example", "num-children": 0}]')).text()
'x'
>>> _ = RULES.pop("Example")
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lineage_listener.lineage import sqltext
from lineage_listener.lineage.datasets import Dataset
from lineage_listener.lineage.model import Attribute, Influence, Origin
from lineage_listener.plan.classes import EXPRESSION_FIELDS, READ_FROM_JVM
from lineage_listener.plan.tree import Node

log = logging.getLogger(__name__)

Handler = Callable[[Node, "Walk"], list[Attribute]]
Rule = Callable[[Node, "Walk"], Origin]

#: Plan node handlers by short class name; ``DEFAULT`` handles classes without one.
HANDLERS: dict[str, Handler] = {}
#: Expression rules by short class name; ``DEFAULT`` handles classes without one.
RULES: dict[str, Rule] = {}
DEFAULT = "*"
#: What a handler does when a field it needs was null in the plan JSON (recorded with it).
ON_NULL: dict[str, str] = {}

#: Above this many nodes an intermediate expression is shown by its alias.
MAX_SQL_SIZE = 400
BUILTIN = "org.apache.spark.sql.catalyst.expressions."

_logged: set[str] = set()


def _register(table: dict[str, Any], names: tuple[str, ...]) -> Callable[[Any], Any]:
    def register(fn: Any) -> Any:
        for n in names:
            table[n] = fn
        return fn
    return register


def handler(*names: str, on_null: str | None = None) -> Callable[[Handler], Handler]:
    """Register a plan node handler for Spark classes ``names``; ``on_null`` says what it
    does when a field of :data:`~lineage_listener.plan.classes.EXPRESSION_FIELDS` is null."""
    if on_null:
        ON_NULL.update(dict.fromkeys(names, on_null))
    return _register(HANDLERS, names)


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register an expression rule for Spark classes ``names``."""
    return _register(RULES, names)


def _once(key: str, level: int, message: str, *args: Any) -> None:
    if key not in _logged:
        _logged.add(key)
        log.log(level, message, *args)


@dataclass
class Walk:
    """State of one walk: attribute origins by exprId, row-level influences, datasets seen.

    ``leaves`` maps the exprId of a leaf's first output attribute to the relation
    facts the capture read from the JVM (see :mod:`lineage_listener.lineage.datasets`).
    """

    leaves: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    scope: str | None = None  # names in-memory data: ``local:<scope>/...``
    env: dict[int, Origin] = field(default_factory=dict)
    influences: list[Influence] = field(default_factory=list)
    datasets: dict[str, Dataset] = field(default_factory=dict)
    columns: dict[tuple[str, str], Attribute] = field(default_factory=dict)
    ctes: dict[Any, list[tuple[Attribute, Origin | None]]] = field(default_factory=dict)  # as defined
    fallbacks: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)  # plan fields read another way (recorded)
    common: list[list[Origin]] = field(default_factory=list)  # common expressions of enclosing ``With``s
    grouping_ids: dict[int, tuple[Node, ...]] = field(default_factory=dict)  # grouping-set id -> its columns
    guesses: list[str] = field(default_factory=list)  # why some edges are a guess, one line per function
    variables: Mapping[str, Origin] = field(default_factory=dict)  # SQL variables' values (lineage/variables.py)

    def problem(self, message: str) -> None:
        """A plan field that matters was unusable: log it once per message, record it per query."""
        if message not in self.problems:
            self.problems.append(message)
            _once(message, logging.WARNING, "lineage-listener: %s", message)

    def guessed(self, note: str) -> None:
        """Some edges are a conservative guess (a Python function not read): log why once, record it
        per query."""
        if note not in self.guesses:
            self.guesses.append(note)
            _once(note, logging.INFO, "lineage-listener: %s", note)

    # -- expressions ---------------------------------------------------------------
    def expression(self, node: Node) -> Origin:
        """The :class:`Origin` of an expression's value, by the rule for its class."""
        fn = RULES.get(node.name)
        if fn is None:
            # Built-in catalyst functions are row-by-row by construction; others are worth a note.
            _once(node.name, logging.DEBUG if node.cls.startswith(BUILTIN) else logging.INFO,
                  "no specific rule for expression %s: treating it as derived from its inputs", node.name)
            fn = RULES[DEFAULT]
        return fn(node, self)

    def lookup(self, attr: Node) -> Origin:
        """The origin of an attribute reference; an unknown one is an opaque column."""
        origin = self.env.get(attr.expr_id) if attr.expr_id is not None else None
        name = attr.get("name") or "?"
        if origin is None:
            return Origin(sql=sqltext.column(name))
        if origin.sql is None or origin.size > MAX_SQL_SIZE:
            return Origin(origin.flows, origin.influences, sqltext.column(name), 1, origin.fields)
        return origin

    def define(self, expr_id: int | None, origin: Origin) -> None:
        if expr_id is not None:
            self.env[expr_id] = origin

    # -- plans ---------------------------------------------------------------------
    def plan(self, node: Node) -> list[Attribute]:
        """Walk ``node`` and return its output attributes (origins are in ``env``)."""
        fn = HANDLERS.get(node.name)
        if fn is None:
            self.fallbacks.add(node.name)
            _once("plan:" + node.name, logging.WARNING, "unknown plan node %s: every output is treated as "
                  "derived from every input it references", node.name)
            fn = HANDLERS[DEFAULT]
        for name in node.get(READ_FROM_JVM) or ():  # read whole: nothing lost, so no problem of the query
            log.debug("%s.%s was null in the plan JSON: read from the JVM object", node.name, name)
        for name in EXPRESSION_FIELDS.get(node.name, ()):
            if name in node.fields and node.fields[name] is None:
                self.problem(f"{node.name}.{name} was null in the plan JSON: "
                             + ON_NULL.get(node.name, "lineage through this node is lost"))
        return fn(node, self)

    def subquery(self, node: Node) -> tuple[list[Origin], list[Influence]] | None:
        """Walk the plan inside a subquery expression: its outputs' origins and row influences."""
        plans = node.trees("plan")
        if not plans:
            return None
        saved = self.influences
        self.influences = []
        try:
            outputs = self.plan(plans[0])
            inner = self.influences
        finally:
            self.influences = saved
        return [self.env.get(a.expr_id, Origin()) for a in outputs], inner


def attributes(nodes: tuple[Node, ...] | Any) -> list[Attribute]:
    """Attributes named by a tuple of expression trees (``output``, ``projectList``...)."""
    out = []
    for n in nodes if isinstance(nodes, tuple) else ():
        if isinstance(n, Node) and n.expr_id is not None:
            out.append(Attribute(n.expr_id, n.get("name") or "?", n.get("dataType"), bool(n.get("nullable", True))))
    return out


__all__ = ["Attribute", "Walk", "HANDLERS", "RULES", "DEFAULT", "handler", "rule", "attributes"]
