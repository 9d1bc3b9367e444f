"""Walk an analyzed logical plan bottom-up and compute each output column's origin.

>>> from lineage_listener.plan.tree import parse
>>> w, outputs = walk(parse(plan_json), leaves)   # doctest: +SKIP
>>> w.env[outputs[0].expr_id].flows               # doctest: +SKIP
frozenset({Flow(source=Column(dataset='file:/data/users', name='name'), transform=<Transform.DERIVED: 'derived'>)})
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lineage_listener.lineage import sqltext
from lineage_listener.lineage.datasets import Dataset
from lineage_listener.lineage.expressions import MAX_SQL_SIZE, evaluate
from lineage_listener.lineage.model import Attribute, Influence, Origin
from lineage_listener.plan.tree import Node

log = logging.getLogger(__name__)
_logged_problems: set[str] = set()


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

    def problem(self, message: str) -> None:
        """A plan field that matters was unusable: log it once per message, record it per query."""
        if message not in self.problems:
            self.problems.append(message)
            if message not in _logged_problems:
                _logged_problems.add(message)
                log.warning("lineage-listener: %s", message)

    # -- expressions ---------------------------------------------------------------
    def lookup(self, attr: Node) -> Origin:
        """The origin of an attribute reference; an unknown one is an opaque column."""
        origin = self.env.get(attr.expr_id) if attr.expr_id is not None else None
        name = attr.get("name") or "?"
        if origin is None:
            return Origin(sql=sqltext.column(name))
        if origin.sql is None or origin.size > MAX_SQL_SIZE:
            return Origin(origin.flows, origin.influences, sqltext.column(name), 1)
        return origin

    def expression(self, node: Node) -> Origin:
        return evaluate(node, self)

    def define(self, expr_id: int | None, origin: Origin) -> None:
        if expr_id is not None:
            self.env[expr_id] = origin

    # -- plans ---------------------------------------------------------------------
    def plan(self, node: Node) -> list[Attribute]:
        """Walk ``node`` and return its output attributes (origins are in ``env``)."""
        from lineage_listener.lineage.nodes import handler_for

        return handler_for(node, self)(node, self)

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


def walk(plan: Node, leaves: Mapping[int, Mapping[str, Any]] | None = None,
         scope: str | None = None) -> tuple[Walk, list[Attribute]]:
    """Walk ``plan``; return the finished :class:`Walk` and the plan's output attributes."""
    w = Walk(leaves=leaves or {}, scope=scope)
    outputs = w.plan(plan)
    return w, outputs


__all__ = ["Attribute", "Walk", "walk", "attributes"]
