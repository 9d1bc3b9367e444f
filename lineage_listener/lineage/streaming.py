"""Plan handlers for Structured Streaming: a foreachBatch micro-batch and stateful operators.

- ``LogicalRDD`` holding a stream's micro-batch (``foreachBatch``): its attributes are the
  stream plan's outputs; the capture put that plan and its sources in the leaf's fact
  (``stream_plan``), so the walk goes through the stream back to its sources.
- Stateful operators running user code per group (``flatMapGroupsWithState``,
  ``applyInPandasWithState``, ``transformWithState``): outputs derive from what they read.
- Watermarks pass rows through; streaming aggregation, ``dropDuplicates`` and joins are the
  batch handlers; an event-time ``window(ts, ...)`` is a column computed from ``ts``, so
  grouping by it is a ``group_by`` on ``ts``.
"""
from __future__ import annotations

from typing import Any

from lineage_listener.lineage import nodes, python, sqltext
from lineage_listener.lineage.model import Attribute, Origin, Transform, combine
from lineage_listener.lineage.walker import Walk, attributes, handler
from lineage_listener.plan.classes import STATEFUL_USER_OPERATORS
from lineage_listener.plan.tree import Node, parse


@handler("LogicalRDD")
def logical_rdd(node: Node, walk: Walk) -> list[Attribute]:
    """A ``LogicalRDD``; a stream's micro-batch in ``foreachBatch`` walks the stream's plan; one made
    from a Python RDD (``df.rdd.map(...).toDF()``) goes back through its functions
    (:func:`lineage_listener.lineage.python.rdd_leaf`)."""
    outs = attributes(node.trees("output"))
    fact: Any = walk.leaves.get(outs[0].expr_id) if outs else None
    if isinstance(fact, dict) and isinstance(fact.get("rdd"), dict):
        return python.rdd_leaf(node, walk, fact["rdd"])
    if not isinstance(fact, dict) or not fact.get("stream_plan"):
        return nodes.leaf(node, walk)
    walk.leaves = {**walk.leaves, **fact.get("stream_leaves", {})}
    inner = walk.plan(parse(fact["stream_plan"]))
    for mine, theirs in zip(outs, inner):  # the same exprIds where Spark kept them; else by position
        if mine.expr_id != theirs.expr_id:
            walk.define(mine.expr_id, walk.env.get(theirs.expr_id, Origin()))
    return outs


@handler("StreamingDataSourceV2ScanRelation")
def v2_stream_scan(node: Node, walk: Walk) -> list[Attribute]:
    """A DSv2 stream source as run (4.x: Kafka, rate...): a leaf named by the capture's facts."""
    return nodes.leaf(node, walk)


#: Fields of stateful operators naming their outputs (pandas: ``outputAttrs``; typed: the object).
_OUTPUT_FIELDS = ("outputAttrs", "output", "outputObjAttr")
#: Fields naming the grouping keys of stateful operators.
_KEY_FIELDS = ("groupingAttributes", "groupingAttrs")


@handler(*STATEFUL_USER_OPERATORS)
def stateful_user_code(node: Node, walk: Walk) -> list[Attribute]:
    """User code per group with state: every output derives from what the code reads (its
    function's inputs and the keys); rows are grouped by the keys (``group_by``)."""
    outs: list[Attribute] = []
    for key in _OUTPUT_FIELDS:
        outs = attributes(node.trees(key))
        if outs:
            break
    if not outs:
        return nodes.fallback(node, walk)
    nodes.children(node, walk)
    referenced = []
    for key, value in node.fields.items():
        if key in _OUTPUT_FIELDS:
            continue
        for tree in value if isinstance(value, tuple) else (value,):
            if isinstance(tree, Node) and not tree.cls.startswith("org.apache.spark.sql.catalyst.plans"):
                referenced.append(walk.expression(tree))
    value = combine(referenced, Transform.DERIVED, None)
    for a in outs:
        walk.define(a.expr_id, Origin(value.flows, value.influences, sqltext.column(a.name), 1))
    for key in _KEY_FIELDS:
        nodes.add_influences(walk, node.trees(key), Transform.GROUP_BY)
    return outs
