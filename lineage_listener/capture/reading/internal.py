"""Format-internal work: queries a table format runs for itself, never user lineage.

During one ``MERGE`` Delta Lake fires a dozen queries of its own through the same listener:
log replay (``Cache Delta Table State``, reads of ``_delta_log``), snapshot statistics
(``head``/``collect`` over its cached state), the search for touched files (a ``collect``
over the user's tables with ``input_file_name()``) and the data write
(``deltaTransactionalWrite``), many carrying the user's SQL text. The real statement
arrives as its own command (``MergeIntoCommand``...). Each rule below names one signal;
any one makes the query internal (no ``queries`` row, no edges).

>>> reason("deltaTransactionalWrite", "Project", None)
'action deltaTransactionalWrite'
>>> reason("collect", "Aggregate", "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE")
'a read inside a MERGE statement'
>>> reason("collect", "Project", "SELECT * FROM t") is None
True
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lineage_listener.plan.classes import (DELTA_ACTION_COLUMNS, DELTA_INTERNAL_COLUMNS, DELTA_LOG_DIR,
                                           FORMAT_INTERNAL_ACTIONS, INPUT_FILE_NAME, WRITE_COMMANDS)
from lineage_listener.plan.text import has_class, has_name

#: Statements that never return rows to the user: a read query carrying their text runs inside them.
_INSIDE = re.compile(r"^\s*(MERGE|UPDATE|DELETE|OPTIMIZE|VACUUM|REORG|RESTORE|CALL|CONVERT)\b", re.IGNORECASE)


def reason(func_name: str, root: str, sql_text: str | None) -> str | None:
    """Why a query is internal, from what is known before its plan is serialised (cheap)."""
    if func_name.startswith(FORMAT_INTERNAL_ACTIONS):
        return f"action {func_name.split(' - ')[0]}"
    if root not in WRITE_COMMANDS and sql_text:
        found = _INSIDE.match(sql_text)
        if found:
            return f"a read inside a {found.group(1).upper()} statement"
    return None


def plan_reason(root: str, plan_json: str, leaves: Mapping[int, Mapping[str, Any]]) -> str | None:
    """Why a read query is internal, from its plan text (``toJSON``'s or the compact reader's: the
    same answers, :mod:`lineage_listener.plan.text`) and leaf facts.

    >>> plan_reason("Project", '[{"name":"add"},{"name":"remove"},{"name":"metaData"},'
    ...             '{"name":"protocol"}]', {})
    'reads Delta log actions'
    >>> plan_reason("Project", '{"v":1,"attrs":[{"name":"_row_id_"}],"plan":{"@t":[0]}}', {})
    "Delta's touched-file bookkeeping"
    >>> plan_reason("Project", '[]', {1: {"paths": ["file:/w/t/_delta_log/0.json"]}})
    'reads a Delta transaction log'
    """
    if root in WRITE_COMMANDS:
        return None
    for fact in leaves.values():
        if any(DELTA_LOG_DIR in str(p) for p in fact.get("paths") or ()):
            return "reads a Delta transaction log"
    for columns in DELTA_ACTION_COLUMNS:
        if all(has_name(plan_json, c) for c in columns):
            return "reads Delta log actions"
    if any(has_name(plan_json, c) for c in DELTA_INTERNAL_COLUMNS):
        return "Delta's touched-file bookkeeping"
    if has_class(plan_json, INPUT_FILE_NAME) and any(
            str(f.get("format") or "").lower() == "delta" for f in leaves.values()):
        return "Delta's touched-file search"
    return None


__all__ = ["reason", "plan_reason"]
