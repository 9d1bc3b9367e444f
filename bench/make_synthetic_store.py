"""Generate a synthetic lineage store with many edges, inside DuckDB.

The shape imitates a warehouse: datasets in layers (raw files -> staging ->
marts), each table written by one job that reads one or two tables of the
layer below (fan-in), each table read by a few jobs above it (fan-out), every
job run many times (the same edges captured again at later times), some jobs
reading their input by storage path instead of table name, some jobs
overwriting their own input (cycles), dataset-level indirect edges (filter /
join keys with a null target_column) and read-only driver accesses (null
target_dataset).

    python bench/make_synthetic_store.py /tmp/lineage-10m.duckdb --edges 10000000
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lineage_listener.store.connection import open_writable  # noqa: E402
from lineage_listener.store.schema import move_edges  # noqa: E402

log = logging.getLogger("make_synthetic_store")

LAYERS = 12          # layer 0 = raw files; a column can have 11 hops of upstream
COLUMNS = 12         # columns per dataset
DATABASES = 40


def generate(path: str | os.PathLike, edges: int = 10_000_000, datasets: int | None = None,
             seed: int = 7) -> dict[str, int]:
    """Write a synthetic store of about ``edges`` column_lineage rows to ``path`` (replaced)."""
    p = Path(path)
    for suffix in ("", ".wal"):
        Path(str(p) + suffix).unlink(missing_ok=True)
    if datasets is None:
        # about 110 edges per dataset: ~14 per job run, ~8 runs per job
        datasets = max(LAYERS * 10, (edges // 110) // LAYERS * LAYERS)
    con = open_writable(p)
    con.execute("SET preserve_insertion_order = false")
    # Rows are made as a store before schema 6 held them (one per edge per capture), then moved.
    con.execute(f"CREATE TABLE column_lineage_before_v6 AS SELECT * FROM column_lineage LIMIT 0")
    params = dict(n=datasets, L=LAYERS, C=COLUMNS, DB=DATABASES, seed=seed)
    sql = lambda text: text.format(**params)  # noqa: E731

    # d -> name; layer 0 are raw path datasets, others catalog tables with a warehouse location
    con.execute(sql("""
        CREATE TEMP TABLE ds AS
        SELECT d, d % {L} AS layer,
               CASE WHEN d % {L} = 0 THEN 's3a://raw/feed' || d
                    ELSE 'spark_catalog.db' || (d % {DB}) || '.t' || d END AS name,
               CASE WHEN d % {L} = 0 THEN 's3a://raw/feed' || d
                    ELSE 'file:/wh/db' || (d % {DB}) || '.db/t' || d END AS location
        FROM range({n}) r(d)"""))
    con.execute("""
        INSERT INTO datasets
        SELECT name, CASE WHEN layer = 0 THEN 'path' ELSE 'table' END,
               CASE WHEN layer = 0 THEN 'csv' ELSE 'parquet' END, location, '{}'::JSON,
               TIMESTAMP '2025-01-01', TIMESTAMP '2025-03-01'
        FROM ds""")
    con.execute(sql("""
        INSERT INTO dataset_columns
        SELECT ds.name, 'c' || c, CASE WHEN c = 0 THEN 'bigint' ELSE 'string' END, c <> 0,
               TIMESTAMP '2025-01-01', TIMESTAMP '2025-03-01', c + 1
        FROM ds, range({C}) r(c)"""))

    # One template row per (job, edge) with the job's target d (layer >= 1).
    # Sources: primary table s1 = d-1-L*k (layer below), secondary s2 for 30% of jobs.
    # Pick a source name: 10% of edges read the source by its location (path).
    con.execute(sql("""
        CREATE TEMP TABLE job AS
        SELECT d, name AS target,
               ((d - 1 - {L} * (hash(d, {seed}) % 4)) + {n}) % {n} AS s1,
               CASE WHEN hash(d, {seed}, 2) % 10 < 3
                    THEN ((d - 1 - {L} * (4 + hash(d, {seed}, 3) % 4)) + {n}) % {n} END AS s2,
               hash(d, {seed}, 4) % 100 < 2 AS overwrites_input,
               hash(d, {seed}, 5) % 10 < 4 AS filters
        FROM ds WHERE layer > 0"""))
    con.execute(sql("""
        CREATE TEMP TABLE template AS
        WITH direct AS (
            -- every target column from the same-named column of the primary source
            SELECT j.d, j.target, 'c' || c AS target_column, j.s1 AS s, 'c' || c AS source_column,
                   CASE WHEN c % 4 = 0 THEN 'identity' WHEN c % 4 = 1 THEN 'rename'
                        WHEN c % 4 = 2 THEN 'derived' ELSE 'aggregate' END AS transform,
                   'direct' AS kind, c AS slot
            FROM job j, range({C}) r(c)
            UNION ALL
            -- fan-in: a quarter of the columns also use a column of the secondary source
            SELECT j.d, j.target, 'c' || c, j.s2, 'c' || ((c + 3) % {C}), 'derived', 'direct', 100 + c
            FROM job j, range({C}) r(c) WHERE j.s2 IS NOT NULL AND c % 4 = 2
            UNION ALL
            -- cycles: a job that overwrites its input keeps column c1
            SELECT j.d, j.target, 'c1', j.d, 'c1', 'identity', 'direct', 200
            FROM job j WHERE j.overwrites_input
        ), indirect AS (
            SELECT j.d, j.target, NULL AS target_column, j.s1 AS s, 'c0' AS source_column,
                   'filter' AS transform, 'indirect' AS kind, 300 AS slot
            FROM job j WHERE j.filters
            UNION ALL
            SELECT j.d, j.target, NULL, x.s, 'c0', 'join', 'indirect', 301 + x.i
            FROM job j, (SELECT 0 AS i UNION ALL SELECT 1) q,
                 LATERAL (SELECT CASE WHEN q.i = 0 THEN j.s1 ELSE j.s2 END AS s, q.i AS i) x
            WHERE j.s2 IS NOT NULL
        )
        SELECT t.d, t.target, t.target_column, t.s, t.source_column, t.transform, t.kind, t.slot
        FROM (SELECT * FROM direct UNION ALL SELECT * FROM indirect) t"""))
    per_run = con.execute("SELECT count(*) FROM template").fetchone()[0]
    access_per_run = datasets // 50
    runs = max(1, -(-edges // (per_run + access_per_run * 2)))
    log.info("template: %d edges per round of jobs; %d rounds", per_run, runs)

    # runs: one Spark application per (round, database) group of jobs
    con.execute(sql(f"""
        INSERT INTO runs (run_id, app_id, app_name, spark_version, spark_user, master, started_at, ended_at)
        SELECT 'app-' || r || '-' || g, 'app-' || r || '-' || g, 'etl_db' || g, '4.3.0', 'etl',
               'yarn', TIMESTAMP '2025-01-01' + INTERVAL (r) DAY + INTERVAL (g) MINUTE,
               TIMESTAMP '2025-01-01' + INTERVAL (r) DAY + INTERVAL (g + 30) MINUTE
        FROM range({runs}) a(r), range({{DB}}) b(g)"""))
    con.execute(sql(f"""
        INSERT INTO queries (query_id, run_id, action, command, sql_text, status, error, duration_ms, captured_at,
                             target_dataset)
        SELECT 'app-' || r || '-' || (j.d % {{DB}}) || ':' || j.d, 'app-' || r || '-' || (j.d % {{DB}}),
               'command', 'InsertIntoHadoopFsRelationCommand', NULL, 'succeeded', NULL, 1000,
               TIMESTAMP '2025-01-01' + INTERVAL (r) DAY + INTERVAL (j.d % 1800) SECOND, j.target
        FROM job j, range({runs}) a(r)"""))
    con.execute(sql(f"""
        INSERT INTO column_lineage_before_v6 (query_id, run_id, target_dataset, target_column, source_dataset,
                                              source_column, transform, kind, expression, masking, captured_at)
        SELECT 'app-' || r || '-' || (t.d % {{DB}}) || ':' || t.d, 'app-' || r || '-' || (t.d % {{DB}}),
               t.target, t.target_column,
               CASE WHEN hash(t.d, t.slot, {{seed}}) % 10 = 0 THEN s.location ELSE s.name END,
               t.source_column, t.transform, t.kind,
               CASE t.transform WHEN 'identity' THEN t.source_column
                                WHEN 'rename' THEN t.source_column
                                WHEN 'derived' THEN 'upper(' || t.source_column || ')'
                                WHEN 'aggregate' THEN 'sum(' || t.source_column || ')'
                                WHEN 'filter' THEN t.source_column || ' > 100'
                                ELSE 'a.' || t.source_column || ' = b.' || t.source_column END,
               t.slot % 16 = 6,
               TIMESTAMP '2025-01-01' + INTERVAL (r) DAY + INTERVAL (t.d % 1800) SECOND
        FROM template t JOIN ds s ON s.d = t.s, range({runs}) a(r)"""))
    # read-only driver accesses (collect) of column c0 of some tables
    con.execute(sql(f"""
        INSERT INTO column_lineage_before_v6 (query_id, run_id, target_dataset, target_column, source_dataset,
                                              source_column, transform, kind, expression, masking, captured_at)
        SELECT 'app-' || r || '-' || (x % {{DB}}) || ':collect' || x, 'app-' || r || '-' || (x % {{DB}}),
               NULL, NULL, ds.name, 'c' || (x % 2), 'identity', 'direct', 'c' || (x % 2), false,
               TIMESTAMP '2025-01-01' + INTERVAL (r) DAY + INTERVAL (x % 1800) SECOND
        FROM range({access_per_run}) a(x), range({runs}) b(r) JOIN ds ON ds.d = (x * 37) % {{n}}
        ORDER BY 1"""))
    total = con.execute("SELECT count(*) FROM column_lineage_before_v6").fetchone()[0]
    if total > edges:
        # trim the latest captures down to the requested size
        con.execute("""
            DELETE FROM column_lineage_before_v6 WHERE rowid IN (
                SELECT rowid FROM column_lineage_before_v6 ORDER BY captured_at DESC LIMIT ?)""", [total - edges])
        total = edges
    # Stored as each edge once, by the migration an older store goes through (timed: it is one).
    t0 = time.perf_counter()
    con.execute("BEGIN TRANSACTION")
    move_edges(con, "column_lineage_before_v6")
    con.execute("COMMIT")
    log.info("stored %d edge rows once per edge in %.1f s (the migration of an older store)", total,
             time.perf_counter() - t0)
    con.execute("CHECKPOINT")
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("runs", "queries", "datasets", "dataset_columns", "column_lineage")}
    con.close()
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", help="DuckDB file to (re)create")
    ap.add_argument("--edges", type=int, default=10_000_000)
    ap.add_argument("--datasets", type=int, default=None)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    t0 = time.perf_counter()
    counts = generate(args.path, edges=args.edges, datasets=args.datasets, seed=args.seed)
    elapsed = time.perf_counter() - t0
    print(f"generated {args.path} in {elapsed:.1f} s: "
          + ", ".join(f"{k}={v:,}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
