"""An action on a command's result is not a statement of its own.

Spark runs a command (``INSERT``, ``CREATE TABLE ... AS``, ``CREATE VIEW``, ``SHOW TABLES``...) as
soon as ``spark.sql`` creates it, and reports that execution to every ``QueryExecutionListener``
(action ``command``, or ``append``/``create``... for DataSource V2 writes; ``multi-commands`` for a
multi-insert, a ``Union`` of commands). The DataFrame
``spark.sql`` returns holds the command's result rows: its ``QueryExecution`` replaced the
command by a ``CommandResult`` (``commandExecuted``). An action on that DataFrame
(``spark.sql(cmd).collect()``, ``.show()``) is reported too, and its analyzed plan is the command
again, so read as is it would be the same write a second time (two ``queries`` rows for one
statement), or a read of an unknown plan (``SHOW TABLES``). It reads rows already in memory: it
is skipped, and the command is captured from its own event. So is a query whose only leaves are
such results (``spark.sql(cmd).limit(5).collect()``): no dataset is read.

>>> reads_result("command", None, {"root": "InsertIntoHadoopFsRelationCommand", "result": True})
False
>>> reads_result("multi-commands", None, {"root": "Union", "result": True})  # a multi-insert's own
False
>>> reads_result("collectToPython", None, {"root": "InsertIntoHadoopFsRelationCommand", "result": True})
True
>>> reads_result("collectToPython", None, {"root": "Project"})
False
>>> from lineage_listener.plan.tree import Plan
>>> reads_only_results("GlobalLimit", Plan('[{"class":"a.GlobalLimit","num-children":1},'
...                                         '{"class":"a.CommandResult","num-children":0}]'))
True
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lineage_listener.capture.jvm import jvm_call_failed, seq
from lineage_listener.capture.multiwrite import MULTI_COMMANDS
from lineage_listener.plan.classes import MULTI_WRITE, WRITE_COMMANDS
from lineage_listener.plan.text import has_class
from lineage_listener.plan.tree import Plan

#: The action name Spark gives a command's own (eager) execution; DataSource V2 writes have others
#: (``append``, ``overwrite``...), but their ``QueryExecution`` still holds the command itself.
COMMAND = "command"
#: What ``QueryExecution.commandExecuted`` holds once the command ran.
RESULT = "CommandResult"


def reads_result(func_name: str, qe: Any, head: Mapping[str, Any] | None) -> bool:
    """True when this action reads the result rows of a command that already ran (and was reported).

    ``head``: the compact reader's head of ``qe`` (its ``result`` key says so), or None: ask ``qe``
    (one py4j call, on the reader without the bridge jar).
    """
    if func_name in (COMMAND, MULTI_COMMANDS):  # the commands' own execution
        return False
    if head is not None:
        return bool(head.get("result"))
    try:
        executed = qe.commandExecuted()
        if str(executed.nodeName()) == MULTI_WRITE:  # a multi-insert's result rows (Spark 3.5)
            return all(str(child.nodeName()) == RESULT for child in seq(executed.children()))
        return str(executed.nodeName()) == RESULT
    except (*jvm_call_failed(), AttributeError):
        return False


def reads_only_results(root: str, plan: Plan | None) -> bool:
    """True for a query (not a write) whose only leaves are commands' result rows (the plan inside
    a result is a field, not a child). Its tree is looked at only when its text names the class."""
    if root in WRITE_COMMANDS or plan is None or not has_class(plan.text or "", RESULT):
        return False
    try:
        tree = plan.root
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):  # the walk records it
        return False
    leaves = [n.cls for n in tree.walk() if not n.children]
    return bool(leaves) and all(c.endswith("." + RESULT) for c in leaves)