"""One event, several writes: a multi-insert recorded as one query per write.

Spark 4 runs ``FROM t INSERT INTO a SELECT .. INSERT INTO b SELECT ..`` as one ``multi-commands``
query whose analyzed plan is a ``Union`` of its write commands (Spark 3.5 tells the listener of
each write as a ``command`` of its own). Its target fact is ``{"writes": [...]}``, the target of
each write in plan order (:func:`lineage_listener.capture.reading.facts.target`); the recorder records
each write as a query of its own, with its own target and edges: the rows two separate
``INSERT`` statements give (``docs/reference/semantics.md``).

>>> items = [{"class": "x.Union", "num-children": 2},
...          {"class": "x.InsertIntoHiveTable", "num-children": 1}, {"class": "x.Range", "num-children": 0},
...          {"class": "x.AppendData", "num-children": 1}, {"class": "x.Project", "num-children": 1},
...          {"class": "x.Range", "num-children": 0}]
>>> [(p.root, len(p.plan.items), p.target) for p in parts(items, {"writes": [{"paths": ["file:/a"]}, None]})]
[('InsertIntoHiveTable', 2, {'paths': ['file:/a']}), ('AppendData', 3, None)]
>>> several("multi-commands", "Union"), several("collect", "Union")
(True, False)
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NamedTuple, TypeVar

from lineage_listener.plan.classes import MULTI_WRITE
from lineage_listener.plan.tree import Plan

E = TypeVar("E")  # an envelope (:class:`~lineage_listener.capture.reading.queryreader.Envelope`)

#: The action name Spark gives the listener for a query of several commands.
MULTI_COMMANDS = "multi-commands"
#: The key of a multi-insert's target fact: the target of each write, in plan order.
WRITES = "writes"


class Part(NamedTuple):
    """One write of a multi-insert: its plan (the write command first), its name, its target."""

    plan: Plan
    root: str
    target: Mapping[str, Any] | None


def several(func_name: str, root: str | None) -> bool:
    """Whether an event may be a multi-insert (its target fact then says so)."""
    return func_name == MULTI_COMMANDS and root == MULTI_WRITE


def is_multi(target: Mapping[str, Any] | None) -> bool:
    """Whether ``target`` is a multi-insert's target fact."""
    return bool(target) and WRITES in target  # type: ignore[operator]


def parts(items: list[dict[str, Any]], target: Mapping[str, Any]) -> list[Part]:
    """Each write of the multi-insert whose plan is ``items`` (pre-order) and target ``target``."""
    out: list[Part] = []
    start = 1
    for fact in target[WRITES]:
        end, pending = start, 1
        while pending:  # the subtree below items[start]: each node adds its children to visit
            pending += int(items[end]["num-children"]) - 1
            end += 1
        sub = items[start:end]
        out.append(Part(Plan(None, items=sub), str(sub[0]["class"]).rsplit(".", 1)[-1], fact))
        start = end
    return out


def split(env: E) -> list[E]:
    """The envelopes of the writes of multi-insert event ``env``, one per write, in plan order:
    each with its write's plan, name, target and position; the statistics Spark measured are the
    event's, not a part's, so none goes with a part."""
    decoded = env.plan if env.plan is not None else Plan(env.plan_json)  # type: ignore[attr-defined]
    return [replace(env, root=part.root, plan=part.plan, target=part.target, part=i,  # type: ignore[type-var]
                    statistics=None)
            for i, part in enumerate(parts(decoded.items, env.target or {}))]  # type: ignore[attr-defined]
