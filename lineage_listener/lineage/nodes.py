"""Plan node handlers, keyed by Spark class: each walks its children and defines its outputs.

A handler takes the plan :class:`Node` and the :class:`Walk`, records the origin of
every attribute the node creates in ``walk.env``, adds row-level influences
(filter, join, group_by, sort) to ``walk.influences``, and returns the node's
output attributes in order. A node class without a handler gets the fallback:
every new output is derived from every input it references, logged once per class.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from lineage_listener.lineage import column_path, sqltext
from lineage_listener.lineage.datasets import datasets_of
from lineage_listener.lineage.model import (Attribute, Column, Flow, Influence, Origin, Transform, as_influences,
                                            combine, ordered_influences)
from lineage_listener.lineage.walker import DEFAULT, HANDLERS, Walk, attributes, handler
from lineage_listener.plan.classes import GROUPING_ID, LEAVES
from lineage_listener.plan.tree import Node

log = logging.getLogger(__name__)


def children(node: Node, walk: Walk) -> list[Attribute]:
    out: list[Attribute] = []
    for c in node.children:
        out += walk.plan(c)
    return out


def add_influences(walk: Walk, trees: tuple[Node, ...], transform: Transform) -> None:
    for t in trees:
        origin = walk.expression(t)
        walk.influences.extend(ordered_influences(origin, transform))


def define_items(walk: Walk, items: tuple[Node, ...]) -> list[Attribute]:
    """Evaluate a projection list: aliases get new origins, attributes pass through."""
    out = []
    for item in items:
        if item.name == "Alias":
            walk.define(item.expr_id, walk.expression(item.children[0]))
        out.append(Attribute(item.expr_id if item.expr_id is not None else -1, item.get("name") or "?",
                             item.get("dataType"), bool(item.get("nullable", True))))
    return out


# -- pass-through nodes ----------------------------------------------------------------


@handler("SubqueryAlias", "GlobalLimit", "LocalLimit", "Limit", "Offset", "Tail",
         "Repartition", "RepartitionByExpression", "RebalancePartitions", "Sample", "ResolvedHint",
         "Subquery", "CollectMetrics", "EventTimeWatermark",
         "UnresolvedHint", "Project_passthrough", "IdentityRelation", "Hint", "SQLFunctionNode", "PipeOperator")
def passthrough(node: Node, walk: Walk) -> list[Attribute]:
    """Nodes whose outputs are their child's, rows unchanged or only some of them (a SQL table
    function's ``SQLFunctionNode`` wraps the function's body, a ``PipeOperator`` marks where a
    ``|>`` stood)."""
    return children(node, walk)


@handler("Distinct", "Deduplicate", "DeduplicateWithinWatermark")
def distinct(node: Node, walk: Walk) -> list[Attribute]:
    """DISTINCT / dropDuplicates keep one row per distinct key: the keys group rows (``group_by``)."""
    out = children(node, walk)
    keys = {k.expr_id for k in node.trees("keys")} or {a.expr_id for a in out}
    for a in out:
        if a.expr_id in keys and a.expr_id in walk.env:
            origin = walk.lookup(Node("AttributeReference", {"exprId": {"id": a.expr_id}, "name": a.name}))
            walk.influences.extend(ordered_influences(origin, Transform.GROUP_BY))
    return out


@handler("Project")
def project(node: Node, walk: Walk) -> list[Attribute]:
    children(node, walk)
    return define_items(walk, node.trees("projectList"))


@handler("Filter")
def filter_(node: Node, walk: Walk) -> list[Attribute]:
    out = children(node, walk)
    add_influences(walk, node.trees("condition"), Transform.FILTER)
    return out


@handler("Sort")
def sort(node: Node, walk: Walk) -> list[Attribute]:
    out = children(node, walk)
    add_influences(walk, node.trees("order"), Transform.SORT)
    return out


@handler("Aggregate")
def aggregate(node: Node, walk: Walk) -> list[Attribute]:
    children(node, walk)
    keys = node.trees("groupingExpressions")
    if keys and keys[-1].get("name") == GROUPING_ID and keys[-1].expr_id is not None:  # grouping sets
        walk.grouping_ids[keys[-1].expr_id] = keys[:-1]
        keys = keys[:-1]
    add_influences(walk, keys, Transform.GROUP_BY)
    return define_items(walk, node.trees("aggregateExpressions"))


@handler("Window")
def window(node: Node, walk: Walk) -> list[Attribute]:
    out = children(node, walk)
    return out + define_items(walk, node.trees("windowExpressions"))


_SEMI = ("LeftSemi", "LeftAnti", "ExistenceJoin")


def join_type(node: Node) -> str:
    jt = node.get("joinType")
    if isinstance(jt, dict):
        name = jt.get("object") or jt.get("product-class") or ""
        inner = jt.get("tpe")
        if isinstance(inner, dict) and inner.get("object"):
            name = inner["object"]
        return name.rsplit(".", 1)[-1].rstrip("$")
    return str(jt or "Inner")


@handler("LateralJoin")
def lateral_join(node: Node, walk: Walk) -> list[Attribute]:
    """``FROM t, LATERAL (SELECT ... WHERE q.k = t.k)``: the right side is a subquery expression
    (field ``right``), walked as a plan; its outputs follow the left's, its conditions stay row
    influences (they decide which rows pair)."""
    left = walk.plan(node.children[0])
    right: list[Attribute] = []
    for sub in node.trees("right"):
        for plan in sub.trees("plan")[:1]:
            right = walk.plan(plan)
    add_influences(walk, node.trees("condition"), Transform.JOIN)
    return left + right


#: What decides which rows of a join pair up, per join node: its condition, an as-of join's match on its
#: ordering column too, a NEAREST BY join's ranking (the k right rows ranked nearest each left row).
_PAIRING = {"Join": ("condition",), "AsOfJoin": ("asOfCondition", "condition"),
            "NearestByJoin": ("rankingExpression",)}


@handler(*_PAIRING)
def join(node: Node, walk: Walk) -> list[Attribute]:
    left = walk.plan(node.children[0])
    right = walk.plan(node.children[1]) if len(node.children) > 1 else []
    kind = join_type(node)
    semi = any(kind.startswith(s) for s in _SEMI)
    pairing = [t for f in _PAIRING.get(node.name, ("condition",)) for t in node.trees(f)]
    add_influences(walk, pairing, Transform.FILTER if semi else Transform.JOIN)
    return left if semi else left + right


@handler("Intersect", "Except")
def set_filter(node: Node, walk: Walk) -> list[Attribute]:
    left = walk.plan(node.children[0])
    right = walk.plan(node.children[1])
    for a in right:
        origin = walk.env.get(a.expr_id)
        if origin is not None:
            walk.influences.extend(as_influences(origin, Transform.FILTER, a.name))
    return left


@handler("Union")
def union(node: Node, walk: Walk) -> list[Attribute]:
    branches = [walk.plan(c) for c in node.children]
    first = branches[0] if branches else []
    for i, attr in enumerate(first):
        walk.define(attr.expr_id, union_of([walk.env.get(b[i].expr_id, Origin()) for b in branches if i < len(b)]))
    return first


def union_of(parts: list[Origin]) -> Origin:
    """One output of a UNION: a copy of its value in each branch (``parts``, in branch order)."""
    merged = combine(parts, Transform.COPY, None)
    texts = [p.text() for p in parts]
    sql = parts[0].sql if len(set(texts)) == 1 and parts else None
    flows = merged.flows if sql is not None else branch_flows(parts, texts)
    return Origin(flows, merged.influences, sql, parts[0].size if sql else 1)


def branch_flows(parts: list[Origin], texts: list[str | None]) -> frozenset[Flow]:
    """A UNION output's flows, each naming the branch (1-based) and expression it came from."""
    out: dict[Flow, Flow] = {}
    for n, (part, text) in enumerate(zip(parts, texts), 1):
        for f in part.flows:
            out.setdefault(f, Flow(f.source, f.transform, f.masking, f"UNION branch {n}: {text or f.source.name}",
                                   f.guess))
    return frozenset(out.values())


