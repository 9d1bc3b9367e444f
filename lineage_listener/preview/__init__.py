"""Lineage of Spark SQL before it runs: the statements of a file analyzed (never run against real data)
in a throwaway local session, with inputs stood in from the store's recorded schemas, and walked by
the capture's own reader and walker.

- :mod:`~lineage_listener.preview.sqlfile`: a SQL file's statements;
- :mod:`~lineage_listener.preview.standins`: inputs defined from the store's recorded schemas;
- :mod:`~lineage_listener.preview.session`: the local Spark session;
- :mod:`~lineage_listener.preview.analyze`: analysis and walk, the edges each statement would write.

>>> from lineage_listener.preview.analyze import preview
>>> result = preview(open_store("lineage.duckdb"), "INSERT INTO t SELECT ...")   # doctest: +SKIP
"""
