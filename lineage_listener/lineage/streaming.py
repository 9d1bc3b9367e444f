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

from lineage_listener.lineage import nodes
from lineage_listener.lineage.model import Attribute, Origin
from lineage_listener.lineage.walker import Walk, attributes, handler
from lineage_listener.plan.classes import STATEFUL_USER_OPERATORS
from lineage_listener.plan.tree import Node, parse


@handler("LogicalRDD")
def logical_rdd(node: Node, walk: Walk) -> list[Attribute]:
    """A ``LogicalRDD``; a stream's micro-batch in ``foreachBatch`` walks the stream's plan."""
    outs = attributes(node.trees("output"))
    fact: Any = walk.leaves.get(outs[0].expr_id) if outs else None
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


@handler(*STATEFUL_USER_OPERATORS)
def stateful_user_code(node: Node, walk: Walk) -> list[Attribute]:
    return nodes.fallback(node, walk)
