"""The text of the ``spark.sql`` statement a query came from.

Spark's parser records the statement text in the origin of the plan nodes it makes. Analysis can
replace the root by a node of its own without that origin: ``CREATE TABLE t USING parquet AS SELECT ...``
runs as ``CreateDataSourceTableAsSelectCommand``, whose origin is empty while its query (the parsed
``SELECT``) still carries the whole statement. So the root's text is taken, else the first node below it
that has one, provided that node does not start the statement: a text starting at the node is that of a
``spark.sql`` *query* which the DataFrame API then wrote (``spark.sql("SELECT ...").write...``), not the
text of the write. Nodes parsed from a view's definition (their origin names the view) are skipped.
``Facts.java`` (``head``) does the same on the JVM for the compact plan reader.

>>> statement_text(None) is None
True
"""
from __future__ import annotations

from collections import deque
from typing import Any

from lineage_listener.capture.jvm import jvm_call_failed

#: Plan nodes looked at below the root; with py4j every node costs a few calls.
NODES = 8


def _opt(option: Any) -> Any:
    return option.get() if option is not None and option.isDefined() else None


def statement_text(plan: Any, nodes: int = NODES) -> str | None:
    """The SQL text of the statement ``plan`` (a JVM logical plan) came from, or None (DataFrame API)."""
    if plan is None:
        return None
    todo, seen = deque([plan]), 0
    try:
        while todo and seen <= nodes:
            node = todo.popleft()
            seen += 1
            origin = node.origin()
            if _opt(origin.objectType()) is not None:
                continue  # parsed from a view's (or function's) own text
            text = _opt(origin.sqlText())
            if text is not None:
                start = _opt(origin.startIndex())
                if node is plan or (start is not None and str(text)[:int(start)].strip()):
                    return str(text)
                return None
            for kids in (node.innerChildren(), node.children()):
                it = kids.iterator()
                while it.hasNext():
                    todo.append(it.next())
    except jvm_call_failed():
        return None
    return None
