"""Governance over captured lineage: what changed between two runs, windows or stores
(:mod:`~lineage_listener.govern.diff`, :mod:`~lineage_listener.govern.history`), and the
lineage of SQL before it runs (:mod:`~lineage_listener.govern.preview`).

This layer reads stores through :mod:`lineage_listener.query` and walks plans with the
capture's own reader and walker; only the CLI and the server build on it. Labels that reach
a dataset (:mod:`~lineage_listener.govern.labels`) and policy checks
(:mod:`~lineage_listener.govern.policies`) have their seams here.

>>> from lineage_listener.govern.diff import diff
>>> d = diff(open_store("lineage.duckdb"), app="daily_orders")     # doctest: +SKIP
>>> [item["item"] for item in d.data()["removed"]]                    # doctest: +SKIP
['column', 'edge']
"""
