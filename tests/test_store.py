"""The store: tables on first use, datasets/columns/runs filled, secrets never stored."""
from __future__ import annotations

import duckdb


def test_tables_created_and_runs_filled(lineage, spark, people):
    lineage.run("SELECT name FROM people")
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        assert {"runs", "queries", "datasets", "dataset_columns", "column_lineage"} <= tables
        run = con.execute("SELECT run_id, app_id, app_name, spark_version, master, started_at FROM runs").fetchall()
    assert run == [(spark.sparkContext.applicationId, spark.sparkContext.applicationId,
                    spark.sparkContext.appName, spark.version, spark.sparkContext.master, run[0][5])]
    assert run[0][5] is not None


def test_datasets_and_columns(lineage, spark, people):
    lineage.run("SELECT address.city, amount FROM people")
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        ds = con.execute("SELECT kind, format, location FROM datasets WHERE dataset = ?", [people]).fetchone()
        cols = dict(con.execute("SELECT column_name, data_type FROM dataset_columns WHERE dataset = ?",
                                [people]).fetchall())
    assert ds == ("path", "parquet", people)
    assert cols["amount"] == "double" and cols["address.city"] == "string" and cols["address"] == "struct"


def test_secrets_are_redacted(lineage, spark, tmp_path):
    path = tmp_path / "secret_csv"
    spark.range(2).write.csv(str(path))
    secret = "hunter2-sup3r-s3cret"
    df = (spark.read.option("password", secret).option("fs.s3a.secret.key", secret)
          .option("sfToken", secret).option("header", "false").csv(str(path)))
    lineage.run(df.collect)
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        props = con.execute("SELECT properties FROM datasets WHERE dataset = ?", [f"file:{path}"]).fetchone()[0]
        dump = " ".join(str(r) for t in ("runs", "queries", "datasets", "dataset_columns", "column_lineage")
                        for r in con.execute(f"SELECT * FROM {t}").fetchall())
    assert secret not in dump
    assert '"password": "***"' in props and '"header": "false"' in props


def test_edges_written_in_batches_survive_many_queries(lineage, spark, people):
    def many():
        for i in range(25):
            spark.sql(f"SELECT name, amount + {i} AS a FROM people").collect()
    got = lineage.run(many)
    assert len(got.queries) == 25
    assert len(got.edges) == 50


def test_replayed_batch_adds_no_edge_twice(lineage, spark, people, tmp_path):
    """A batch written twice (bridge replay, re-ingested spool) leaves one copy of each edge."""
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.rows import row_of
    from lineage_listener.store.writer import StoreWriter

    lineage.run("SELECT upper(name) AS u FROM people")
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        tables = {t: con.execute(f"SELECT * FROM {t}").fetchall() for t in ("queries", "column_lineage")}
    replay = Batch()
    for table, rows in tables.items():
        for r in rows:
            replay.add(row_of(table, tuple(str(v) if hasattr(v, "isoformat") else v for v in r)))
    copy = tmp_path / "copy.duckdb"
    writer = StoreWriter(copy)
    assert writer.write(replay) and writer.write(replay)
    with duckdb.connect(str(copy), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM column_lineage").fetchone()[0] == len(tables["column_lineage"]) == 1
        assert con.execute("SELECT count(*) FROM queries").fetchone()[0] == 1


def test_a_batch_replayed_after_its_write_was_retargeted_adds_no_edge(tmp_path):
    """Edges are deduplicated per edge: a nested write's batch replayed after the
    wrapper renamed its target from the path to the table leaves one copy of each edge."""
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.rows import row_of
    from lineage_listener.store.writer import StoreWriter

    at, path, table = "2026-01-01 00:00:00", "file:/wh/t", "spark_catalog.db.t"
    inner = Batch()
    inner.add(row_of("queries", ("q1", "app", "command", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None, 5,
                          at, path)))
    for column in ("a", "b"):
        inner.add(row_of("column_lineage", ("q1", "app", path, column, "file:/in", column, "identity", "direct", None,
                                     False, at)))
    wrapper = Batch()
    wrapper.add(row_of("retarget", ("q1", table, path)))
    writer = StoreWriter(tmp_path / "s.duckdb")
    assert writer.write(inner) and writer.new_edges == 2
    assert writer.write(wrapper) and writer.write(inner) and writer.write(wrapper)
    with duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True) as con:
        edges = con.execute("SELECT target_dataset, target_column FROM column_lineage ORDER BY 2").fetchall()
    assert edges == [(table, "a"), (table, "b")]


def test_rows_of_one_key_in_one_batch_merge_as_in_separate_batches(tmp_path):
    """A batch of several queries names a dataset, a column and a run several times: the merge rules
    hold within the batch (earliest first_seen, latest last_seen, a null never clears a value) exactly
    as when each query's rows come in a batch of their own."""
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.rows import row_of
    from lineage_listener.store.writer import StoreWriter

    t1, t2, t3 = "2026-01-01 00:00:01", "2026-01-01 00:00:02", "2026-01-01 00:00:03"

    def rows(at, fmt, app_name):
        b = Batch()
        b.add(row_of("runs", ("app", "app", app_name, "4.0", "u", "local", t1, None)))
        b.add(row_of("datasets", ("file:/in", "path", fmt, None, None, at, at)))
        b.add(row_of("dataset_columns", ("file:/in", "a", "int", True, at, at, 0)))
        return b
    parts = [rows(t1, "csv", "job"), rows(t2, None, None), rows(t3, None, "job")]
    together, apart = Batch(), []
    for p in parts:
        together.extend(p)
    stores = {"together": tmp_path / "one.duckdb", "apart": tmp_path / "many.duckdb"}
    assert StoreWriter(stores["together"]).write(together)
    writer = StoreWriter(stores["apart"])
    assert all(writer.write(p) for p in parts)
    got = {}
    for name, path in stores.items():
        with duckdb.connect(str(path), read_only=True) as con:
            got[name] = [con.execute(q).fetchall() for q in (
                "SELECT format, CAST(first_seen AS TEXT), CAST(last_seen AS TEXT) FROM datasets",
                "SELECT CAST(first_seen AS TEXT), CAST(last_seen AS TEXT) FROM dataset_columns",
                "SELECT app_name FROM runs")]
    assert got["together"] == got["apart"]
    assert got["together"][0] == [("csv", t1, t3)] and got["together"][2] == [("job",)]
