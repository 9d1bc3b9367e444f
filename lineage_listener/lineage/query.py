"""From one captured action's plan to its lineage: target, edges, datasets, columns.

The root of an analyzed plan is either a query (an action returning rows to the
driver: ``collect``, ``show``...) or a command. Write commands name their target
and carry the query they write, as a child or as a ``query``/``plan`` field.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lineage_listener.lineage import (column_path, expressions, nodes, python, rowlevel,  # noqa: F401 - handlers
                                      streaming)
from lineage_listener.lineage import variables as sql_variables
from lineage_listener.lineage.datasets import Dataset, datasets_of
from lineage_listener.lineage.edges import edges as edges_of
from lineage_listener.lineage.model import Attribute, Edge, Origin
from lineage_listener.lineage.walker import HANDLERS, RULES, Walk
from lineage_listener.lineage.writes import mode_of
from lineage_listener.plan.classes import ROW_LEVEL_COMMANDS, WRITE_COMMANDS
from lineage_listener.plan.tree import Node


@dataclass(frozen=True)
class QueryLineage:
    """What one action contributes to the store."""

    target: Dataset | None
    edges: list[Edge]
    datasets: dict[str, Dataset] = field(default_factory=dict)
    columns: dict[tuple[str, str], Attribute] = field(default_factory=dict)
    fallbacks: frozenset[str] = frozenset()
    problems: tuple[str, ...] = ()  # plan fields read another way; recorded as capture errors
    write_mode: str | None = None   # what the write does to its target's data (lineage/writes.py)
    guesses: tuple[str, ...] = ()  # why some edges are a guess (Python functions not read); recorded too
    #: What a variable command does to the session's SQL variables (:mod:`.variables`).
    assigns: sql_variables.Assignments = ()


def _schema(text: Any) -> dict[str, tuple[Any, bool]]:
    """Spark's ``StructType.json()`` as ``{name: (type, nullable)}``."""
    if not isinstance(text, str):
        return {}
    try:
        return {f["name"]: (f.get("type"), bool(f.get("nullable", True))) for f in json.loads(text)["fields"]}
    except (ValueError, KeyError, TypeError):
        return {}


def output_names(root: Node) -> list[str] | None:
    """A write command's target column names (``outputColumnNames`` is a printed Seq).

    Names are data: spaces are kept (``"order count "``); a name containing ``", "``
    makes the split count differ from the query's outputs, and the caller then falls
    back to the query's own names.
    """
    raw = root.get("outputColumnNames")
    if isinstance(raw, str) and raw.startswith("[") and raw.endswith("]"):
        inner = raw[1:-1]
        return inner.split(", ") if inner else []
    if isinstance(raw, tuple) and all(isinstance(n, str) for n in raw):
        return list(raw)
    return None


def query_of(root: Node) -> Node | None:
    """The query a command writes: its child, or its ``query``/``plan``/``child`` field."""
    for key in ("query", "plan", "child"):
        trees = root.trees(key)
        if trees:
            return trees[0]
    return root.children[0] if root.children else None


def is_write(root: Node) -> bool:
    return root.name in WRITE_COMMANDS


def walk(plan: Node, leaves: Mapping[int, Mapping[str, Any]] | None = None,
         scope: str | None = None, variables: Mapping[str, Origin] | None = None) -> tuple[Walk, list[Attribute]]:
    """Walk ``plan`` with every handler and rule; return the finished walk and the plan's outputs."""
    assert expressions.derived_function is RULES[expressions.DEFAULT], "expression rules not registered"
    assert HANDLERS.get("MergeRows") is rowlevel.merge_rows, "row-level handlers not registered"
    w = Walk(leaves=leaves or {}, scope=scope, variables=variables or {})
    return w, w.plan(plan)


def lineage(root: Node, leaves: Mapping[int, Mapping[str, Any]] | None = None,
            target: Mapping[str, Any] | None = None, scope: str | None = None,
            variables: Mapping[str, Origin] | None = None, declared: tuple[str, ...] = ()) -> QueryLineage:
    """Lineage of one action. ``target`` is the write target's relation fact (None: driver).
    ``variables``: the values of the session's SQL variables (:mod:`.variables`); ``declared``: the
    keys of the variables a ``DECLARE`` or ``DROP VARIABLE`` command names."""
    if root.name in ("CreateVariable", "DropVariable"):  # no query: only what the session's variables become
        w = Walk(leaves=leaves or {}, scope=scope, variables=variables or {})
        return QueryLineage(None, [], assigns=sql_variables.assignments(root, w, [], declared))
    query = root if root.name in ROW_LEVEL_COMMANDS else query_of(root) if is_write(root) else root
    if query is None:
        return QueryLineage(None, [])
    w, outputs = walk(query, leaves, scope, variables)
    if sql_variables.is_variable_command(root):
        return QueryLineage(None, edges_of(w, outputs), dict(w.datasets), dict(w.columns), frozenset(w.fallbacks),
                            tuple(w.problems), guesses=tuple(w.guesses),
                            assigns=sql_variables.assignments(root, w, outputs, declared))
    names = output_names(root) if is_write(root) else None
    if not names and target and isinstance(target.get("output_columns"), list):
        names = list(target["output_columns"])  # CREATE VIEW v (x, y): read from the command
    target_ds = datasets_of(target)[0] if target else None
    datasets = dict(w.datasets)
    columns = dict(w.columns)
    if target_ds is not None:
        datasets[target_ds.name] = target_ds
        final = names if names and len(names) == len(outputs) else [a.name for a in outputs]
        schema = _schema(target.get("schema"))
        for name, a in zip(final, outputs):
            written_type, written_nullable = schema.get(name, (a.data_type, a.nullable))
            for col, dtype, nullable in nodes.flatten(column_path.quote(name), written_type, written_nullable):
                columns[(target_ds.name, col)] = Attribute(a.expr_id, col, dtype, nullable)
    return QueryLineage(target_ds, edges_of(w, outputs, names), datasets, columns, frozenset(w.fallbacks),
                        tuple(w.problems), mode_of(root, target) if target_ds is not None else None,
                        tuple(w.guesses))
