"""Python code in a plan: UDFs, pandas and Arrow functions, UDTFs, read column by column.

Each Python function of a plan carries its pickled command (``func``: ``{"command": base64,
"pythonVer": ...}``, read from the JVM by the capture). :func:`reading` hands it to
:mod:`lineage_listener.pycode` with the function's :class:`~lineage_listener.pycode.Shape`; the
handlers here turn the reading into origins (docs/reference/semantics.md, "Python code"):

- a scalar or pandas UDF (``PythonUDF``): its value from the arguments it uses; a struct
  result field by field (``Origin.fields``, so ``udf(...).field`` is that field's);
- ``mapInPandas`` / ``mapInArrow``: each output column from the input columns it uses;
- ``applyInPandas`` (grouped, cogrouped) and Arrow's: the same, grouping keys stay ``group_by``;
- a Python UDTF (``PythonUDTF`` in a ``Generate``): each output column from its arguments;
- a DataFrame made from a Python RDD (a ``LogicalRDD`` whose fact the capture read,
  :mod:`lineage_listener.capture.reading.rdds`): back through the RDD's functions to the DataFrame its
  rows came from, or at least to the datasets its leaf RDDs read.

A function that cannot be read keeps the conservative rule (every output from every input) and
its edges are marked as a guess; :meth:`Walk.guessed` records the one line that says why.
"""
from __future__ import annotations

import base64
import binascii
from dataclasses import replace
from typing import Any

import sqlglot.expressions as exp

from lineage_listener import pycode
from lineage_listener.lineage import column_path, nodes, sqltext
from lineage_listener.lineage.datasets import datasets_of
from lineage_listener.lineage.model import (Attribute, Column, Flow, Influence, Origin, Transform, combine, origin,
                                            stronger)
from lineage_listener.lineage.walker import Walk, attributes, handler, rule
from lineage_listener.plan import compact
from lineage_listener.plan.tree import Node, from_compact
from lineage_listener.pycode.reading import (AGGREGATE_ITER, AGGREGATE_KIND, AGGREGATES, ARROW_EVAL_TYPES,
                                             COGROUPED, EVAL_TYPES, GROUPED, GROUPED_ITER, MAP, RDD, SCALAR,
                                             SCALAR_ITER, UDTF)

#: Transforms of a reading, as the walk names them.
_TRANSFORMS = {"copy": Transform.COPY, "derived": Transform.DERIVED, "aggregate": Transform.AGGREGATE}


def command_of(node: Node) -> bytes | None:
    """The pickled command of a ``PythonUDF`` / ``PythonUDTF`` (None when the capture did not read it)."""
    func = node.get("func")
    text = func.get("command") if isinstance(func, dict) else None
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def kind_of(node: Node) -> str | None:
    eval_type = node.get("evalType")
    return EVAL_TYPES.get(eval_type) if isinstance(eval_type, int) else None


def reading(node: Node, shape: pycode.Shape, walk: Walk) -> pycode.Reading:
    """The reading of the function ``node`` carries, in ``shape``; a guess is recorded (once)."""
    command = command_of(node)
    label = str(node.get("name") or "?")
    if command is None:
        found = pycode.fallback(shape, "its pickled command was not read from the JVM", label)
    else:
        found = pycode.read(command, shape)
    note = found.note()
    if note is not None:
        walk.guessed(note)
    return found


def output_origin(read: pycode.Output, inputs: list[Origin], sql: exp.Expression | None,
                  raise_to: Transform | None = None) -> Origin:
    """One output of a reading: the flows of the inputs it uses, at the reading's transform (a
    guess marks every flow), their influences kept."""
    flows: set[Flow] = set()
    influences: set[Influence] = set()
    for index, transform in read.flows:
        if not 0 <= index < len(inputs):
            continue
        t = _TRANSFORMS[transform]
        if raise_to is not None:
            t = stronger(t, raise_to)
        part = inputs[index]
        influences |= part.influences
        for f in part.flows:
            flows.add(Flow(f.source, stronger(f.transform, t), f.masking, guess=f.guess or read.guess))
    return origin(flows, influences, sql)


