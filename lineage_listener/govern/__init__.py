"""Governance over column lineage: classifications (labels) on columns that travel along copies and
stop at masking, and policies over where labelled data goes.

- :mod:`~lineage_listener.govern.patterns`: dataset globs and label names;
- :mod:`~lineage_listener.govern.labelstore`: declared labels (CLI, REST, a classifications file,
  Spark's metadata) as store rows, and reading them back;
- :mod:`~lineage_listener.govern.labelfile`: the classifications file;
- :mod:`~lineage_listener.govern.masking`: which edges mask, user-declared functions included;
- :mod:`~lineage_listener.govern.propagate`: labels along a lineage graph (networkx), with why-paths;
- :mod:`~lineage_listener.govern.reach`: the graphs propagation needs, read from a store;
- :mod:`~lineage_listener.govern.answers`: the questions (labels of a column, a dataset, the store);
- :mod:`~lineage_listener.govern.policy` and :mod:`~lineage_listener.govern.checks`: policy files
  and their checks; :mod:`~lineage_listener.govern.webhook` and :mod:`~lineage_listener.govern.watch`:
  a lineage server checking every batch and telling a webhook.
- :mod:`~lineage_listener.govern.diff` and :mod:`~lineage_listener.govern.history`: what changed
  between two runs, windows or stores, and when an application's or a dataset's lineage changed.

This layer reads stores through :mod:`lineage_listener.query`; the exports (labels as OpenLineage tags,
DataHub field tags), previews, the server and the CLI build on it.

>>> from lineage_listener.govern.diff import diff
>>> d = diff(open_store("lineage.duckdb"), app="daily_orders")     # doctest: +SKIP
>>> [item["item"] for item in d.data()["removed"]]                    # doctest: +SKIP
['column', 'edge']
"""
