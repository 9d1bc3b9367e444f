"""Zero-code capture of a MERGE job: an unmodified ``spark-sql`` file with the lakehouse jars
(``--jars``) and ``$(lineage-listener spark-conf --store ...)``, through the JVM bridge."""
from __future__ import annotations

from pathlib import Path

from tests.jars import jar_set
from tests.lakehouse.conftest import JAR_SET
from tests.test_bridge_jobs import capture_args, query, run_job

SQL = """
CREATE TABLE dim (id INT, amount DOUBLE, name STRING) USING delta;
INSERT INTO dim VALUES (1, 1.0D, 'a'), (2, 2.0D, 'b');
CREATE TABLE stage USING delta AS SELECT * FROM VALUES (1, 10.0D, 'x'), (3, 3.0D, 'c') AS s(id, amount, name);
MERGE INTO dim t USING stage s ON t.id = s.id
  WHEN MATCHED THEN UPDATE SET amount = t.amount + s.amount
  WHEN NOT MATCHED THEN INSERT *;
"""


def test_merge_job_under_spark_sql_with_the_bridge(tmp_path: Path) -> None:
    from lineage_listener.jar import bridge_jar

    bridge_jar()
    jars = jar_set(JAR_SET)
    store, sql = tmp_path / "lineage.duckdb", tmp_path / "merge.sql"
    sql.write_text(SQL)
    args = capture_args(store)  # --jars <bridge jar> ...: the format jars join it (a second --jars would win)
    args[args.index("--jars") + 1] += "," + ",".join(map(str, jars))
    rc, _, err = run_job([*args, "--name", "bridge_merge_job",
                          "--conf", "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
                          "--conf", "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog",
                          "--conf", "spark.databricks.delta.snapshotPartitions=2",
                          "--conf", "spark.sql.catalogImplementation=in-memory",
                          "--conf", f"spark.sql.warehouse.dir={tmp_path / 'wh'}", "-f", str(sql)],
                         tmp_path, tool="spark-sql")
    assert rc == 0, err[-3000:]
    merges = query(store, "SELECT query_id, target_dataset, sql_text FROM queries WHERE command = 'MergeIntoCommand'")
    assert len(merges) == 1 and merges[0][1] == "spark_catalog.default.dim"
    assert merges[0][2].strip().startswith("MERGE INTO dim")
    dim, stage = "spark_catalog.default.dim", "spark_catalog.default.stage"
    assert set(query(store, "SELECT target_column, source_dataset, source_column, transform FROM column_lineage "
                            "WHERE query_id = ?", [merges[0][0]])) == {
        ("amount", dim, "amount", "derived"), ("amount", stage, "amount", "derived"),
        ("amount", stage, "amount", "identity"), ("id", stage, "id", "identity"), ("name", stage, "name", "identity"),
        (None, dim, "id", "join"), (None, stage, "id", "join")}
    # Delta's own queries (log replay, touched files, its data write) left nothing behind
    assert query(store, "SELECT count(*) FROM queries WHERE target_dataset IS NULL") == [(0,)]
    assert query(store, "SELECT count(*) FROM column_lineage WHERE source_dataset LIKE '%_delta_log%'") == [(0,)]
