"""A preview keeps of SQL text what capture keeps (``spark.lineage.sqlText``, ``preview --sql-text``):
its statements' text, edge expressions and notes, as :mod:`~lineage_listener.capture.textmode` keeps
them in the store, so that a preview of a job captured ``masked`` compares with it edge for edge.

>>> from lineage_listener.govern.sides import DistinctEdge
>>> from lineage_listener.preview.analyze import Preview, StatementLineage
>>> e = DistinctEdge("t", "c", "s", "a", "derived", "direct", "a * 1.1", False)
>>> p = Preview("f.sql", (StatementLineage(1, 1, "INSERT INTO t SELECT a * 1.1 AS c FROM s", "lineage", edges=(e,)),))
>>> q = keeping(p, "masked")
>>> q.statements[0].sql, q.statements[0].edges[0].expression
('INSERT INTO t SELECT a * ? AS c FROM s', 'a * ?')
>>> keeping(p, "none").statements[0].sql
''
"""
from __future__ import annotations

from dataclasses import replace

from lineage_listener.capture import textmode
from lineage_listener.preview.analyze import Preview, StatementLineage


def keeping(preview: Preview, mode: str) -> Preview:
    """``preview`` with only the SQL text ``mode`` (``full``, ``masked``, ``none``) allows."""
    mode = textmode.parse(mode)
    if mode == textmode.FULL:
        return preview
    k = textmode.keep(mode)

    def statement(s: StatementLineage) -> StatementLineage:
        return replace(s, sql=k.statement(s.sql) or "", note=k.message(s.note),
                       edges=tuple(e._replace(expression=k.expression(e.expression)) for e in s.edges))
    return replace(preview, statements=tuple(statement(s) for s in preview.statements))
