"""Asking the lineage: upstream / downstream graphs, impact and provenance reports.

>>> from lineage_listener.query import open_store
>>> store = open_store("lineage.duckdb")                                  # doctest: +SKIP
>>> g = store.upstream("spark_catalog.shop.report", "total", depth=10)   # doctest: +SKIP
"""
from lineage_listener.query.expand import Filters, expand
from lineage_listener.query.types import LineageStep
from lineage_listener.query.copies import copies, influenced
from lineage_listener.query.graph import build_graph, origins, paths
from lineage_listener.query.kept import keep
from lineage_listener.query.store import LineageStore, UnknownNameError, open_store
from lineage_listener.timewindow import parse_time

__all__ = ["open_store", "LineageStore", "UnknownNameError", "LineageStep", "Filters", "expand",
           "build_graph", "origins", "paths", "keep", "copies", "influenced", "parse_time"]
