-- lineage-listener conveniences for plain `duckdb lineage.duckdb` users.
-- Applied after schema.sql when a store is created or migrated (bump
-- schema.SCHEMA_VERSION when this file changes): every statement is
-- CREATE OR REPLACE, so re-applying it is harmless.

-- The edges, one row per (query, edge) as captured: the store's main table for users.
-- `query_id`, `run_id`, `captured_at` come from the capture, the rest from the edge
-- (what each column means: docs/reference/semantics.md; `guess`: the edge is a conservative guess,
-- a Python function that could not be read).
CREATE OR REPLACE VIEW column_lineage AS
SELECT c.query_id, c.run_id, e.target_dataset, e.target_column, e.source_dataset, e.source_column,
       e.transform, e.kind, e.expression, e.masking, c.captured_at, coalesce(e.guess, false) AS guess
FROM edge_captures c
JOIN edge_sets s ON s.set_id = c.set_id
JOIN edges e ON e.edge_id = s.edge_id
WHERE c.query_id IS NOT NULL;

-- Each distinct edge with its history: first and last capture, how many captures, the last
-- query and run (over every capture kept, including what `prune` summarised).
CREATE OR REPLACE VIEW lineage_edge_history AS
SELECT e.* EXCLUDE (sets), h.first_seen, h.last_seen, h.captures, h.last_query_id, h.last_run_id
FROM edges e
JOIN (SELECT x.edge_id, min(c.captured_at) AS first_seen, max(c.captured_at) AS last_seen,
             sum(c.captures) AS captures, arg_max(c.query_id, c.captured_at) AS last_query_id,
             arg_max(c.run_id, c.captured_at) AS last_run_id
      FROM (SELECT edge_id, unnest(sets) AS set_id FROM edges) x
      JOIN edge_captures c ON c.set_id = x.set_id
      GROUP BY x.edge_id) h ON h.edge_id = e.edge_id;

-- A catalog table and its storage location are one dataset (docs/reference/datasets.md).
-- alias: the location as stored by jobs that read or wrote the table by path.
CREATE OR REPLACE VIEW lineage_dataset_aliases AS
SELECT rtrim(location, '/') AS alias, min(dataset) AS dataset
FROM datasets
WHERE kind = 'table' AND location IS NOT NULL AND rtrim(location, '/') <> dataset
GROUP BY ALL;

-- The canonical name of a dataset name: its table when it is a table's location.
--   SELECT lineage_canonical('file:/wh/shop.db/orders');  -- spark_catalog.shop.orders
CREATE OR REPLACE MACRO lineage_canonical(ds_name) AS
    coalesce((SELECT min(a.dataset) FROM lineage_dataset_aliases a
              WHERE a.alias = rtrim(ds_name, '/')), ds_name);

-- Every name a canonical dataset may be stored under in column_lineage.
CREATE OR REPLACE MACRO lineage_names(ds_name) AS
    list_concat([ds_name],
                coalesce((SELECT list(a.alias) || list(a.alias || '/') FROM lineage_dataset_aliases a
                          WHERE a.dataset = ds_name), []));

-- Every known column of each (canonical) dataset: from dataset_columns and from direct edges.
CREATE OR REPLACE VIEW lineage_known_columns AS
SELECT coalesce(a.dataset, c.dataset) AS dataset, c.column_name
FROM dataset_columns c LEFT JOIN lineage_dataset_aliases a ON a.alias = rtrim(c.dataset, '/')
UNION
SELECT coalesce(a.dataset, e.target_dataset), e.target_column
FROM (SELECT DISTINCT target_dataset, target_column FROM edges
      WHERE target_dataset IS NOT NULL AND target_column IS NOT NULL) e
LEFT JOIN lineage_dataset_aliases a ON a.alias = rtrim(e.target_dataset, '/');

-- column_lineage with dataset-level indirect edges (null target_column: a filter,
-- join, group or sort key of the query) expanded to every known column of the
-- target. Driver reads (null target_dataset) stay as they are.
CREATE OR REPLACE VIEW lineage_edges_expanded AS
SELECT query_id, run_id, target_dataset, target_column, source_dataset, source_column,
       transform, kind, expression, masking, captured_at, false AS dataset_level, guess
FROM column_lineage
WHERE target_column IS NOT NULL OR target_dataset IS NULL
UNION ALL
SELECT e.query_id, e.run_id, e.target_dataset, k.column_name, e.source_dataset, e.source_column,
       e.transform, e.kind, e.expression, e.masking, e.captured_at, true, e.guess
FROM column_lineage e
LEFT JOIN lineage_dataset_aliases a ON a.alias = rtrim(e.target_dataset, '/')
JOIN lineage_known_columns k ON k.dataset = coalesce(a.dataset, e.target_dataset)
WHERE e.target_column IS NULL AND e.target_dataset IS NOT NULL;