@handler("Generate")
def generate(node: Node, walk: Walk) -> list[Attribute]:
    out = children(node, walk)
    gens = node.trees("generator")
    value = walk.expression(gens[0]) if gens else Origin()
    new = attributes(node.trees("generatorOutput"))
    fields = dict(value.fields)  # a generator read column by column (a Python UDTF)
    each = len(fields) == len(new) and all(a.name in fields for a in new)
    for a in new:
        walk.define(a.expr_id, fields[a.name] if each else combine([value], Transform.DERIVED, value.sql))
    return out + new


@handler("Expand", on_null="outputs read by position from the child")
def expand(node: Node, walk: Walk) -> list[Attribute]:
    inputs = children(node, walk)
    outs = attributes(node.trees("output"))
    projections = node.get("projections")
    if projections is None:
        return expand_by_position(node, walk, inputs, outs)
    for i, a in enumerate(outs):
        parts = [walk.expression(p[i]) for p in projections if isinstance(p, tuple) and i < len(p)
                 and isinstance(p[i], Node)]
        shown = next((p.sql for p in parts if p.flows), parts[0].sql if parts else None)  # not a row's NULL
        walk.define(a.expr_id, combine(parts, Transform.COPY, shown))
    return outs


def expand_by_position(node: Node, walk: Walk, inputs: list[Attribute], outs: list[Attribute]) -> list[Attribute]:
    """Expand whose ``projections`` Spark wrote as null (a Scala ``Vector`` field: ``TreeNode``
    only converts ``Seq`` fields that are ``List``/``Stream``-like to JSON).

    Grouping sets lay out ``child.output ++ groupByAttrs :+ spark_grouping_id``: the first
    outputs copy the child's by position, the grouping attributes copy the child's alias of
    the same name, the grouping id reads no column (the walk records the null field).
    """
    for i, a in enumerate(outs):
        if i < len(inputs):
            src: Attribute | None = inputs[i]
        else:
            src = next((c for c in reversed(inputs) if c.name == a.name), None)
        if src is not None and src.expr_id in walk.env:
            walk.define(a.expr_id, walk.env[src.expr_id])
    return outs


