"""The DuckDB macros in views.sql answer like the Python API (same edges)."""
from __future__ import annotations

import duckdb

from lineage_listener.query import open_store
from lineage_listener.store.connection import open_writable
from tests.test_query_graph import store_path  # noqa: F401  (fixture)


def _api_edges(g):
    return {(u, v, r["query_id"], r["transform"]) for u, v, d in g.edges(data=True) for r in d["records"]}


def _macro_edges(con, macro, ds, col):
    rows = con.execute(f"SELECT source_dataset, source_column, target_dataset, target_column, query_id, transform "
                       f"FROM {macro}(?, ?)", [ds, col]).fetchall()
    return {((a, b), (c, d), q, t) for a, b, c, d, q, t in rows}


def test_macros_match_python_api(store_path):  # noqa: F811
    open_writable(store_path).close()          # applies views.sql
    store = open_store(store_path)
    con = duckdb.connect(str(store_path), read_only=True)
    try:
        for ds, col in [("spark_catalog.shop.report", "total"), ("spark_catalog.shop.clean", "id")]:
            assert _macro_edges(con, "lineage_upstream", ds, col) == _api_edges(store.upstream(ds, col))
        for ds, col in [("spark_catalog.shop.orders", "amount"), ("file:/wh/shop.db/orders", "email")]:
            assert _macro_edges(con, "lineage_downstream", ds, col) == _api_edges(store.downstream(ds, col))
        assert con.execute("SELECT lineage_canonical('file:/wh/shop.db/orders/')").fetchall() == [
            ("spark_catalog.shop.orders",)]
        expanded = con.execute("SELECT target_column FROM lineage_edges_expanded "
                               "WHERE transform = 'filter' ORDER BY 1").fetchall()
        assert expanded == [("amount",), ("email_hash",), ("id",)]
        depth1 = con.execute("SELECT max(hop) FROM lineage_upstream('spark_catalog.shop.report', 'total', 1)")
        assert depth1.fetchall() == [(1,)]
    finally:
        con.close()