def row_filters(walk: Walk, read: pycode.Reading, inputs: list[Origin], label: str) -> None:
    """The input columns that decide which rows a function keeps: ``filter`` influences."""
    for index in sorted(read.filters):
        if 0 <= index < len(inputs):
            part = inputs[index]
            walk.influences.extend(sorted({Influence(f.source, Transform.FILTER, label) for f in part.flows}
                                          | {Influence(i.source, Transform.FILTER, label) for i in part.influences},
                                          key=repr))


def _struct_fields(data_type: Any) -> tuple[str, ...]:
    if isinstance(data_type, dict) and data_type.get("type") == "struct":
        return tuple(str(f.get("name")) for f in data_type.get("fields", []) if isinstance(f, dict))
    return ()


def _name(node: Node) -> str:
    return str(node.get("name") or "python_udf")


# -- scalar, pandas and aggregate UDFs --------------------------------------------------


@rule("PythonUDF", "PythonUDAF")
def python_udf(node: Node, walk: Walk) -> Origin:
    """A Python UDF's value from the arguments its code uses; a struct result field by field."""
    args = [walk.expression(c) for c in node.children]
    kind = kind_of(node) or (AGGREGATE_KIND if node.name == "PythonUDAF" else None)
    sql = sqltext.call(_name(node), [a.sql if a.sql is not None else exp.null() for a in args])
    raise_to = Transform.AGGREGATE if kind in AGGREGATES else Transform.DERIVED
    if kind not in (SCALAR, SCALAR_ITER, AGGREGATE_KIND, AGGREGATE_ITER):
        return combine(args, raise_to, sql)
    fields = _struct_fields(node.get("dataType"))
    shape = pycode.Shape(kind, tuple(f"_{i}" for i in range(len(args))), fields,
                         arrow=node.get("evalType") in ARROW_EVAL_TYPES)
    read = reading(node, shape, walk)
    lift = Transform.AGGREGATE if kind in AGGREGATES else None
    outs = [output_origin(o, args, sql, lift) for o in read.outputs]
    if not fields:
        return outs[0]
    parts = [replace(o, sql=exp.Dot(this=sql, expression=exp.to_identifier(f))) for o, f in zip(outs, fields)]
    flows: set[Flow] = set()
    influences: set[Influence] = set()
    for o in outs:
        flows |= o.flows
        influences |= o.influences
    whole = origin(flows, influences, sql)
    return replace(whole, fields=tuple(zip(fields, parts)))


@rule("PythonUDTF")
def python_udtf(node: Node, walk: Walk) -> Origin:
    """A Python UDTF's rows: each output column (``Origin.fields``, by name) from the arguments
    its ``eval`` (and ``terminate``) use. A ``TABLE`` argument is read as a whole."""
    args = [walk.expression(c) for c in node.children]
    sql = sqltext.call(_name(node), [a.sql if a.sql is not None else exp.null() for a in args])
    whole = combine(args, Transform.DERIVED, sql)
    fields = _struct_fields(node.get("elementSchema"))
    if not fields or any(c.name.startswith("FunctionTableSubquery") for c in node.children):
        return whole
    read = reading(node, pycode.Shape(UDTF, tuple(f"_{i}" for i in range(len(args))), fields), walk)
    parts = [output_origin(o, args, exp.Dot(this=sql, expression=exp.to_identifier(f)))
             for o, f in zip(read.outputs, fields)]
    flows: set[Flow] = set()
    for p in parts:
        flows |= p.flows
    return replace(origin(flows, whole.influences, sql), fields=tuple(zip(fields, parts)))


# -- pandas and Arrow functions over frames ----------------------------------------------


def _function(node: Node) -> Node | None:
    found = node.trees("functionExpr")
    return found[0] if found else None


