"""Questions limited to the datasets one reader may read (docs/security.md, "What a reader sees").

``within`` is an RE2 expression (DuckDB's ``regexp_full_match``) of the dataset names the reader may
read, bound as the parameter ``$within``; None asks about every dataset. A catalog table and its
storage location are one dataset (docs/reference/datasets.md): either name matching makes both
readable. A name the store's ``datasets`` table does not hold is not readable.

>>> import duckdb
>>> from lineage_listener.store.schema import ensure_schema
>>> con = duckdb.connect(); _ = ensure_schema(con)
>>> _ = con.execute("INSERT INTO datasets (dataset, kind, location) VALUES ('spark_catalog.marts.t', 'table', "
...                 "'file:/wh/marts.db/t'), ('spark_catalog.raw.u', 'table', 'file:/wh/raw.db/u')")
>>> names = "SELECT unnest(['spark_catalog.marts.t', 'file:/wh/marts.db/t/', 'spark_catalog.raw.u']) AS n"
>>> con.execute(f"SELECT n FROM ({names}) WHERE {dataset_sql('n')}", {"within": r"spark_catalog\\x{2e}marts\\x{2e}.*"}).fetchall()
[('spark_catalog.marts.t',), ('file:/wh/marts.db/t/',)]
"""
from __future__ import annotations

#: Every name (canonical, location, location with a trailing slash) of the datasets either of whose
#: names matches ``$within``.
READABLE = """SELECT DISTINCT unnest([d.dataset, rtrim(d.location, '/'), rtrim(d.location, '/') || '/']) AS n
    FROM datasets d
    WHERE regexp_full_match(d.dataset, $within) OR regexp_full_match(rtrim(coalesce(d.location, ''), '/'), $within)"""


def dataset_sql(name: str) -> str:
    """SQL that is true when the dataset named by the SQL expression ``name`` may be read."""
    return f"({name} IN ({READABLE}))"


def queries_sql() -> str:
    """SQL selecting the ids of the queries that wrote or read a dataset that may be read: a query that
    touched none does not exist for the reader. From an edge to its captures by the edge's ``sets``."""
    return f"""SELECT query_id FROM queries WHERE {dataset_sql('target_dataset')}
        UNION SELECT c.query_id FROM edge_captures c
        WHERE c.query_id IS NOT NULL AND c.set_id IN (
            SELECT DISTINCT unnest(e.sets) FROM edges e WHERE {dataset_sql('e.source_dataset')})"""


def runs_sql() -> str:
    """SQL selecting the ids of the runs with a query that may be seen (:func:`queries_sql`)."""
    return f"SELECT run_id FROM queries WHERE query_id IN ({queries_sql()})"
