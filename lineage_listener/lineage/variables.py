"""SQL variables: a value set from a query carries that query's lineage into the statements that read it.

``SET VAR v = (SELECT max(x) FROM t)`` is a scalar subquery evaluated once, its value kept in the
session: a later ``SELECT v AS m FROM u`` reads ``t.x`` through ``v`` (``m <- t.x``, ``aggregate``),
as ``SELECT (SELECT max(x) FROM t) AS m FROM u`` would. A variable set from a literal carries
nothing. The rules: ``docs/reference/semantics.md`` (Session variables).

Spark names a variable in a plan by a ``VariableReference`` (``originalNameParts``: what the
statement wrote, ``catalog``: the session's variables or a SQL script's local ones). The walk
finds each variable's value in :attr:`~lineage_listener.lineage.walker.Walk.variables`, keyed by
:func:`key`; the capture keeps them per session from the commands that set them
(:func:`assignments`).

>>> key("org.apache.spark.sql.catalyst.analysis.FakeSystemCatalog$", "V")
'session.v'
>>> reference_key({"originalNameParts": "[system, session, v]",
...                "catalog": {"object": "org.apache.spark.sql.catalyst.analysis.FakeSystemCatalog$"}})
'session.v'
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlglot.expressions as exp

from lineage_listener.lineage import sqltext
from lineage_listener.lineage.expressions import subquery_select
from lineage_listener.lineage.model import Attribute, Influence, Origin, Transform, combine, origin
from lineage_listener.lineage.walker import Walk, handler, rule
from lineage_listener.plan.classes import VARIABLE_COMMANDS
from lineage_listener.plan.tree import Node

#: Spark's catalogs of variables by class (short): the session's, and a SQL script's local ones.
SCOPES = {"FakeSystemCatalog": "session", "FakeLocalCatalog": "local"}

#: ``key -> value`` assignments of one command; a value of None: the variable carries nothing now.
Assignments = tuple[tuple[str, Origin | None], ...]


def key(catalog: str | None, name: str) -> str:
    """The key of a variable: its scope (session or a script's) and its name, lower case
    (Spark matches variable names without case)."""
    short = (catalog or "").rsplit(".", 1)[-1].rstrip("$")
    return f"{SCOPES.get(short, 'session')}.{name.lower()}"


def _name_parts(raw: Any) -> list[str]:
    """``originalNameParts``: a printed Seq (``"[session, v]"``) or a tuple of names."""
    if isinstance(raw, (tuple, list)):
        return [str(p) for p in raw]
    if isinstance(raw, str):
        inner = raw[1:-1] if raw.startswith("[") and raw.endswith("]") else raw
        return [p.strip().strip("`") for p in inner.split(",") if p.strip()]
    return []


def reference_key(fields: Mapping[str, Any]) -> str | None:
    """The key of the variable a ``VariableReference`` (its fields) names; None if unreadable."""
    parts = _name_parts(fields.get("originalNameParts"))
    catalog = fields.get("catalog")
    catalog_class = catalog.get("object") if isinstance(catalog, Mapping) else None
    return key(catalog_class, parts[-1]) if parts else None


def _short_name(fields: Mapping[str, Any]) -> str:
    parts = _name_parts(fields.get("originalNameParts"))
    return parts[-1] if parts else "?"


@rule("VariableReference")
def variable(node: Node, walk: Walk) -> Origin:
    """A variable's value: what the query that set it read (:func:`value_of`), else nothing."""
    k = reference_key(node.fields)
    value = walk.variables.get(k) if k is not None else None
    return value if value is not None else Origin(sql=sqltext.column(_short_name(node.fields)))


@handler("SetVariable")
def set_variable(node: Node, walk: Walk) -> list[Attribute]:
    """``SET VAR (a, b) = (query)``: the query's outputs, named after the variables they set."""
    outputs = walk.plan(node.children[0]) if node.children else []
    names = [_short_name(t.fields) for t in node.trees("targetVariables")]
    if len(names) != len(outputs):
        return outputs
    return [Attribute(a.expr_id, n, a.data_type, a.nullable) for a, n in zip(outputs, names)]


def value_of(value: Origin, rows: Sequence[Influence]) -> Origin | None:
    """What a variable set to ``value`` carries: its flows, and the columns that decided its
    row (``rows``, the query's filters and joins) as ``conditional``, as for a scalar subquery;
    None when it read no column (a literal)."""
    if not value.flows and not value.influences and not rows:
        return None
    sql = exp.Subquery(this=subquery_select(value)) if _reads_columns(value.sql) else value.sql
    out = combine([value], Transform.COPY, sql)
    return origin(out.flows, set(out.influences) | {Influence(i.source, Transform.CONDITIONAL, i.expression)
                                                     for i in rows}, sql)


def _reads_columns(sql: exp.Expression | None) -> bool:
    """Whether ``sql`` names a column outside any subquery: then it stands for a query over a
    dataset, and is shown as that query (``(SELECT max(x) FROM t)``), not as ``max(x)``."""
    return sql is not None and any(c.find_ancestor(exp.Subquery) is None for c in sql.find_all(exp.Column))


def assignments(root: Node, walk: Walk, outputs: list[Attribute], declared: Sequence[str]) -> Assignments:
    """What a variable command does to the session's variables (``declared``: the keys of the
    variables a ``DECLARE`` or ``DROP`` names, which the plan JSON leaves out).

    ``SET VAR``: each target gets the value of the query's output at its position;
    ``DECLARE``: each name gets its default's value; ``DROP``: the names carry nothing.
    """
    if root.name == "SetVariable":
        keys = [reference_key(t.fields) for t in root.trees("targetVariables")]
        rows = list(walk.influences)
        return tuple((k, value_of(walk.env.get(a.expr_id, Origin()), rows))
                     for k, a in zip(keys, outputs) if k is not None)
    if root.name == "CreateVariable":
        value = None
        for default in root.trees("defaultExpr"):
            inner = default.trees("analyzedChild") or default.children
            if inner:
                value = value_of(walk.expression(inner[0]), [])
        return tuple((k, value) for k in declared)
    return tuple((k, None) for k in declared)


def is_variable_command(root: Node) -> bool:
    return root.name in VARIABLE_COMMANDS
