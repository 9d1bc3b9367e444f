"""Spark's own reads that are not user lineage: schema inference of CSV files.

``spark.read.csv(path)`` with ``header`` or ``inferSchema`` makes Spark read the file
as text before the user's query exists (``CSVDataSource.createBaseDataset``): a
``take(1)`` for the header (action ``head``; Spark 3.5 and 4) and, on Spark 4, a
``.rdd`` over the lines to infer types (action ``rdd``). Both fire
``QueryExecutionListener`` callbacks like any user action, and stored as such they
would give the file a phantom ``value string`` column and count as reads of it.

Spark builds that text relation itself, from the paths it resolved, never from a
user's ``path`` option: ``DataSource(paths = ..., className = TextFileFormat,
options = <the CSV reader's options> + ("__globPaths__" -> "false"))``. A user's
``spark.read.text(p)`` always carries ``path`` (or ``paths``) in its options, and a
catalog text table names its table. That is the signal, together with the action
names: a driver read (``head`` / ``rdd``) whose every source leaf is such a relation.
(JSON's schema inference runs ``queryExecution.toRdd`` and fires no callback:
measured on 3.5.9 and 4.3.0.)
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: The actions Spark's CSV schema inference fires (``Dataset.head`` via ``take(1)``, ``Dataset.rdd``).
INFERENCE_ACTIONS = frozenset({"head", "rdd"})

#: ``DataSource.GLOB_PATHS_KEY``: set to "false" by Spark when it opens paths it already resolved.
GLOB_PATHS_KEY = "__globpaths__"


def _lower(options: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()} if isinstance(options, Mapping) else {}


def spark_opened_text(fact: Mapping[str, Any]) -> bool:
    """A text relation Spark opened on already-resolved paths (not a user's read or a table).

    >>> spark_opened_text({"paths": ["file:/x.csv"], "format": "text",
    ...                    "options": {"header": "true", "__globPaths__": "false"}})
    True
    >>> spark_opened_text({"paths": ["file:/x.csv"], "format": "text",
    ...                    "options": {"path": "/x.csv", "wholetext": "false"}})
    False
    """
    options = _lower(fact.get("options"))
    return (fact.get("format") == "text" and bool(fact.get("paths")) and "table" not in fact
            and options.get(GLOB_PATHS_KEY) == "false" and "path" not in options and "paths" not in options)


def is_schema_inference(func_name: str, leaves: Iterable[Mapping[str, Any]]) -> bool:
    """True for Spark's own schema-inference read of a file (store nothing for it).

    >>> fact = {"paths": ["file:/x.csv"], "format": "text", "options": {"__globPaths__": "false"}}
    >>> is_schema_inference("head", [fact]), is_schema_inference("collect", [fact]), is_schema_inference("rdd", [])
    (True, False, False)
    """
    facts = list(leaves)
    return func_name in INFERENCE_ACTIONS and bool(facts) and all(spark_opened_text(f) for f in facts)
