"""``lineage-listener sql --store PATH "SELECT ..."``: run SQL against the store."""
from __future__ import annotations

import argparse
import json

import duckdb

from lineage_listener.cli import CliError, no_lineage_tables
from lineage_listener.cli.render import table
from lineage_listener.store.connection import open_readonly


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="path of the DuckDB store")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument("query", help="SQL text, e.g. \"SELECT * FROM column_lineage LIMIT 5\"")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    con = open_readonly(args.store)
    try:
        rel = con.sql(args.query)
        if rel is None:
            return 0
        columns, rows = rel.columns, rel.fetchall()
    except duckdb.Error as exc:
        empty = isinstance(exc, duckdb.CatalogException) and no_lineage_tables(args.store)
        raise CliError(empty or f"SQL error: {exc}") from None
    finally:
        con.close()
    if args.format == "json":
        print(json.dumps([dict(zip(columns, r)) for r in rows], default=str, indent=2))
    elif args.format == "csv":
        import csv
        import sys
        w = csv.writer(sys.stdout)
        w.writerow(columns)
        w.writerows(rows)
    else:
        print(table(columns, rows))
    return 0