def shown(read: pycode.Output, inputs: list[Origin], name: str) -> exp.Expression | None:
    """How an output of a function is shown: the input it copies, else the function of the inputs
    it uses (``domains(email)``)."""
    used = sorted({i for i, _ in read.flows if 0 <= i < len(inputs)})
    if len(used) == 1 and all(t == "copy" for _, t in read.flows) and not read.guess:
        return inputs[used[0]].sql
    return sqltext.call(name, [inputs[i].sql if inputs[i].sql is not None else exp.null() for i in used])


def _define(walk: Walk, outs: list[Attribute], read: pycode.Reading, inputs: list[Origin], name: str) -> None:
    """Each output of a frame function, from the inputs its reading names."""
    for attr, o in zip(outs, read.outputs):
        walk.define(attr.expr_id, output_origin(o, inputs, shown(o, inputs, name)))


@handler("MapInPandas", "MapInArrow", "PythonMapInArrow")
def map_in(node: Node, walk: Walk) -> list[Attribute]:
    """``mapInPandas`` / ``mapInArrow``: each output column from the input columns its function uses."""
    nodes.children(node, walk)
    udf = _function(node)
    outs = attributes(node.trees("output"))
    if udf is None or not outs:
        return nodes.fallback(node, walk)
    inputs = [walk.expression(c) for c in udf.children]
    names = tuple(str(c.get("name") or f"_{i}") for i, c in enumerate(udf.children))
    shape = pycode.Shape(MAP, names, tuple(a.name for a in outs), arrow=udf.get("evalType") in ARROW_EVAL_TYPES)
    read = reading(udf, shape, walk)
    _define(walk, outs, read, inputs, _name(udf))
    row_filters(walk, read, inputs, read.label)
    return outs


@handler("FlatMapGroupsInPandas", "FlatMapGroupsInArrow")
def grouped_map(node: Node, walk: Walk) -> list[Attribute]:
    """``groupBy(...).applyInPandas`` / ``applyInArrow``: each output column from the columns its
    function uses; the grouping keys decide the groups (``group_by``)."""
    nodes.children(node, walk)
    udf = _function(node)
    outs = attributes(node.trees("output"))
    keys = node.trees("groupingAttributes") or node.trees("groupingAttrs")
    if udf is None or not outs:
        return nodes.fallback(node, walk)
    data = list(udf.children)
    inputs = [walk.expression(c) for c in (*keys, *data)]
    names = tuple(str(c.get("name") or f"_{i}") for i, c in enumerate((*keys, *data)))
    kind = GROUPED_ITER if kind_of(udf) == GROUPED_ITER else GROUPED
    shape = pycode.Shape(kind, names, tuple(a.name for a in outs), ((len(keys), len(data)),),
                         arrow=udf.get("evalType") in ARROW_EVAL_TYPES)
    read = reading(udf, shape, walk)
    _define(walk, outs, read, inputs, _name(udf))
    row_filters(walk, read, inputs, read.label)
    nodes.add_influences(walk, keys, Transform.GROUP_BY)
    return outs


@handler("FlatMapCoGroupsInPandas", "FlatMapCoGroupsInArrow")
def cogrouped_map(node: Node, walk: Walk) -> list[Attribute]:
    """``cogroup(...).applyInPandas``: each output column from the columns of either side its
    function uses; each side's keys decide the groups (``group_by``)."""
    if len(node.children) != 2:
        return nodes.fallback(node, walk)
    left = walk.plan(node.children[0])
    right = walk.plan(node.children[1])
    udf = _function(node)
    outs = attributes(node.trees("output"))
    lk, rk = node.get("leftGroupingLen"), node.get("rightGroupingLen")
    if udf is None or not outs or not isinstance(lk, int) or not isinstance(rk, int):
        return nodes.fallback(node, walk)
    columns = [*left, *right]
    inputs = [walk.env.get(a.expr_id, Origin(sql=sqltext.column(a.name))) for a in columns]
    shape = pycode.Shape(COGROUPED, tuple(a.name for a in columns), tuple(a.name for a in outs),
                         ((lk, len(left) - lk), (rk, len(right) - rk)), arrow=udf.get("evalType") in ARROW_EVAL_TYPES)
    read = reading(udf, shape, walk)
    _define(walk, outs, read, inputs, _name(udf))
    row_filters(walk, read, inputs, read.label)
    for side, count in ((left, lk), (right, rk)):
        for a in side[:count]:
            origin_of_key = walk.env.get(a.expr_id)
            if origin_of_key is not None:
                walk.influences.extend(sorted({Influence(f.source, Transform.GROUP_BY, a.name)
                                               for f in origin_of_key.flows}, key=repr))
    return outs


