-- lineage-listener store schema. This file is the documentation of the store:
-- users query these tables with plain SQL (`duckdb lineage.duckdb`).
-- Every statement is idempotent; the store applies it on first use.
-- The comment block just above a table and the comment on each column's line (continued on
-- comment lines below it) are the store's reference page (docs/gen_reference.py writes it):
-- keep one column a line.

-- One row per Spark application run.
CREATE TABLE IF NOT EXISTS runs (
    run_id        TEXT PRIMARY KEY,   -- the application id (unique per SparkContext)
    app_id        TEXT,               -- the application id, as Spark reports it
    app_name      TEXT,               -- spark.app.name
    spark_version TEXT,
    spark_user    TEXT,               -- the user the application runs as
    master        TEXT,               -- local[2], yarn, k8s://..., spark://...
    started_at    TIMESTAMP,          -- when the application started
    ended_at      TIMESTAMP,          -- when the application ended, or when the last disable() of the process
                                      -- stopped capturing it; null while it runs. A capture enabled again in
                                      -- the same application sets it back to null
    parent_job_namespace      TEXT,   -- the run that launched this one (an Airflow task), as the Spark conf
                                      -- spark.openlineage.parentJobNamespace gives it; null when not given
    parent_job_name           TEXT,   -- spark.openlineage.parentJobName: `<dag_id>.<task_id>` for Airflow
    parent_run_id             TEXT,   -- spark.openlineage.parentRunId: the task run's OpenLineage run id (a UUID)
    root_parent_job_namespace TEXT,   -- the root of that hierarchy (an Airflow DAG run):
                                      -- spark.openlineage.rootParentJobNamespace
    root_parent_job_name      TEXT,   -- spark.openlineage.rootParentJobName: `<dag_id>` for Airflow
    root_parent_run_id        TEXT    -- spark.openlineage.rootParentRunId: the DAG run's OpenLineage run id
);

-- One row per captured logical action: a write, or an action returning rows to the driver.
-- One logical write is one row, however many nested command events Spark fires for it
-- (CTAS, `saveAsTable` and `insertInto` fire several).
CREATE TABLE IF NOT EXISTS queries (
    query_id       TEXT PRIMARY KEY,  -- `<run_id>:<QueryExecution id>:<random>`; `stream:<stream id>:<lineage digest>`
                                      -- for a stream
    run_id         TEXT,              -- the run (runs.run_id)
    action         TEXT,              -- Spark's funcName: command, save, collect, collectToPython, ...; analyze for a
                                      -- statement Spark rejected; stream for a stream
    command        TEXT,              -- root plan node class, short: Project, InsertIntoHadoopFsRelationCommand,
                                      -- MergeIntoCommand, ...
    sql_text       TEXT,              -- the text of the spark.sql statement the query came from, also when Spark's
                                      -- analysis replaced the statement's root (a CTAS runs as
                                      -- CreateDataSourceTableAsSelectCommand: the text is read from the query below
                                      -- it); null for the DataFrame API, including a DataFrame write of a spark.sql
                                      -- query, and never a view's own text
    status         TEXT,              -- succeeded | failed | lineage_error (capture could not walk it) | running (an
                                      -- OpenLineage run whose terminal event has not arrived)
    error          TEXT,              -- the error text, or null
    duration_ms    BIGINT,            -- how long the action took
    captured_at    TIMESTAMP,         -- when the action ended
    target_dataset TEXT,              -- null when the result went back to the driver
    write_mode     TEXT               -- what the write did to the data already in its target: replace (overwrite,
                                      -- CTAS, RTAS, INSERT OVERWRITE of the whole table) | append | modify (MERGE,
                                      -- UPDATE, DELETE) | partitions (an overwrite of some partitions); null when
                                      -- not a write, or not known (docs/reference/semantics.md, "Current state")
);

