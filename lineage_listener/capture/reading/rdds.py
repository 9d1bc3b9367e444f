"""DataFrames made from Python RDDs: the facts of their ``LogicalRDD`` leaves, read by the bridge jar.

``df.rdd.map(...).toDF()`` and ``spark.createDataFrame(rdd, schema)`` give a plan whose leaf is a
``LogicalRDD``: the plan says nothing of where its rows came from. The bridge jar's
``PlanReader.rdds`` follows the leaf's RDD down its dependencies (``RddLineage``): the pickled
Python functions the rows went through, and the DataFrame they came from (its analyzed plan,
when Python still holds it) or else the datasets its leaf RDDs read. This module puts that in the
leaf's fact (``rdd``), with the facts of the source plan's own leaves, for the walk
(:mod:`lineage_listener.lineage.python`). Without the bridge jar a ``LogicalRDD`` stays an
anonymous in-memory dataset.
"""
from __future__ import annotations

import json
from typing import Any

from lineage_listener import redact
from lineage_listener.capture.reading import planreader
from lineage_listener.capture.reading.facts import FactCache, resolve
from lineage_listener.capture.jvm import jvm_call_failed
from lineage_listener.lineage.datasets import RelationFact
from lineage_listener.plan import compact
from lineage_listener.plan.text import has_class

log = redact.logger(__name__)

#: The leaf whose facts this module reads.
LEAF = "LogicalRDD"
#: Reasons already logged: one line per reason, not one per query.
_said: set[str] = set()
#: How many round trips deep a DataFrame made from an RDD made from a DataFrame... is followed.
MAX_DEPTH = 4


def leaves(plan: Any, current: tuple[str, str] | None, cache: FactCache, depth: int = 0) -> dict[int, RelationFact]:
    """Facts of the ``LogicalRDD`` leaves of the JVM plan ``plan`` that Python functions made, keyed
    by the leaf's first output id: ``{"rdd": {...}}`` (see ``RddLineage.java``)."""
    reader = planreader.reader_for(plan)
    if reader is None or depth > MAX_DEPTH:
        return {}
    try:
        found = reader.rdds(plan)
    except jvm_call_failed() as exc:  # the DataFrame stays in-memory data: said once, not silently
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if reason not in _said:
            _said.add(reason)
            log.warning("lineage-listener: a DataFrame made from a Python RDD is kept as in-memory data: its RDD "
                        "could not be read (%s)", reason)
        return {}
    out: dict[int, RelationFact] = {}
    for entry in found:
        try:
            first, text, source, source_text = entry[0], entry[1], entry[2], entry[3]
            fact: dict[str, Any] = json.loads(str(text))
        except (*jvm_call_failed(), ValueError, IndexError, TypeError) as exc:
            log.debug("could not read an RDD's facts: %s", exc)
            continue
        if source is not None and source_text is not None:
            fact["plan"] = str(source_text)
            fact["plan_leaves"] = _source_leaves(source, fact["plan"], current, cache, depth)
        out[int(first)] = {"rdd": fact}
    return out


def _source_leaves(source: Any, text: str, current: tuple[str, str] | None, cache: FactCache,
                   depth: int) -> dict[int, RelationFact]:
    """Facts of the leaves of the DataFrame an RDD came from: as the jar read them, the rest by py4j
    (and its own ``LogicalRDD`` leaves, a round trip further back)."""
    try:
        _, read = compact.load(text)
    except (ValueError, KeyError, TypeError):
        return {}
    known: dict[int, RelationFact] = {}
    missing: set[int] = set()
    for eid, fact in read.get("leaves", ()):
        if fact is None:
            missing.add(int(eid))
        else:
            known[int(eid)] = fact
    if missing:
        known.update(resolve(source, missing, current, cache))
    if has_class(text, LEAF):
        known.update(leaves(source, current, cache, depth + 1))
    return known