# -- DataFrames made from Python RDDs ---------------------------------------------------


def rdd_leaf(node: Node, walk: Walk, fact: dict[str, Any]) -> list[Attribute]:
    """A ``LogicalRDD`` made by Python functions (``df.rdd.map(...).toDF()``): the DataFrame its
    rows came from is walked (its plan, read by the capture), then each output column comes from
    the columns of that DataFrame the functions use. When that DataFrame is not known, the
    datasets the RDD read are the floor: every output from every column read, a guess."""
    outs = attributes(node.trees("output"))
    names = tuple(a.name for a in outs)
    functions = [f for f in fact.get("functions") or () if isinstance(f, dict)]
    text = fact.get("plan")
    if isinstance(text, str):
        leaves = {int(k): v for k, v in (fact.get("plan_leaves") or {}).items()}
        walk.leaves = {**walk.leaves, **leaves}
        raw, _ = compact.load(text)
        inner = walk.plan(from_compact(raw))
        inputs = [walk.env.get(a.expr_id, Origin(sql=sqltext.column(a.name))) for a in inner]
        shape = pycode.Shape(RDD, tuple(a.name for a in inner), names)
        command = command_of(Node("PythonRDD", {"func": functions[0]})) if len(functions) == 1 else None
        if command is not None and not fact.get("shuffled"):
            read = pycode.read(command, shape)
        else:
            why = "a shuffle (reduceByKey, groupByKey, join...)" if fact.get("shuffled") else \
                f"{len(functions)} Python steps apart" if len(functions) != 1 else "its command was not read"
            read = pycode.fallback(shape, f"the RDD pipeline has {why}", "an RDD pipeline")
        note = read.note()
        if note is not None:
            walk.guessed(note.replace("Python function", "Python RDD function", 1))
        for attr, o in zip(outs, read.outputs):
            walk.define(attr.expr_id, output_origin(o, inputs, shown(o, inputs, "rdd")))
        row_filters(walk, read, inputs, read.label)
        return outs
    return _rdd_floor(node, walk, fact, outs)


def _rdd_floor(node: Node, walk: Walk, fact: dict[str, Any], outs: list[Attribute]) -> list[Attribute]:
    """The datasets an RDD's leaves read, when the DataFrame it came from is not known: every
    output from every column read, marked as a guess (never an anonymous source)."""
    flows: set[Flow] = set()
    for leaf in fact.get("leaves") or ():
        if not isinstance(leaf, dict) or not leaf.get("paths"):
            continue
        for ds in datasets_of({"paths": leaf["paths"]}):
            walk.datasets.setdefault(ds.name, ds)
            for column in leaf.get("columns") or ():
                flows.add(Flow(Column(ds.name, column_path.quote(str(column))), Transform.DERIVED, guess=True))
    if not flows:  # rows made in the driver (``parallelize``, 3.5's ``createDataFrame(list)``): in-memory data
        return nodes.define_leaf(walk, nodes.json_fact(node, outs, walk.scope), outs)
    walk.guessed(f"Python RDD functions made {', '.join(a.name for a in outs)}: "
                 f"{fact.get('reason') or 'the DataFrame its rows came from is not known'}")
    for attr in outs:
        walk.define(attr.expr_id, Origin(frozenset(flows), frozenset(), sqltext.column(attr.name), 1))
    return outs


__all__ = ["command_of", "reading", "output_origin", "python_udf", "python_udtf", "map_in", "grouped_map",
           "cogrouped_map", "rdd_leaf"]