-- What one write produced, as Spark measured it while running it (the write command's metrics:
-- numOutputRows, numOutputBytes, numFiles), or as an OpenLineage outputStatistics facet says. One row per
-- write (queries.query_id); its dataset is the query's target_dataset. No row: not measured (a JDBC
-- write, a table format that keeps its own counts).
CREATE TABLE IF NOT EXISTS write_statistics (
    query_id TEXT PRIMARY KEY,        -- the write (queries.query_id)
    rows     BIGINT,                  -- rows written; 0 is a write of nothing
    bytes    BIGINT,                  -- bytes written (files' sizes); null when not measured
    files    BIGINT                   -- files written; null when not measured
);

-- Rows a query read from each dataset, where Spark's scan measured them (its numOutputRows: after
-- partition pruning and the source's own filters), or as an OpenLineage inputStatistics facet says.
CREATE TABLE IF NOT EXISTS read_statistics (
    query_id TEXT,                    -- the query (queries.query_id)
    dataset  TEXT,                    -- the dataset read (canonical name)
    rows     BIGINT,                  -- rows the scans of that dataset returned
    bytes    BIGINT,                  -- bytes read, when the source reports them (OpenLineage's size)
    files    BIGINT,                  -- files read, when the source reports them
    PRIMARY KEY (query_id, dataset)
);

-- One row per dataset ever seen, under its canonical name.
CREATE TABLE IF NOT EXISTS datasets (
    dataset    TEXT PRIMARY KEY,      -- spark_catalog.db.t | file:/path | jdbc:... | local:...
    kind       TEXT,                  -- table | path | view | jdbc | local | topic (Kafka) | memory (memory sink)
    format     TEXT,                  -- parquet, csv, json, orc, text, hive, jdbc, delta, iceberg, ...
    location   TEXT,                  -- storage URI where known
    properties JSON,                  -- read and write options (path, header, delimiter, a time-travel
                                      -- version...), secrets redacted
    first_seen TIMESTAMP,             -- the first capture that named it
    last_seen  TIMESTAMP              -- the latest capture that named it
);

-- One row per (dataset, column) ever seen; nested struct fields use dotted paths.
CREATE TABLE IF NOT EXISTS dataset_columns (
    dataset     TEXT,                 -- canonical name, as in datasets
    column_name TEXT,                 -- a nested struct field is a dotted path (address.city)
    data_type   TEXT,                 -- as Spark reports it
    nullable    BOOLEAN,              -- as Spark reports it
    first_seen  TIMESTAMP,
    last_seen   TIMESTAMP,
    ordinal     INTEGER,    -- position in the dataset's schema as last seen (1-based, nested fields flattened)
    PRIMARY KEY (dataset, column_name)
);

-- The edges are stored once each, with compact records of the captures that produced them
-- (docs/reference/store.md). Read them through the view `column_lineage` (views.sql): one row per
-- (query, edge), as captured. A job that runs every day with unchanged lineage adds one
-- `edge_captures` row a day, not one row per edge.

-- Each distinct edge once: target column <- source column by one transform (a guess or not).
CREATE TABLE IF NOT EXISTS edges (
    edge_id        UBIGINT PRIMARY KEY,  -- digest of the columns below but sets, guess only when true (store/edge_ids.py)
    target_dataset TEXT,              -- null: the result went to the driver (an access record)
    target_column  TEXT,              -- null: indirect edge applying to every column of the target
    source_dataset TEXT,              -- the dataset read
    source_column  TEXT,              -- the column read (a dotted path for a nested field)
    transform      TEXT,              -- identity | rename | derived | aggregate | filter | join | group_by | sort | window | conditional
    kind           TEXT,              -- direct | indirect
    expression     TEXT,              -- Spark SQL text in source column names; condition or key for indirect edges
    masking        BOOLEAN,           -- a hashing/masking function or a count lies on the path
    sets           UBIGINT[],         -- the sets (edge_sets.set_id) holding this edge: a walk goes from an
                                      -- edge to its captures without reading edge_sets
    guess          BOOLEAN            -- true: a conservative guess, the source may not really feed the target
                                      -- (a Python function that could not be read is taken to compute every
                                      -- output from every input it receives; capture_errors stage 'python'
                                      -- says why); false or null: read from the code
);

-- Sets of edges, stored once per distinct set: what one capture of a query wrote.
CREATE TABLE IF NOT EXISTS edge_sets (
    set_id  UBIGINT,                  -- digest of the set's sorted edge ids
    edge_id UBIGINT                   -- an edge of the set (edges.edge_id)
);

-- One row per capture: query `query_id` of run `run_id` wrote the edges of `set_id` at
-- `captured_at`. The only row a job run with unchanged lineage adds. An OpenLineage run sent
-- event by event has one row per event that added edges; a replayed batch adds none. `prune`
-- replaces a set's old rows by two summary rows (query_id null, `captures` the number of rows
-- they stand for) holding its first and last capture time.
CREATE TABLE IF NOT EXISTS edge_captures (
    query_id    TEXT,                 -- the query (null on a summary row left by prune)
    run_id      TEXT,                 -- its run
    set_id      UBIGINT,              -- the edges it wrote (edge_sets.set_id)
    captured_at TIMESTAMP,            -- when
    captures    BIGINT DEFAULT 1      -- 1; more on a summary row left by prune
);

-- A walk looks edges up by either end, and goes from an edge's sets to their captures.
CREATE INDEX IF NOT EXISTS edges_target ON edges (target_dataset);
CREATE INDEX IF NOT EXISTS edges_source ON edges (source_dataset);
CREATE INDEX IF NOT EXISTS edge_captures_set ON edge_captures (set_id);
-- Each write asks which of its queries the store holds already (an OpenLineage run event by
-- event, a replayed batch): a lookup, not a scan of every capture ever made.
CREATE INDEX IF NOT EXISTS edge_captures_query ON edge_captures (query_id);

-- When OpenLineage runs started (their START event): a terminal event sent on its own still
-- gets queries.duration_ms from it, whichever of the two arrived first.
CREATE TABLE IF NOT EXISTS query_starts (
    query_id   TEXT PRIMARY KEY,      -- the run's queries row
    started_at TIMESTAMP              -- the START event's time
);

-- Problems capture met: with a query that could not be read or walked, or with none (a spooled
-- batch that cannot be written, a stream that failed, lineage a Kafka broker refused).
CREATE TABLE IF NOT EXISTS capture_errors (
    captured_at TIMESTAMP,
    run_id      TEXT,                 -- the run, when known
    query_id    TEXT,                 -- the query, when the problem is one query's
    stage       TEXT,                 -- listener | plan | python (why edges are a guess) | walk | stream |
                                      -- store | spool | kafka
    error       TEXT                  -- what went wrong (at most 4,000 characters)
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

-- Classifications (labels) on columns: `pii`, `pii.email` (a kind of `pii`), any dotted name.
-- Labels travel downstream along direct, unmasked edges at question time (the rules:
-- docs/reference/semantics.md); this table holds only what was declared. A row with
-- value false is a review saying the column does NOT carry the label (nor its kinds): it wins
-- over a propagated label there and stops it going further.
CREATE TABLE IF NOT EXISTS column_labels (
    dataset     TEXT,                 -- canonical name, as in dataset_columns
    column_name TEXT,
    label       TEXT,                 -- dotted, lower case
    value       BOOLEAN,              -- true: carries it; false: reviewed, does not
    source      TEXT,                 -- set (CLI, REST, UI) | file (a classifications file) | spark (Spark's metadata,
                                      -- read at capture)
    origin      TEXT,                 -- the file, or where Spark keeps it: column metadata, column comment, table
                                      -- property lineage.classification.<column>
    set_by      TEXT,                 -- the OS user, `--by`, or the REST token's name
    set_at      TIMESTAMP,
    PRIMARY KEY (dataset, column_name, label, source)
);

-- Every change of column_labels, oldest first: who set or removed which label, when. A label
-- seen again unchanged (Spark's metadata is read at every capture) adds no row. Loading a
-- classifications file again removes what it declared before and no longer declares.
CREATE TABLE IF NOT EXISTS label_changes (
    changed_at  TIMESTAMP,
    action      TEXT,                 -- set | unset
    dataset     TEXT,
    column_name TEXT,
    label       TEXT,
    value       BOOLEAN,
    source      TEXT,
    origin      TEXT,
    changed_by  TEXT                  -- as column_labels.set_by
);

-- Functions a classifications file declares as masking (the user's own hashing UDFs), beside
-- Spark's built-in ones: an edge whose expression passes its source column through one masks.
CREATE TABLE IF NOT EXISTS masking_functions (
    name     TEXT PRIMARY KEY,        -- lower case, as called in an edge's expression
    origin   TEXT,                    -- the file that declared it
    added_at TIMESTAMP
);

-- Policy violations a lineage server found (`serve --policy`), and their webhook delivery.
CREATE TABLE IF NOT EXISTS policy_violations (
    violation_id TEXT PRIMARY KEY,    -- digest of rule, dataset, column and label
    rule         TEXT,
    kind         TEXT,                -- forbid | require_masking | readers | protect
    label        TEXT,
    dataset      TEXT,
    column_name  TEXT,
    detail       JSON,                -- the violation as `check --format json` gives it
    found_at     TIMESTAMP,
    last_seen    TIMESTAMP,           -- the latest capture behind it
    notified_at  TIMESTAMP,           -- the webhook took it (null: not yet, or no webhook)
    attempts     INTEGER,             -- webhook calls made for it
    gave_up_at   TIMESTAMP,           -- the webhook refused it past every retry
    last_error   TEXT,
    resolved_at  TIMESTAMP            -- a later write of its column no longer has it (null: open)
);

-- Who asked the lineage server what, or was refused (`serve --access`): one row per request that
-- carried an identity or was refused. Label changes are in `label_changes`. Pruned with
-- `--keep-audit` (default 400 days). docs/security.md
CREATE TABLE IF NOT EXISTS audit_log (
    requested_at TIMESTAMP,
    identity     TEXT,                -- who: a token's name, a user of the issuer or proxy; null: nobody known
    groups       TEXT[],              -- the identity's groups
    via          TEXT,                -- token | oidc | session | proxy | writer
    client       TEXT,                -- the client's address
    method       TEXT,
    route        TEXT,                -- the route's path template: /api/datasets/{dataset:path}
    path         TEXT,                -- the path asked, without its query string
    datasets     TEXT[],              -- the datasets the request named
    status       INTEGER,             -- the HTTP status answered
    withheld     INTEGER,             -- datasets and rows the answer withheld from this identity
    detail       TEXT                 -- why it was refused (never a secret)
);
CREATE INDEX IF NOT EXISTS audit_log_time ON audit_log (requested_at);
