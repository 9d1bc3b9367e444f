"""Write targets: one queries row per logical write, the right target name, no duplicate edges."""
from __future__ import annotations

from collections import Counter

import duckdb
import pytest


def _write_queries(got):
    return [q for q in got.queries if q["target_dataset"] is not None]


def test_dataframe_save_parquet_csv_json(lineage, spark, people, tmp_path):
    for fmt in ("parquet", "csv", "json"):
        out = tmp_path / f"out_{fmt}"
        df = spark.table("people").selectExpr("name", "amount * 2 AS double_amount")
        got = lineage.run(lambda df=df, fmt=fmt, out=out: getattr(df.write.mode("overwrite"), fmt)(str(out)))
        assert [q["target_dataset"] for q in got.queries] == [f"file:{out}"]
        assert got.simple() == {("name", "name", "identity"), ("double_amount", "amount", "derived")}
        assert {e.target_dataset for e in got.edges} == {f"file:{out}"}
    saved = lineage.run(lambda: spark.table("people").select("id").write.mode("overwrite")
                        .format("parquet").save(str(tmp_path / "out_save")))
    assert saved.queries[0]["target_dataset"] == f"file:{tmp_path / 'out_save'}"


def test_save_as_table_is_one_logical_write(lineage, spark, people):
    got = lineage.run(lambda: spark.table("people").selectExpr("id", "upper(name) AS uname")
                      .write.mode("overwrite").saveAsTable("t_saved"))
    writes = _write_queries(got)
    assert len(writes) == 1, got.queries
    assert writes[0]["target_dataset"] == "spark_catalog.default.t_saved"
    assert Counter((e.target_column, e.source_column) for e in got.edges) == {("id", "id"): 1, ("uname", "name"): 1}
    assert {e.target_dataset for e in got.edges} == {"spark_catalog.default.t_saved"}
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        table = con.execute("SELECT kind, location FROM datasets WHERE dataset = 'spark_catalog.default.t_saved'").fetchone()
        paths = con.execute("SELECT count(*) FROM datasets WHERE dataset = ?", [table[1]]).fetchone()[0]
        columns = con.execute("SELECT count(*) FROM dataset_columns WHERE dataset = ?", [table[1]]).fetchone()[0]
    assert table[0] == "table" and table[1].endswith("/t_saved")
    assert (paths, columns) == (0, 0), "the table's location is not a second dataset"


def test_ctas_and_create_table_using_as(lineage, spark, people):
    got = lineage.run(lambda: spark.sql("CREATE TABLE t_ctas USING parquet AS SELECT id, amount + 1 AS a1 FROM people"))
    writes = _write_queries(got)
    assert len(writes) == 1
    assert writes[0]["target_dataset"] == "spark_catalog.default.t_ctas"
    assert got.simple() == {("id", "id", "identity"), ("a1", "amount", "derived")}
    assert len(got.edges) == 2


def test_insert_into_with_column_list_and_overwrite_partition(lineage, spark, people):
    spark.sql("CREATE TABLE IF NOT EXISTS t_ins (who STRING, total DOUBLE, dept STRING) USING parquet PARTITIONED BY (dept)")
    got = lineage.run(lambda: spark.sql("INSERT INTO t_ins (total, who, dept) SELECT amount, name, dept FROM people"))
    assert [q["target_dataset"] for q in got.queries] == ["spark_catalog.default.t_ins"]
    assert got.simple() == {("who", "name", "rename"), ("total", "amount", "rename"), ("dept", "dept", "identity")}
    assert got.queries[0]["sql_text"].startswith("INSERT INTO t_ins")
    over = lineage.run(lambda: spark.sql("INSERT OVERWRITE t_ins PARTITION (dept = 'a') "
                                         "SELECT name, amount FROM people WHERE dept = 'a'"))
    assert over.simple("direct") == {("who", "name", "rename"), ("total", "amount", "rename")}
    assert (None, "dept", "filter") in over.simple("indirect")


def test_insert_into_dataframe_api(lineage, spark, people):
    spark.sql("CREATE TABLE IF NOT EXISTS t_into (id INT, name STRING) USING parquet")
    got = lineage.run(lambda: spark.table("people").select("id", "name").write.insertInto("t_into"))
    assert [q["target_dataset"] for q in got.queries] == ["spark_catalog.default.t_into"]
    assert got.simple() == {("id", "id", "identity"), ("name", "name", "identity")}


