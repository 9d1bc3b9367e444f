"""The audit of a lineage server (``serve --access``), read back: who asked what or was refused, and
who changed which label, in one answer (docs/security.md, "The audit").

>>> import duckdb
>>> from lineage_listener.store.schema import ensure_schema
>>> con = duckdb.connect(); _ = ensure_schema(con)
>>> _ = con.execute("INSERT INTO audit_log VALUES ('2026-11-01 10:00:00', 'ann', ['analysts'], 'token', "
...                 "'10.0.0.7', 'GET', '/api/impact', '/api/impact', ['spark_catalog.marts.t'], 200, 2, NULL)")
>>> _ = con.execute("INSERT INTO label_changes VALUES ('2026-11-01 11:00:00', 'set', 'spark_catalog.raw.c', "
...                 "'email', 'pii', true, 'set', NULL, 'pia')")
>>> [(r["kind"], r["identity"], r.get("status") or r.get("label")) for r in records(con)]
[('label', 'pia', 'pii'), ('request', 'ann', 200)]
>>> [r["kind"] for r in records(con, user="ann")]
['request']
>>> [r["kind"] for r in records(con, since=datetime(2026, 11, 1, 10, 30))]
['label']
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from lineage_listener.timewindow import window_sql

#: The fields of each kind of record, beside ``kind``, ``at`` and ``identity``.
REQUEST_FIELDS = ("groups", "via", "client", "method", "route", "path", "datasets", "status", "withheld", "detail")
LABEL_FIELDS = ("action", "dataset", "column", "label", "value", "source", "origin")

_SQL = """
SELECT * FROM (
    SELECT 'request' AS kind, requested_at AS "at", identity, groups, via, client, method, route, path, datasets,
           status, withheld, detail, NULL AS action, NULL AS dataset, NULL AS "column", NULL AS label,
           NULL::BOOLEAN AS value, NULL AS source, NULL AS origin
    FROM audit_log
    UNION ALL
    SELECT 'label', changed_at, changed_by, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           action, dataset, column_name, label, value, source, origin
    FROM label_changes)
WHERE {within} AND ($user IS NULL OR identity = $user)
ORDER BY "at" DESC, kind LIMIT $limit"""


def records(con: duckdb.DuckDBPyConnection, since: datetime | None = None, user: str | None = None,
            limit: int = 1000) -> list[dict[str, Any]]:
    """Requests (``kind`` ``request``) and label changes (``label``), newest first, since ``since`` (naive
    UTC), of one ``user`` when given."""
    if limit < 1:
        raise ValueError("limit must be >= 1")
    within, bounds = window_sql('"at"', since, None)
    cur = con.execute(_SQL.format(within=within), {**bounds, "user": user, "limit": limit})
    names = [d[0] for d in cur.description]
    out = []
    for row in cur.fetchall():
        r = dict(zip(names, row))
        fields = REQUEST_FIELDS if r["kind"] == "request" else LABEL_FIELDS
        out.append({"kind": r["kind"], "at": r["at"], "identity": r["identity"], **{f: r[f] for f in fields}})
    return out
