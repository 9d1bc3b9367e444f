"""Streaming queries as jobs: one entry per stream, however many micro-batches and plans it had.

>>> import duckdb
>>> con = duckdb.connect()
>>> streams(con)   # a store from before streams were captured
[]
"""
from __future__ import annotations

from typing import Any

import duckdb

from lineage_listener.query.within import dataset_sql

#: One row per stream id: its plans (a restart with new code adds one), batches, sinks, and the
#: sources its plans' edges read.
STREAMS_SQL = """
WITH sources AS (
    SELECT st.stream_id, list(DISTINCT e.source_dataset ORDER BY e.source_dataset) AS sources
    FROM streams st
    JOIN edge_captures c ON c.query_id = st.query_id
    JOIN edge_sets es ON es.set_id = c.set_id
    JOIN edges e ON e.edge_id = es.edge_id
    WHERE e.source_dataset IS NOT NULL
    GROUP BY st.stream_id)
SELECT stream_id,
       arg_max(name, last_batch_at)           AS name,
       arg_max(stream_run_id, last_batch_at)  AS stream_run_id,
       arg_max(run_id, last_batch_at)         AS run_id,
       list(DISTINCT target_dataset) FILTER (WHERE target_dataset IS NOT NULL) AS targets,
       sum(batch_count)::BIGINT               AS batch_count,
       min(first_batch_id)                    AS first_batch_id,
       max(last_batch_id)                     AS last_batch_id,
       min(first_batch_at)                    AS first_batch_at,
       max(last_batch_at)                     AS last_batch_at,
       list(query_id ORDER BY first_batch_id) AS plans,
       coalesce(any_value(src.sources), [])   AS sources
FROM streams LEFT JOIN sources src USING (stream_id)
WHERE {readable}
GROUP BY stream_id ORDER BY last_batch_at DESC NULLS LAST LIMIT $limit
"""
#: A stream a reader may see: one of its sinks or sources may be read.
READABLE = f"""stream_id IN (SELECT stream_id FROM streams WHERE {dataset_sql('target_dataset')}
                              UNION SELECT stream_id FROM sources, unnest(sources) AS s(name)
                              WHERE {dataset_sql('s.name')})"""

KEYS = ("stream_id", "name", "stream_run_id", "run_id", "targets", "batch_count", "first_batch_id",
        "last_batch_id", "first_batch_at", "last_batch_at", "plans", "sources")


def streams(con: duckdb.DuckDBPyConnection, limit: int = 100, within: str | None = None) -> list[dict[str, Any]]:
    """Each stream as one job: name, sinks (``targets``), ``sources`` (datasets its plans read), batch
    count, first/last batch, its plans' query ids; ``within``: only the streams that read or write a
    dataset a reader may read (:mod:`lineage_listener.query.within`)."""
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'streams'").fetchone()[0]:
        return []  # written before schema version 3
    sql = STREAMS_SQL.format(readable="TRUE" if within is None else READABLE)
    rows = con.execute(sql, {"limit": limit, **({"within": within} if within is not None else {})}).fetchall()
    return [dict(zip(KEYS, r)) for r in rows]