# -- CTEs and views --------------------------------------------------------------------


@handler("WithCTE")
def with_cte(node: Node, walk: Walk) -> list[Attribute]:
    plan_index = node.get("plan")
    out: list[Attribute] = []
    for i, child in enumerate(node.children):
        attrs = walk.plan(child)
        if i == plan_index or (not isinstance(plan_index, int) and child.name != "CTERelationDef"):
            out = attrs
    return out


@handler("CTERelationDef")
def cte_def(node: Node, walk: Walk) -> list[Attribute]:
    """A CTE's outputs and their origins as defined here: the first reference shares the
    definition's exprIds, so a node above it (a UNION) may redefine them for its own parents."""
    out = children(node, walk)
    walk.ctes[node.get("id")] = [(a, walk.env.get(a.expr_id)) for a in out]
    return out


@handler("CTERelationRef")
def cte_ref(node: Node, walk: Walk) -> list[Attribute]:
    return reference(node, walk, node.get("cteId"))


def reference(node: Node, walk: Walk, key: Any) -> list[Attribute]:
    """A read of a relation defined elsewhere in the plan (``walk.ctes[key]``): its outputs copy,
    by position, the origins the definition gave its own."""
    outs = attributes(node.trees("output"))
    for a, (_, origin) in zip(outs, walk.ctes.get(key, [])):
        if origin is not None:
            walk.define(a.expr_id, origin)
    return outs


def _loop_key(loop_id: Any) -> tuple[str, Any]:
    return ("UnionLoop", loop_id)


