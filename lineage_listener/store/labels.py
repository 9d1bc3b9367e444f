"""Writing classifications: the label rows of a batch (``column_labels`` and the instructions
around them), each change also kept in ``label_changes``.

Every writer of the store goes through :func:`~lineage_listener.store.upsert.write_batch`, so
labels set from the CLI, from REST, from a classifications file or from Spark's metadata at
capture are written the same way: in the batch's transaction, spooled when the store is busy.

Rows of a batch (row types: :mod:`~lineage_listener.store.rows`):

- ``column_labels``: a label set (upsert by dataset, column, label, source);
- ``label_unset``: a label removed (dataset, column, label, source);
- ``label_file``: a classifications file loaded again: its earlier labels and masking
  functions go first, so the file is the whole truth about what it declares;
- ``masking_functions``: functions declared as masking.

A label seen again unchanged (Spark metadata read at every capture) changes nothing and adds
no ``label_changes`` row.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import duckdb

from lineage_listener.store.rows import LabelFile, LabelRow, LabelUnset, MaskingFunctionRow, typed


def write_labels(con: duckdb.DuckDBPyConnection, rows: Mapping[str, Iterable[tuple]]) -> None:
    """Apply the label rows of one batch, in the batch's transaction (the caller's)."""
    labels: list[LabelRow] = typed(LabelRow, rows.get(LabelRow.TABLE, ()))
    functions: list[MaskingFunctionRow] = typed(MaskingFunctionRow, rows.get(MaskingFunctionRow.TABLE, ()))
    for file in typed(LabelFile, rows.get(LabelFile.TABLE, ())):
        keep = [(r.dataset, r.column_name, r.label) for r in labels if r.source == "file" and r.origin == file.origin]
        _forget_file(con, file.origin, keep, [f.name.lower() for f in functions if f.origin == file.origin],
                     file.changed_by, file.changed_at)
    for u in typed(LabelUnset, rows.get(LabelUnset.TABLE, ())):
        gone = con.execute("DELETE FROM column_labels WHERE dataset = ? AND column_name = ? AND label = ? "
                           "AND source = ? RETURNING value, origin", [u.dataset, u.column_name, u.label,
                                                                      u.source]).fetchall()
        for value, origin in gone:
            _changed(con, u.changed_at, "unset", u.dataset, u.column_name, u.label, value, u.source, origin,
                     u.changed_by)
    last = _last_per_key(labels)
    if last:
        _set(con, last)
    if functions:
        con.execute("""INSERT INTO masking_functions SELECT lower(unnest(?)), unnest(?), CAST(unnest(?) AS TIMESTAMP)
                       ON CONFLICT (name) DO UPDATE SET origin = excluded.origin""",
                    [list(column) for column in zip(*functions)])


def _last_per_key(rows: list[LabelRow]) -> list[LabelRow]:
    """The last row of each (dataset, column, label, source): the one a batch keeps."""
    out: dict[tuple, LabelRow] = {}
    for r in rows:
        out[(r.dataset, r.column_name, r.label, r.source)] = r
    return list(out.values())


def _set(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    """Upsert ``rows`` (column_labels order); an audit row for each that is new or different."""
    columns = [list(c) for c in zip(*rows)]
    con.execute("""CREATE OR REPLACE TEMP TABLE _labels AS
                   SELECT unnest($1) AS dataset, unnest($2) AS column_name, unnest($3) AS label,
                          CAST(unnest($4) AS BOOLEAN) AS value, unnest($5) AS source, unnest($6) AS origin,
                          unnest($7) AS set_by, CAST(unnest($8) AS TIMESTAMP) AS set_at""", columns)
    con.execute("""INSERT INTO label_changes
                   SELECT n.set_at, 'set', n.dataset, n.column_name, n.label, n.value, n.source, n.origin, n.set_by
                   FROM _labels n LEFT JOIN column_labels o USING (dataset, column_name, label, source)
                   WHERE o.dataset IS NULL OR o.value IS DISTINCT FROM n.value
                      OR o.origin IS DISTINCT FROM n.origin OR n.source = 'set'""")
    con.execute("""INSERT INTO column_labels SELECT * FROM _labels
                   ON CONFLICT (dataset, column_name, label, source) DO UPDATE SET
                     set_by = CASE WHEN column_labels.value IS DISTINCT FROM excluded.value
                                     OR column_labels.origin IS DISTINCT FROM excluded.origin
                                     OR excluded.source = 'set' THEN excluded.set_by ELSE column_labels.set_by END,
                     set_at = CASE WHEN column_labels.value IS DISTINCT FROM excluded.value
                                     OR column_labels.origin IS DISTINCT FROM excluded.origin
                                     OR excluded.source = 'set' THEN excluded.set_at ELSE column_labels.set_at END,
                     value = excluded.value, origin = excluded.origin""")
    con.execute("DROP TABLE _labels")


def _forget_file(con: duckdb.DuckDBPyConnection, origin: str, keep: list[tuple[str, str, str]],
                 functions: list[str], changed_by: str, changed_at: str) -> None:
    """Remove what file ``origin`` declared before and no longer declares (``keep``: what it does)."""
    gone = con.execute("""DELETE FROM column_labels WHERE source = 'file' AND origin = $o
                          AND NOT EXISTS (SELECT 1 FROM (SELECT unnest($d) AS d, unnest($c) AS c,
                                                                unnest($l) AS l) k
                                          WHERE k.d = dataset AND k.c = column_name AND k.l = label)
                          RETURNING dataset, column_name, label, value""",
                       {"o": origin, "d": [k[0] for k in keep], "c": [k[1] for k in keep],
                        "l": [k[2] for k in keep]}).fetchall()
    for dataset, column, label, value in gone:
        _changed(con, changed_at, "unset", dataset, column, label, value, "file", origin, changed_by)
    con.execute("DELETE FROM masking_functions WHERE origin = $o AND name NOT IN (SELECT unnest($f))",
                {"o": origin, "f": functions})


def _changed(con: duckdb.DuckDBPyConnection, *row: object) -> None:
    con.execute("INSERT INTO label_changes VALUES (CAST(? AS TIMESTAMP), ?, ?, ?, ?, ?, ?, ?, ?)", list(row))