def test_read_only_actions_have_null_target(lineage, spark, people):
    df = spark.table("people").select("email")
    for action in (df.collect, df.count, lambda: df.show(1)):
        got = lineage.run(action)
        assert got.queries and all(q["target_dataset"] is None for q in got.queries)
    got = lineage.run(df.collect)
    assert got.simple() == {("email", "email", "identity")}


def test_failed_action_is_recorded(lineage, spark, people):
    def fail():
        try:
            spark.sql("SELECT raise_error(concat('bad ', name)) FROM people").collect()
        except Exception:  # noqa: BLE001 - the job's own failure
            pass
    got = lineage.run(fail)
    assert [q["status"] for q in got.queries] == ["failed"]
    assert "bad" in got.queries[0]["error"]


def test_ddl_is_not_a_query(lineage, spark):
    got = lineage.run(lambda: (spark.sql("CREATE TABLE IF NOT EXISTS t_ddl (x INT) USING parquet"),
                               spark.sql("DROP TABLE t_ddl")))
    assert got.queries == []


def test_ctas_query_is_read_and_walked_once(lineage, spark, people, monkeypatch):
    """A CTAS fires its inner write, then a wrapper carrying the same query: the plan is read once
    (the wrapper's target facts only), and the table still gets the query's columns and types."""
    from lineage_listener.capture.reading import planreader

    reads: list[bool] = []
    real = planreader.read_query
    monkeypatch.setattr(planreader, "read_query", lambda qe, target: reads.append(target) or real(qe, target))
    got = lineage.run(lambda: spark.sql("CREATE TABLE t_once USING parquet AS "
                                        "SELECT id, named_struct('n', name) AS s, amount * 2 AS a2 FROM people"))
    assert len(reads) == 1, "the wrapper's plan is the inner write's query: not read again"
    assert [q["target_dataset"] for q in _write_queries(got)] == ["spark_catalog.default.t_once"]
    assert got.simple() >= {("id", "id", "identity"), ("a2", "amount", "derived")}
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        columns = con.execute("SELECT column_name, data_type, ordinal FROM dataset_columns "
                              "WHERE dataset = 'spark_catalog.default.t_once' ORDER BY ordinal").fetchall()
    schema = spark.table("t_once").schema
    want = [("id", schema["id"].dataType.typeName()), ("s", "struct"), ("s.n", "string"),
            ("a2", schema["a2"].dataType.simpleString())]
    assert [(c, t) for c, t, _ in columns] == want and [o for *_, o in columns] == [1, 2, 3, 4]


@pytest.mark.parametrize("reader", ["compact", "json"])
def test_an_action_on_a_commands_result_is_not_a_second_statement(lineage, spark, people, monkeypatch, caplog,
                                                                   reader):
    """``spark.sql(cmd).collect()``: Spark reports the command, then the collect of its result rows, whose
    plan is the command again. One statement, one ``queries`` row: the command's (with either plan reader)."""
    from lineage_listener.capture.reading import planreader

    monkeypatch.setenv(planreader.ENV, reader)
    if reader == "compact":
        planreader.install_default(background=False)
        assert planreader.head(spark.sql("SELECT 1")._jdf.queryExecution()) is not None
    table = f"t_result_{reader}"
    spark.sql(f"CREATE TABLE {table} (who STRING, total DOUBLE) USING parquet")
    got = lineage.run(lambda: spark.sql(f"INSERT INTO {table} SELECT name, amount FROM people").collect())
    assert [(q["action"], q["target_dataset"]) for q in got.queries] == [("command", f"spark_catalog.default.{table}")]
    assert got.simple() == {("who", "name", "rename"), ("total", "amount", "rename")}
    ctas = lineage.run(lambda: spark.sql(f"CREATE TABLE {table}_as USING parquet AS SELECT id FROM people").collect())
    assert [(q["action"], q["target_dataset"]) for q in ctas.queries] == [
        ("command", f"spark_catalog.default.{table}_as")]
    caplog.clear()
    shown = lineage.run(lambda: spark.sql("SHOW TABLES").collect())
    limited = lineage.run(lambda: spark.sql("SHOW TABLES").limit(1).collect())  # a query over the result alone
    assert shown.queries == limited.queries == [] and "unknown plan node" not in caplog.text
    read = lineage.run(lambda: spark.sql(f"SELECT who FROM {table}").collect())  # a query's own collect stays
    assert [(q["action"], q["target_dataset"]) for q in read.queries] == [("collectToPython", None)]