@handler("UnionLoop")
def union_loop(node: Node, walk: Walk) -> list[Attribute]:
    """``WITH RECURSIVE r AS (anchor UNION ALL recursion)``: the anchor's rows, then the rows the
    recursion makes from the rows so far (it reads them through ``UnionLoopRef``).

    Each output is a UNION of the anchor's column and the recursion's value at its position
    (:func:`union_of`). What the recursion reads of the loop is what the loop outputs, so the
    recursion is walked again with the outputs found so far until no output gains a (source,
    transform) pair it did not have in an earlier round: a value two steps from its column
    (``SELECT b, a + b FROM fib``) is followed back to it, however many rounds that takes. The
    row influences are those of the anchor and of the recursion's last walk
    (docs/reference/semantics.md).

    The walk ends: the pairs an output has had (``seen``) only grow, each round but the last adds
    one, and every pair is a column of the plan's leaves with one of the finitely many transforms.
    """
    anchor = walk.plan(node.children[0]) if node.children else []
    ids = [i.get("id") for i in node.get("outputAttrIds") or () if isinstance(i, dict)]
    outs = [Attribute(ids[i] if i < len(ids) else a.expr_id, a.name, a.data_type, a.nullable)
            for i, a in enumerate(anchor)]
    first = [walk.env.get(a.expr_id, Origin()) for a in anchor]
    current = first
    saved = walk.influences
    added: list[Influence] = []
    seen = [_sources(o) for o in first]
    try:
        while True:  # until a round adds no pair (it ends: see above)
            walk.ctes[_loop_key(node.get("id"))] = list(zip(outs, current))
            walk.influences = []
            recursion = walk.plan(node.children[1]) if len(node.children) > 1 else []
            added = walk.influences
            current = [union_of([first[i], walk.env.get(recursion[i].expr_id, Origin())])
                       if i < len(recursion) else first[i] for i in range(len(outs))]
            found = [_sources(o) for o in current]
            if all(f <= s for f, s in zip(found, seen)):
                break
            seen = [f | s for f, s in zip(found, seen)]
    finally:
        walk.influences = saved + added
    for a, o in zip(outs, current):
        walk.define(a.expr_id, o)
    return outs


def _sources(o: Origin) -> frozenset[tuple[Column, Transform]]:
    return frozenset((f.source, f.transform) for f in (*o.flows, *o.influences))


@handler("UnionLoopRef")
def union_loop_ref(node: Node, walk: Walk) -> list[Attribute]:
    """The rows of a recursive CTE so far, read by its recursion (see :func:`union_loop`)."""
    return reference(node, walk, _loop_key(node.get("loopId")))


@handler("View")
def view(node: Node, walk: Walk) -> list[Attribute]:
    """Temp views are transparent; a persistent view is a dataset of kind ``view``."""
    desc = node.get("desc") or {}
    ident = desc.get("identifier") if isinstance(desc, dict) else None
    if node.get("isTempView") is not False or not isinstance(ident, dict) or not ident.get("table"):
        return children(node, walk)
    fact = {"table": ident, "view": True, "format": "view"}
    attrs = _view_output(node)
    if not attrs and node.children:  # an unusual shape: its walked outputs, without its row influences
        saved, walk.influences = walk.influences, []
        try:
            attrs = walk.plan(node.children[0])
        finally:
            walk.influences = saved
    return define_leaf(walk, fact, attrs)


def _view_output(node: Node) -> list[Attribute]:
    child = node.children[0] if node.children else None
    while child is not None and child.name in ("SubqueryAlias", "Project") and not child.trees("projectList"):
        child = child.children[0] if child.children else None
    if child is not None and child.name == "Project":
        return [Attribute(i.expr_id, i.get("name") or "?", i.get("dataType"), bool(i.get("nullable", True)))
                for i in child.trees("projectList") if i.expr_id is not None]
    return []


# -- leaves ----------------------------------------------------------------------------

@handler(*LEAVES)
def leaf(node: Node, walk: Walk) -> list[Attribute]:
    outs = attributes(node.trees("output")) or attributes(node.trees("dataCols") + node.trees("partitionCols"))
    if not outs:
        return []
    fact = walk.leaves.get(outs[0].expr_id) or json_fact(node, outs, walk.scope)
    return define_leaf(walk, fact, outs)


