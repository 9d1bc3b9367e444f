"""JDBC tables: a ``JDBCRelation`` read and a JDBC write's options."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lineage_listener.capture.jvm import scala_map
from lineage_listener.capture.reading.readers.registry import RELATIONS, reads
from lineage_listener.lineage.datasets import RelationFact


@reads(RELATIONS, "JDBCRelation")
def jdbc_relation(rel: Any, fact: RelationFact) -> None:
    """A JDBC table (or query) read."""
    opts = rel.jdbcOptions()
    fact["jdbc"] = {"url": str(opts.url()), "table": str(opts.tableOrQuery())}
    fact["options"] = scala_map(opts.parameters())


def written(options: Mapping[str, str]) -> RelationFact | None:
    """The JDBC table a ``save()`` with ``options`` writes, or None for another source.

    >>> written({"url": "jdbc:h2:mem:x", "dbtable": "t"})["jdbc"]
    {'url': 'jdbc:h2:mem:x', 'table': 't'}
    >>> written({"path": "/x"}) is None
    True
    """
    if "url" in options and ("dbtable" in options or "query" in options):
        return {"jdbc": {"url": options["url"], "table": options.get("dbtable") or options.get("query")},
                "options": dict(options)}
    return None
