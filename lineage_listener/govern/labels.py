"""Labels that newly reach a dataset: the seam a diff calls for classifications.

A classification puts labels on columns (``pii``, ``email``...) that propagate along copies
and stop at masking (``docs/reference/semantics.md``). A diff reports the labels that reach
a column on its new side and did not on its old one: a refactor that starts copying a
labelled column somewhere shows up there. Until the store holds classifications there is
nothing to propagate and the answer is empty; the ``labels`` key of a diff is there from
the start so that tools reading it need not change.

>>> labels_reaching(None, "old_edges", "new_edges")
[]
"""
from __future__ import annotations

from typing import Any

import duckdb


def labels_reaching(con: duckdb.DuckDBPyConnection | None, old_edges: str, new_edges: str) -> list[dict[str, Any]]:
    """Labels that reach a column through the new side's edges and did not through the old side's.

    ``old_edges`` / ``new_edges``: temporary tables of ``con`` holding each side's distinct edges
    under canonical dataset names (the columns of ``column_lineage`` but the capture's:
    ``target_dataset``, ``target_column``, ``source_dataset``, ``source_column``, ``transform``,
    ``kind``, ``expression``, ``masking``); ``con`` also reads the store. Each item:
    ``{"label", "dataset", "column", "from": {"dataset", "column"}}`` (the labelled column it
    propagated from). Empty while the store holds no classifications.
    """
    return []