@handler("ResolvedInlineTable")
def inline_table(node: Node, walk: Walk) -> list[Attribute]:
    """``VALUES`` rows Spark evaluates only when the query runs (``now()``): in-memory data, as a
    ``LocalRelation`` of evaluated rows is, named by the text of its rows."""
    outs = attributes(node.trees("output"))
    if not outs:
        return []
    rows = [[walk.expression(e).text() if isinstance(e, Node) else str(e) for e in row]
            for row in node.get("rows") or () if isinstance(row, tuple)]
    fact = {"node": node.name, "columns": [a.name for a in outs], "scope": walk.scope,
            "content": json.dumps(rows, default=str), "format": "local"}
    return define_leaf(walk, fact, outs)


def define_leaf(walk: Walk, fact: dict[str, Any], outs: list[Attribute]) -> list[Attribute]:
    datasets = datasets_of(fact)
    columns, origins = leaf_template(tuple(ds.name for ds in datasets), outs)
    for ds in datasets:
        walk.datasets.setdefault(ds.name, ds)
    for dataset, name, dtype, nullable, i in columns:
        walk.columns[(dataset, name)] = Attribute(outs[i].expr_id, name, dtype, nullable)
    for a, o in zip(outs, origins):
        walk.define(a.expr_id, o)
    return outs


#: A leaf's columns and origins by (its datasets, its attributes' names and types): the same table
#: read by the next query defines the same frozen origins, so they are made once. Bounded by the
#: attributes held (wide leaves count for what they hold), emptied when full.
_LEAF_TEMPLATES: dict[tuple, tuple[list[tuple[str, str, Any, bool, int]], list[Origin]]] = {}
_LEAF_TEMPLATES_MAX = 100_000
_leaf_templates_held = 0


def leaf_template(names: tuple[str, ...], outs: list[Attribute]
                  ) -> tuple[list[tuple[str, str, Any, bool, int]], list[Origin]]:
    """``(dataset, column, type, nullable, index in outs)`` of every stored column (struct fields
    flattened) and each attribute's origin: a copy of its column in every dataset.

    >>> cols, origins = leaf_template(("t",), [Attribute(1, "a", "int"), Attribute(2, "b", "string")])
    >>> cols, [o.text() for o in origins]
    ([('t', 'a', 'int', True, 0), ('t', 'b', 'string', True, 1)], ['a', 'b'])
    >>> leaf_template(("t",), [Attribute(8, "a", "int"), Attribute(9, "b", "string")])[1][0] is origins[0]
    True
    """
    global _leaf_templates_held
    key = (names, tuple((a.name, a.data_type if not isinstance(a.data_type, (dict, list))
                         else json.dumps(a.data_type, sort_keys=True), a.nullable) for a in outs))
    found = _LEAF_TEMPLATES.get(key)
    if found is not None:
        return found
    columns = [(dataset, name, dtype, nullable, i) for dataset in names for i, a in enumerate(outs)
               for name, dtype, nullable in flatten(column_path.quote(a.name), a.data_type, a.nullable)]
    origins = [Origin(frozenset(Flow(Column(dataset, column_path.quote(a.name)), Transform.COPY) for dataset in names),
                      frozenset(), sqltext.column(a.name), 1) for a in outs]
    if _leaf_templates_held + len(columns) > _LEAF_TEMPLATES_MAX:
        _LEAF_TEMPLATES.clear()
        _leaf_templates_held = 0
    _leaf_templates_held += len(columns)
    _LEAF_TEMPLATES[key] = (columns, origins)
    return columns, origins


def flatten(name: str, data_type: Any, nullable: bool) -> list[tuple[str, str, bool]]:
    """A column (``name`` as stored) and, for structs, its nested fields as paths: ``address.city``."""
    if isinstance(data_type, dict) and data_type.get("type") == "struct":
        out = [(name, "struct", nullable)]
        for f in data_type.get("fields", []):
            out += flatten(column_path.child(name, f['name']), f.get("type"), bool(f.get("nullable", True)))
        return out
    if isinstance(data_type, dict):
        return [(name, str(data_type.get("type", "complex")), nullable)]
    return [(name, str(data_type) if data_type is not None else None, nullable)]


