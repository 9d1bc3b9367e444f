"""What a write does to the data already in its target: its ``queries.write_mode``.

Decided from the write command node (and, where the plan JSON writes a field as null, the
facts capture read from the JVM command: a ``SaveMode``, whether an overwrite replaces only
some partitions), one small rule per command class (docs/reference/semantics.md, "Current state"):

- ``replace``: the write replaces the dataset (an overwrite, CTAS, RTAS, ``INSERT OVERWRITE``
  of the whole table, a view's definition): the edges of earlier writes into it become history;
- ``append``: the write adds rows (a stream's sink adds a batch);
- ``modify``: MERGE, UPDATE, DELETE change the rows they touch;
- ``partitions``: an overwrite of some partitions, which the store cannot tell apart: earlier
  edges stay;
- None: not a write, or not known (earlier edges stay).

>>> from lineage_listener.plan.tree import Node
>>> cmd = lambda name, **fields: Node("org.apache.spark.sql." + name, fields)
>>> mode_of(cmd("InsertIntoHadoopFsRelationCommand"), {"mode": "Overwrite"})
'replace'
>>> mode_of(cmd("InsertIntoHadoopFsRelationCommand"), {"mode": "Overwrite", "partitions_only": True})
'partitions'
>>> mode_of(cmd("InsertIntoHiveTable", overwrite=False), {}), mode_of(cmd("MergeIntoCommand"), {})
('append', 'modify')
>>> mode_of(cmd("Project"), None) is None
True
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lineage_listener.plan.tree import Node

REPLACE, APPEND, MODIFY, PARTITIONS = "replace", "append", "modify", "partitions"

#: Write command name -> ``rule(command node or None, target facts) -> mode or None``.
RULES: dict[str, Callable[[Node | None, Mapping[str, Any]], str | None]] = {}

#: A ``SaveMode`` (as the JVM prints it) -> the mode; ``Ignore`` writes nothing when data is there.
SAVE_MODES = {"Overwrite": REPLACE, "ErrorIfExists": REPLACE, "Append": APPEND}


def mode_of(command: Node | str | None, target: Mapping[str, Any] | None) -> str | None:
    """The write mode of write command ``command`` (a node, or only its name: a wrapper event whose
    plan is not read) with target facts ``target``; None when not a write or not known."""
    if command is None:
        return None
    name = command if isinstance(command, str) else command.name
    rule = RULES.get(name)
    if rule is None:
        return None
    return rule(command if isinstance(command, Node) else None, target or {})


def _rule(*names: str) -> Callable:
    def register(fn: Callable) -> Callable:
        for name in names:
            RULES[name] = fn
        return fn
    return register


def _always(mode: str, *names: str) -> None:
    for name in names:
        RULES[name] = lambda node, fact, mode=mode: mode


_always(REPLACE, "CreateHiveTableAsSelectCommand", "OptimizedCreateHiveTableAsSelectCommand", "CreateTableAsSelect",
        "ReplaceTableAsSelect", "CreateViewCommand", "AlterViewAsCommand")
_always(APPEND, "AppendData", "WriteToMicroBatchDataSource", "WriteToMicroBatchDataSourceV1")
_always(MODIFY, "MergeIntoTable", "MergeIntoCommand", "UpdateCommand", "DeleteCommand", "ReplaceData", "WriteDelta")
_always(PARTITIONS, "OverwritePartitionsDynamic", "DeltaDynamicPartitionOverwriteCommand")


@_rule("InsertIntoHadoopFsRelationCommand", "SaveIntoDataSourceCommand", "SaveAsV1TableCommand",
       "CreateDataSourceTableAsSelectCommand")
def _save_mode(node: Node | None, fact: Mapping[str, Any]) -> str | None:
    """A ``SaveMode`` write: an overwrite of some partitions only (a static partition spec, a dynamic
    partition overwrite, Delta's ``replaceWhere``) replaces those; a topic is only ever appended to.
    ``saveAsTable`` and a data source CTAS run as a wrapper of a file write that carries the mode
    (``saveAsTable`` appends through them too): without a mode of its own, the file write's counts."""
    if fact.get("kafka"):
        return APPEND
    mode = SAVE_MODES.get(str(fact.get("mode")))
    if mode == REPLACE and (fact.get("partitions_only") or _partial_option(fact.get("options"))):
        return PARTITIONS
    return mode


def _partial_option(options: Any) -> bool:
    """Whether write options make an overwrite replace only part of the data (Delta's
    ``replaceWhere``, a dynamic ``partitionOverwriteMode``)."""
    if not isinstance(options, Mapping):
        return False
    lowered = {str(k).lower(): str(v).lower() for k, v in options.items()}
    return "replacewhere" in lowered or lowered.get("partitionoverwritemode") == "dynamic"


@_rule("InsertIntoHiveTable", "InsertIntoDataSourceCommand", "InsertIntoHiveDirCommand",
       "InsertIntoDataSourceDirCommand")
def _overwrite_flag(node: Node | None, fact: Mapping[str, Any]) -> str | None:
    """An insert with an ``overwrite`` flag: into a partition spec (static or dynamic), those partitions."""
    overwrite = node.get("overwrite") if node is not None else None
    if overwrite is None:
        return None
    if not overwrite:
        return APPEND
    return PARTITIONS if fact.get("partitions_only") else REPLACE


@_rule("OverwriteByExpression")
def _overwrite_where(node: Node | None, fact: Mapping[str, Any]) -> str | None:
    """``INSERT OVERWRITE`` of a DataSource V2 table: all of it when the condition is ``true``, else
    the rows (partitions) it selects."""
    condition = node.trees("deleteExpr") if node is not None else ()
    if len(condition) == 1 and condition[0].name == "Literal" and str(condition[0].get("value")).lower() == "true":
        return REPLACE
    return PARTITIONS