-- Upstream of a column: every edge on a path into it, in data-flow direction
-- (source -> target), hop = distance from the column; the start's dataset named as
-- asked, every other one by its canonical name.
-- max_depth NULL follows every hop; cycles stop (each column is visited once).
--   SELECT * FROM lineage_upstream('spark_catalog.shop.report', 'total', 10);
CREATE OR REPLACE MACRO lineage_upstream(ds, col, max_depth := NULL) AS TABLE
WITH RECURSIVE walk(name, dataset, column_name, depth) USING KEY (dataset, column_name, name) AS (
    SELECT unnest(lineage_names(lineage_canonical(ds))), lineage_canonical(ds), col, 0
    UNION
    SELECT unnest(lineage_names(lineage_canonical(e.source_dataset))),
           lineage_canonical(e.source_dataset), e.source_column, w.depth + 1
    FROM walk w
    JOIN edges e ON e.target_dataset = w.name  -- the walk goes over distinct edges; captures come last
    WHERE (e.target_column = w.column_name OR e.target_column IS NULL)
      AND e.source_dataset IS NOT NULL AND e.source_column IS NOT NULL
      AND (max_depth IS NULL OR w.depth < max_depth)
      AND (lineage_canonical(e.source_dataset), e.source_column)
          NOT IN (SELECT dataset, column_name FROM recurring.walk)
)
SELECT DISTINCT w.depth + 1 AS hop,
       CASE WHEN lineage_canonical(e.source_dataset) = s.start THEN ds
            ELSE lineage_canonical(e.source_dataset) END AS source_dataset, e.source_column,
       CASE WHEN w.dataset = s.start THEN ds ELSE w.dataset END AS target_dataset, w.column_name AS target_column,
       e.transform, e.kind, e.expression, e.masking, c.query_id, c.run_id, c.captured_at,
       e.target_column IS NULL AS dataset_level, coalesce(e.guess, false) AS guess
FROM walk w
CROSS JOIN (SELECT lineage_canonical(ds) AS start) s
JOIN edges e ON e.target_dataset = w.name
CROSS JOIN unnest(e.sets) AS u(set_id)
JOIN edge_captures c ON c.set_id = u.set_id AND c.query_id IS NOT NULL
WHERE (e.target_column = w.column_name OR e.target_column IS NULL)
  AND e.source_dataset IS NOT NULL AND e.source_column IS NOT NULL
  AND (max_depth IS NULL OR w.depth < max_depth);

-- Downstream of a column: every edge on a path out of it (source -> target).
-- Dataset-level indirect edges reach every column of their target listed in
-- dataset_columns under its canonical name (the Python API also falls back to
-- direct edge targets);
-- driver reads (null target_dataset) are access records, not paths.
--   SELECT * FROM lineage_downstream('spark_catalog.crm.customers', 'email', 10);
CREATE OR REPLACE MACRO lineage_downstream(ds, col, max_depth := NULL) AS TABLE
WITH RECURSIVE walk(name, dataset, column_name, depth) USING KEY (dataset, column_name, name) AS (
    SELECT unnest(lineage_names(lineage_canonical(ds))), lineage_canonical(ds), col, 0
    UNION
    SELECT unnest(lineage_names(t.dataset)), t.dataset, t.column_name, t.depth
    FROM (
        SELECT lineage_canonical(e.target_dataset) AS dataset,
               coalesce(e.target_column, k.column_name) AS column_name, w.depth + 1 AS depth
        FROM walk w
        JOIN edges e ON e.source_dataset = w.name AND e.source_column = w.column_name
        LEFT JOIN lineage_dataset_aliases a ON a.alias = rtrim(e.target_dataset, '/')
        LEFT JOIN dataset_columns k
               ON e.target_column IS NULL AND k.dataset = coalesce(a.dataset, e.target_dataset)
        WHERE e.target_dataset IS NOT NULL AND (max_depth IS NULL OR w.depth < max_depth)
    ) t
    WHERE t.column_name IS NOT NULL
      AND (t.dataset, t.column_name) NOT IN (SELECT dataset, column_name FROM recurring.walk)
)
SELECT DISTINCT w.depth + 1 AS hop,
       CASE WHEN w.dataset = s.start THEN ds ELSE w.dataset END AS source_dataset, w.column_name AS source_column,
       CASE WHEN lineage_canonical(e.target_dataset) = s.start THEN ds
            ELSE lineage_canonical(e.target_dataset) END AS target_dataset,
       coalesce(e.target_column, k.column_name) AS target_column,
       e.transform, e.kind, e.expression, e.masking, c.query_id, c.run_id, c.captured_at,
       e.target_column IS NULL AS dataset_level, coalesce(e.guess, false) AS guess
FROM walk w
CROSS JOIN (SELECT lineage_canonical(ds) AS start) s
JOIN edges e ON e.source_dataset = w.name AND e.source_column = w.column_name
CROSS JOIN unnest(e.sets) AS u(set_id)
JOIN edge_captures c ON c.set_id = u.set_id AND c.query_id IS NOT NULL
LEFT JOIN lineage_dataset_aliases a ON a.alias = rtrim(e.target_dataset, '/')
LEFT JOIN dataset_columns k
       ON e.target_column IS NULL AND k.dataset = coalesce(a.dataset, e.target_dataset)
WHERE e.target_dataset IS NOT NULL AND coalesce(e.target_column, k.column_name) IS NOT NULL
  AND (max_depth IS NULL OR w.depth < max_depth);
