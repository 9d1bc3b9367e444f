"""Statements Spark rejects during analysis: a failed ``queries`` row, nothing else.

Spark 4 reports a statement its analyzer rejects (an unresolved column, a missing
table, a type mismatch...) to every ``QueryExecutionListener`` through ``onFailure``
with action ``analyze``; Spark 3.5 does not call listeners for them at all. There is
no analyzed plan to read (asking for it re-raises the user's error, and PySpark then
logs it a second time), so the record is what Spark said: the action, the SQL text
where known, the error class and message. No edges, no datasets: an unresolved plan
names nothing for certain. Capture did nothing wrong, so nothing is logged above debug.
"""
from __future__ import annotations

from typing import Any

from lineage_listener import redact
from lineage_listener.capture.jvm import jvm_call_failed

log = redact.logger(__name__)

#: ``funcName`` Spark 4 gives ``onFailure`` for a statement rejected during analysis.
ANALYZE = "analyze"


def is_rejected(func_name: str) -> bool:
    """True for the action Spark reports a rejected statement with.

    >>> is_rejected("analyze"), is_rejected("collect")
    (True, False)
    """
    return func_name == ANALYZE


def _call(obj: Any, *names: str) -> str | None:
    """The first of ``obj``'s no-argument JVM methods ``names`` that answers, as text."""
    for name in names:
        try:
            value = getattr(obj, name)()
        except (*jvm_call_failed(), AttributeError, TypeError):
            continue
        if value is not None:
            return str(value)
    return None


def error_text(exception: Any) -> str:
    """``<exception class>: [ERROR_CLASS] message`` without the plan Spark appends (redacted
    later, at the batch boundary, like every stored text).

    >>> error_text("boom")
    'boom'
    """
    if not hasattr(exception, "getClass"):
        return str(exception)[:4000]
    kind = _call(exception.getClass(), "getSimpleName") or "Exception"
    condition = _call(exception, "getCondition", "getErrorClass")  # getCondition: Spark 4
    message = _call(exception, "getSimpleMessage", "getMessage") or ""
    if condition and not message.startswith(f"[{condition}]"):
        message = f"[{condition}] {message}"
    return f"{kind}: {message}"[:4000]


def sql_text(qe: Any) -> str | None:
    """The SQL text of a ``spark.sql`` statement (None for the DataFrame API)."""
    try:
        option = qe.logical().origin().sqlText()
        return str(option.get()) if option is not None and option.isDefined() else None
    except jvm_call_failed():
        return None


def command(qe: Any) -> str | None:
    """The class of the parsed (unresolved) plan's root: ``Project``, ``InsertIntoStatement``..."""
    try:
        return str(qe.logical().nodeName())
    except jvm_call_failed():
        return None


def noted(func_name: str, error: str) -> None:
    """The one trace capture leaves: a debug line (the user's own error, not capture's)."""
    log.debug("lineage-listener: Spark rejected a statement (%s): %s", func_name, error[:300])