def json_fact(node: Node, outs: list[Attribute], scope: str | None) -> dict[str, Any]:
    """What the plan JSON alone says about a leaf (used when no JVM facts were read)."""
    for key in ("catalogTable", "tableMeta"):
        table = node.get(key)
        if isinstance(table, dict) and isinstance(table.get("identifier"), dict):
            return {"table": table["identifier"], "format": table.get("provider")}
    return {"node": node.name, "columns": [a.name for a in outs], "scope": scope,
            "content": leaf_content(node) + (f"#{outs[0].expr_id}" if node.name in UNNAMED_CONTENT else ""),
            "format": {"LogicalRDD": "rdd", "LocalRelation": "local", "Range": "range"}.get(node.name)}


#: Fields that say nothing about a leaf's content (its attributes carry per-run exprIds).
_NOT_CONTENT = ("output", "isStreaming", "stream", "outputOrdering", "producedAttributes")


#: Leaves whose plan JSON holds nothing of their data (``rdd`` is written as null): named by
#: their first attribute's exprId, unique per JVM but not stable across re-runs.
UNNAMED_CONTENT = ("LogicalRDD", "ExternalRDD")


def leaf_content(node: Node) -> str:
    """The leaf's own fields (Range start/end/step, LocalRelation rows...) as stable text."""
    fields = {k: v for k, v in node.fields.items() if k not in _NOT_CONTENT and not isinstance(v, Node)
              and not (isinstance(v, tuple) and any(isinstance(t, Node) for t in v))}
    return json.dumps(fields, sort_keys=True, default=str)


# -- opaque nodes ------------------------------------------------------------------------

#: Nodes running user code over whole rows (typed Dataset ops, pandas/arrow UDFs, scripts):
#: their new outputs are derived from what they reference, by design rather than by fallback.
OPAQUE = ("DeserializeToObject", "SerializeFromObject", "MapPartitions", "MapElements", "AppendColumns",
          "AppendColumnsWithObject", "TypedFilter", "MapGroups", "FlatMapGroupsWithState", "CoGroup",
          "MapPartitionsInR", "ScriptTransformation", "AttachDistributedSequence", "BatchEvalPython",
          "ArrowEvalPython")
#: pandas and Arrow functions are read column by column: :mod:`lineage_listener.lineage.python`.


@handler(*OPAQUE)
def opaque(node: Node, walk: Walk) -> list[Attribute]:
    return fallback(node, walk)


# -- fallback --------------------------------------------------------------------------


@handler(DEFAULT)
def fallback(node: Node, walk: Walk) -> list[Attribute]:
    """Unknown node: new outputs derive from what the node references, else from all inputs."""
    inputs = children(node, walk)
    referenced: list[Origin] = []
    for key, value in node.fields.items():
        if key in ("output",):
            continue
        trees = value if isinstance(value, tuple) else (value,)
        for t in trees:
            if isinstance(t, Node) and not t.cls.startswith("org.apache.spark.sql.catalyst.plans"):
                try:
                    referenced.append(walk.expression(t))
                except Exception:  # noqa: BLE001 - a fallback must not fail
                    log.debug("fallback could not evaluate %s.%s", node.name, key, exc_info=True)
    if not any(o.flows for o in referenced):
        referenced = [walk.env[a.expr_id] for a in inputs if a.expr_id in walk.env]
    outs = attributes(node.trees("output"))
    if not outs:  # new attributes the node declares in other fields (e.g. a generator's output)
        known = {a.expr_id for a in inputs}
        new = [a for key, value in node.fields.items() if isinstance(value, tuple)
               for a in attributes(value) if a.expr_id not in known and a.expr_id not in walk.env]
        outs = inputs + new
    value = combine(referenced, Transform.DERIVED, None)
    for a in outs:
        if a.expr_id not in walk.env:
            walk.define(a.expr_id, Origin(value.flows, value.influences, sqltext.column(a.name), 1))
    return outs


__all__ = ["HANDLERS", "handler"]
