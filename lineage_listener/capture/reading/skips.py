"""The Spark events capture drops: one ordered table of named filters, each a small function.

Spark reports to a ``QueryExecutionListener`` much that is not the user's lineage: DDL, the
result rows of a command already captured, a table format's own queries, its own schema
inference. Each filter below says which event it drops and why. A filter looks at a
:class:`Query`, what is known of the event at its stage, and runs at the first point that
knowledge exists:

- ``HEAD``: the query's head (action, root node, SQL text), before its plan is read: the plan of
  a query dropped here is never read;
- ``PLAN``: the read plan: its nodes, its leaves' facts and its write target.

>>> [s.name for s in SKIPS if s.stage == HEAD]
['command_result', 'utility_command', 'recursion_step', 'stream_sink', 'format_internal']
>>> skipped(HEAD, Query(func_name="command", root="CreateTableCommand"))
'utility_command'
>>> skipped(HEAD, Query(func_name="collect", root="Project", sql_text="SELECT 1")) is None
True
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from lineage_listener import redact
from lineage_listener.capture.reading import command_result, inference, internal
from lineage_listener.plan.classes import STREAM_SINK_WRITES, VARIABLE_COMMANDS, WRITE_COMMANDS
from lineage_listener.plan.tree import Plan

log = redact.logger(__name__)

HEAD, PLAN = "head", "plan"


class Query:
    """What the filters see of one event; the reader fills in its plan, leaves and target as it reads.

    ``sql``: how to get the SQL text, asked once and only when a filter or the envelope needs it
    (without the bridge jar it costs py4j calls); or ``sql_text``, when it is known. ``step``: Spark
    runs it as a step of a recursive CTE inside another statement's execution (:func:`_recursion_step`).
    """

    def __init__(self, func_name: str, root: str, reads_result: bool = False,
                 sql: Callable[[], str | None] | None = None, sql_text: str | None = None,
                 step: bool = False) -> None:
        self.func_name, self.root = func_name, root
        self.reads_result = reads_result  # an action on a command's result rows
        self.step = step  # a recursive CTE's step (known with the bridge jar's head)
        self._sql = sql if sql is not None else (lambda: sql_text)
        self.plan_json: str | None = None
        self.plan: Plan | None = None  # decoded as far as the reader needed
        self.leaves: Mapping[int, Mapping[str, Any]] = {}
        self.target: Mapping[str, Any] | None = None

    @cached_property
    def sql_text(self) -> str | None:
        """The statement's SQL text (None for the DataFrame API)."""
        return self._sql()


def _command_result(q: Query) -> bool:
    """An action on the result rows of a command that already ran (``spark.sql(cmd).collect()``):
    the command was captured from its own event (:mod:`~lineage_listener.capture.reading.command_result`)."""
    return q.reads_result


def _utility_command(q: Query) -> bool:
    """A command's own execution that writes no data: DDL and utilities (``CREATE TABLE``, ``SET``,
    ``SHOW TABLES``...); no lineage. SQL variables' commands are kept: a variable set from a query
    carries its lineage into later statements (:mod:`~lineage_listener.capture.variables`)."""
    return q.func_name == command_result.COMMAND and q.root not in WRITE_COMMANDS and q.root not in VARIABLE_COMMANDS


def _recursion_step(q: Query) -> bool:
    """The anchor or a round of a ``WITH RECURSIVE`` CTE, which Spark (4.1+) runs as a query of its
    own inside the statement's execution: the statement's own event has its lineage. Known from the
    execution's root (the bridge jar's ``RecursionSteps``); a write is never a step."""
    return q.step and q.root not in WRITE_COMMANDS


def _stream_sink(q: Query) -> bool:
    """A micro-batch's own write into its sink: the stream is captured from its progress event."""
    return q.root in STREAM_SINK_WRITES


def _format_internal(q: Query) -> bool:
    """A table format's own work known from the head: Delta's data write, a read inside its
    ``MERGE`` (:mod:`~lineage_listener.capture.reading.internal`)."""
    return internal.reason(q.func_name, q.root, q.sql_text) is not None


def _command_results_only(q: Query) -> bool:
    """A query (not a write) whose only leaves are commands' result rows
    (``spark.sql(cmd).limit(5).collect()``): no dataset is read."""
    return command_result.reads_only_results(q.root, q.plan)


def _schema_inference(q: Query) -> bool:
    """Spark reading a CSV file to infer its schema (:mod:`~lineage_listener.capture.reading.inference`):
    not the user's read."""
    return q.root not in WRITE_COMMANDS and inference.is_schema_inference(q.func_name, q.leaves.values())


def _temp_view(q: Query) -> bool:
    """``CREATE TEMP VIEW``: its command has no target, as a temp view is not a dataset."""
    return q.target is None and q.root == "CreateViewCommand"


def _format_internal_plan(q: Query) -> bool:
    """A table format's own read known from its plan: Delta log replay, its touched-file search
    (:func:`~lineage_listener.capture.reading.internal.plan_reason`)."""
    return q.plan_json is not None and internal.plan_reason(q.root, q.plan_json, q.leaves) is not None


@dataclass(frozen=True)
class Skip:
    """A named filter: at ``stage``, ``drops(query)`` says the event carries no lineage of the user's."""

    name: str
    stage: str
    drops: Callable[[Query], bool]


#: The filters, in the order they run.
SKIPS: tuple[Skip, ...] = (
    Skip("command_result", HEAD, _command_result),
    Skip("utility_command", HEAD, _utility_command),
    Skip("recursion_step", HEAD, _recursion_step),
    Skip("stream_sink", HEAD, _stream_sink),
    Skip("format_internal", HEAD, _format_internal),
    Skip("command_results_only", PLAN, _command_results_only),
    Skip("schema_inference", PLAN, _schema_inference),
    Skip("temp_view", PLAN, _temp_view),
    Skip("format_internal_plan", PLAN, _format_internal_plan),
)
_BY_STAGE = {stage: tuple(s for s in SKIPS if s.stage == stage) for stage in (HEAD, PLAN)}


def skipped(stage: str, query: Query) -> str | None:
    """The name of the first filter of ``stage`` that drops ``query``, or None: it is kept."""
    for skip in _BY_STAGE[stage]:
        if skip.drops(query):
            log.debug("lineage-listener: skipped a %s event (%s)", query.func_name, skip.name)
            return skip.name
    return None
