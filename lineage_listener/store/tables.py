"""The store's public tables as Parquet, partitioned by capture day, for engines beside the lineage.

``export_tables(store, out)`` writes ``<out>/<table>/capture_day=YYYY-MM-DD/*.parquet`` for
``column_lineage``, ``queries``, ``runs``, ``datasets`` and ``streams`` (DuckDB's
``COPY ... (FORMAT PARQUET, PARTITION_BY ...)``), replacing what an earlier export wrote there.
Spark, Trino or DuckDB read them where the rest of the data lives:
``spark.read.parquet("<out>/column_lineage")``. A row takes the day of the other time it has when
its first is null (a run whose start was never seen: its end), and is left out, counted, only when
it has none.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from lineage_listener.store.connection import open_readonly

#: Each public table and the time that gives its capture day.
DAY_OF: dict[str, str] = {
    "column_lineage": "captured_at",
    "queries": "captured_at",
    "runs": "coalesce(started_at, ended_at)",
    "datasets": "coalesce(last_seen, first_seen)",
    "streams": "coalesce(last_batch_at, first_batch_at)",
}


@dataclass(frozen=True)
class Exported:
    table: str
    rows: int
    undated: int  # rows without any time: not exported
    path: Path


def export_tables(store: str | Path, out: str | Path) -> list[Exported]:
    """Write the public tables of ``store`` under ``out`` (one folder per table, replaced)."""
    out = Path(out).expanduser().absolute()
    out.mkdir(parents=True, exist_ok=True)
    done = []
    con = open_readonly(store)
    try:
        for table, day in DAY_OF.items():
            target = out / table
            if target.exists():
                shutil.rmtree(target)
            select = f"SELECT *, CAST({day} AS DATE) AS capture_day FROM {table} WHERE {day} IS NOT NULL"
            rows, undated = con.execute(f"SELECT count(*) FILTER (WHERE {day} IS NOT NULL), "
                                        f"count(*) FILTER (WHERE {day} IS NULL) FROM {table}").fetchone()
            if rows:
                con.execute(f"COPY ({select}) TO '{_quoted(target)}' (FORMAT PARQUET, PARTITION_BY (capture_day))")
            else:  # no partition: one file with no rows, so a reader still finds the columns
                target.mkdir()
                con.execute(f"COPY ({select} LIMIT 0) TO '{_quoted(target / 'empty.parquet')}' (FORMAT PARQUET)")
            done.append(Exported(table, rows, undated, target))
    finally:
        con.close()
    return done


def _quoted(path: Path) -> str:
    """``path`` inside a SQL string literal (COPY takes no parameter for its target).

    >>> _quoted(Path("/data/o'brien/lineage"))
    "/data/o''brien/lineage"
    """
    return str(path).replace("'", "''")
