-- lineage-listener store schema. This file is the documentation of the store:
-- users query these tables with plain SQL (`duckdb lineage.duckdb`).
-- Every statement is idempotent; the store applies it on first use.

-- One row per Spark application run.
CREATE TABLE IF NOT EXISTS runs (
    run_id        TEXT PRIMARY KEY,   -- '<app_id>' (unique per SparkContext)
    app_id        TEXT,
    app_name      TEXT,
    spark_version TEXT,
    spark_user    TEXT,
    master        TEXT,
    started_at    TIMESTAMP,
    ended_at      TIMESTAMP           -- null while the application runs
);

-- One row per captured logical action: a write, or an action returning rows to the driver.
CREATE TABLE IF NOT EXISTS queries (
    query_id       TEXT PRIMARY KEY,  -- '<run_id>:<QueryExecution id>:<random>'
    run_id         TEXT,
    action         TEXT,              -- Spark's funcName: command, save, collect, collectToPython, ...
    command        TEXT,              -- root plan node class, short: Project, InsertIntoHadoopFsRelationCommand, ...
    sql_text       TEXT,              -- null when the query did not come from SQL
    status         TEXT,              -- succeeded | failed | lineage_error | running (an OpenLineage run not ended yet)
    error          TEXT,
    duration_ms    BIGINT,
    captured_at    TIMESTAMP,
    target_dataset TEXT               -- null when the result went back to the driver
);

-- One row per dataset ever seen, under its canonical name.
CREATE TABLE IF NOT EXISTS datasets (
    dataset    TEXT PRIMARY KEY,      -- spark_catalog.db.t | file:/path | jdbc:... | local:...
    kind       TEXT,                  -- table | path | view | jdbc | local | topic (Kafka) | memory (memory sink)
    format     TEXT,                  -- parquet, csv, json, orc, text, hive, jdbc, ...
    location   TEXT,                  -- storage URI where known
    properties JSON,                  -- read/write options, secrets redacted
    first_seen TIMESTAMP,
    last_seen  TIMESTAMP
);

-- One row per (dataset, column) ever seen; nested struct fields use dotted paths.
CREATE TABLE IF NOT EXISTS dataset_columns (
    dataset     TEXT,
    column_name TEXT,
    data_type   TEXT,
    nullable    BOOLEAN,
    first_seen  TIMESTAMP,
    last_seen   TIMESTAMP,
    ordinal     INTEGER,    -- position in the dataset's schema as last seen (1-based, nested fields flattened)
    PRIMARY KEY (dataset, column_name)
);

-- The edges are stored once each, with compact records of the captures that produced them
-- (docs/reference/store.md). Read them through the view `column_lineage` (views.sql): one row per
-- (query, edge), as captured. A job that runs every day with unchanged lineage adds one
-- `edge_captures` row a day, not one row per edge.

-- Each distinct edge once: target column <- source column by one transform.
CREATE TABLE IF NOT EXISTS edges (
    edge_id        UBIGINT PRIMARY KEY,  -- digest of the nine columns below (store/edge_ids.py)
    target_dataset TEXT,              -- null: the result went to the driver (an access record)
    target_column  TEXT,              -- null: indirect edge applying to every column of the target
    source_dataset TEXT,
    source_column  TEXT,
    transform      TEXT,              -- identity | rename | derived | aggregate | filter | join | group_by | sort | window | conditional
    kind           TEXT,              -- direct | indirect
    expression     TEXT,              -- Spark SQL text in source column names; condition or key for indirect edges
    masking        BOOLEAN,           -- a hashing/masking function or a count lies on the path
    sets           UBIGINT[]          -- the sets (edge_sets.set_id) holding this edge: a walk goes from an
                                      -- edge to its captures without reading edge_sets
);

-- Sets of edges, stored once per distinct set: what one capture of a query wrote.
CREATE TABLE IF NOT EXISTS edge_sets (
    set_id  UBIGINT,                  -- digest of the set's sorted edge ids
    edge_id UBIGINT
);

-- One row per capture: query `query_id` of run `run_id` wrote the edges of `set_id` at
-- `captured_at`. The only row a job run with unchanged lineage adds. An OpenLineage run sent event by event has one row per event that added
-- edges. `prune` replaces a set's old rows by two summary rows (query_id null, `captures`
-- the number of rows they stand for) holding its first and last capture time.
CREATE TABLE IF NOT EXISTS edge_captures (
    query_id    TEXT,
    run_id      TEXT,
    set_id      UBIGINT,
    captured_at TIMESTAMP,
    captures    BIGINT DEFAULT 1      -- 1; more on a summary row left by prune
);

-- A walk looks edges up by either end, and goes from an edge's sets to their captures.
CREATE INDEX IF NOT EXISTS edges_target ON edges (target_dataset);
CREATE INDEX IF NOT EXISTS edges_source ON edges (source_dataset);
CREATE INDEX IF NOT EXISTS edge_captures_set ON edge_captures (set_id);
-- Each write asks which of its queries the store holds already (an OpenLineage run event by
-- event, a replayed batch): a lookup, not a scan of every capture ever made (schema 8).
CREATE INDEX IF NOT EXISTS edge_captures_query ON edge_captures (query_id);

-- When OpenLineage runs started (their START event): a terminal event sent on its own still
-- gets queries.duration_ms from it, whichever of the two arrived first.
CREATE TABLE IF NOT EXISTS query_starts (
    query_id   TEXT PRIMARY KEY,
    started_at TIMESTAMP
);

-- Problems capture met that are not tied to a query row (e.g. spooled batches).
CREATE TABLE IF NOT EXISTS capture_errors (
    captured_at TIMESTAMP,
    run_id      TEXT,
    query_id    TEXT,
    stage       TEXT,                 -- listener | walk | store | spool
    error       TEXT
);

-- OpenLineage events delivered to an endpoint (live emission or `export openlineage --url`):
-- a later export to the same endpoint sends only what is not here.
CREATE TABLE IF NOT EXISTS openlineage_sent (
    query_id TEXT,
    endpoint TEXT,                    -- URL without credentials or query string
    sent_at  TIMESTAMP,
    PRIMARY KEY (query_id, endpoint)
);

-- Structured Streaming: one row per distinct plan of a stream (its `queries` row has the same
-- query_id, 'stream:<stream id>:<lineage digest>'). Its edges are stored once; each micro-batch
-- only moves these counters. A restart from the checkpoint with the same code continues the row;
-- new code (other lineage) starts a new row and the old one keeps its last batch.
CREATE TABLE IF NOT EXISTS streams (
    query_id       TEXT PRIMARY KEY,  -- the queries/column_lineage rows of this stream plan
    stream_id      TEXT,              -- StreamingQuery.id: stable across restarts from a checkpoint
    stream_run_id  TEXT,              -- StreamingQuery.runId of the latest run
    name           TEXT,              -- queryName, null when unnamed
    run_id         TEXT,              -- the Spark application of the latest batch
    target_dataset TEXT,              -- the sink (null: console, foreach, foreachBatch)
    lineage_hash   TEXT,              -- digest of the plan's edges
    first_batch_id BIGINT,
    last_batch_id  BIGINT,
    first_batch_at TIMESTAMP,
    last_batch_at  TIMESTAMP,
    batch_count    BIGINT             -- micro-batches captured with this plan
);
