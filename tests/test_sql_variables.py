"""SQL variables carry the lineage of the query that set them into the statements that read them
(``docs/reference/semantics.md``, Session variables), captured in process; the zero-code bridge is
checked in ``tests/test_zero_code_run.py``.

Spark 3.5's parser has no ``DECLARE VARIABLE`` (SQL variables came with Spark 4.0): there the module
checks only that the statement is rejected, so the limit stays true.
"""
from __future__ import annotations

from typing import Any

import pyspark
import pytest

from lineage_listener.capture.reading import planreader

SPARK4 = int(pyspark.__version__.split(".")[0]) >= 4


@pytest.fixture
def source(spark: Any) -> Any:
    spark.sql("DROP TABLE IF EXISTS var_src")
    spark.sql("CREATE TABLE var_src (x INT, y STRING, z INT) USING parquet")
    spark.sql("INSERT INTO var_src VALUES (1, 'a', 1), (2, 'b', 2)")
    yield "spark_catalog.default.var_src"
    for table in ("var_src", "var_m", "var_lit", "var_dflt", "var_imm", "var_script"):
        spark.sql(f"DROP TABLE IF EXISTS {table}")
    if SPARK4:
        for name in ("var_v", "var_w"):
            spark.sql(f"DROP TEMPORARY VARIABLE IF EXISTS {name}")


def _direct(got: Any, column: str) -> set[tuple[str, str, str]]:
    return {(e.source_dataset, e.source_column, e.transform) for e in got.edges if e.target_column == column}


@pytest.mark.skipif(SPARK4, reason="Spark 4 has SQL variables")
def test_spark35_has_no_sql_variables(spark):
    from pyspark.errors import ParseException

    with pytest.raises(ParseException):
        spark.sql("DECLARE VARIABLE var_v INT DEFAULT 0")


@pytest.mark.skipif(not SPARK4, reason="SQL variables came with Spark 4.0")
@pytest.mark.parametrize("plan_reader", ["compact", "json"])
def test_variable_set_from_a_query_carries_its_lineage(lineage, spark, source, plan_reader, monkeypatch):
    """SET VAR from a query, then a CTAS reading it; from a literal, nothing; DECLARE from another variable."""
    monkeypatch.setenv(planreader.ENV, plan_reader)
    lineage.run("DECLARE VARIABLE var_v INT DEFAULT 0")
    set_var = lineage.run("SET VAR var_v = (SELECT max(x) FROM var_src WHERE z > 0)")
    assert [q["command"] for q in set_var.queries] == ["SetVariable"]
    assert set_var.queries[0]["target_dataset"] is None  # read into the session: an access record
    assert _direct(set_var, "var_v") == {(source, "x", "aggregate"), (source, "z", "conditional")}

    got = lineage.run("CREATE TABLE var_m USING parquet AS SELECT var_v AS m, y FROM var_src")
    assert _direct(got, "m") == {(source, "x", "aggregate"), (source, "z", "conditional")}
    assert got.edge("m", "x", "aggregate").expression == f"(SELECT max(x) FROM {source})"
    assert _direct(got, "y") == {(source, "y", "identity")}

    lineage.run("DECLARE VARIABLE var_w INT DEFAULT var_v + 1")  # a default computed from var_v
    lineage.run("SET VAR var_v = 5")  # from a literal: var_v carries nothing from now on
    got = lineage.run("CREATE TABLE var_lit USING parquet AS SELECT var_v AS m, var_w AS k FROM var_src")
    assert _direct(got, "m") == set()
    assert _direct(got, "k") == {(source, "x", "aggregate"), (source, "z", "conditional")}
    assert [q["status"] for q in got.queries] == ["succeeded"]

    lineage.run("DROP TEMPORARY VARIABLE var_w")
    lineage.run("DECLARE VARIABLE var_w INT DEFAULT 0")  # a new variable of the same name: nothing
    assert _direct(lineage.run("SELECT var_w AS k FROM var_src"), "k") == set()


@pytest.mark.skipif(not SPARK4, reason="SQL variables came with Spark 4.0")
def test_execute_immediate(lineage, spark, source):
    """EXECUTE IMMEDIATE ... INTO sets a variable; a statement it runs reads one; USING passes one
    to a query. (Sessions keep their own variables: checked zero-code, where every session is captured.)"""
    lineage.run("DECLARE VARIABLE var_v INT DEFAULT 0")
    lineage.run("EXECUTE IMMEDIATE 'SELECT max(z) FROM var_src' INTO var_v")
    got = lineage.run("EXECUTE IMMEDIATE 'CREATE TABLE var_imm USING parquet AS SELECT var_v AS m FROM var_src'")
    assert _direct(got, "m") == {(source, "z", "aggregate")}
    got = lineage.run("EXECUTE IMMEDIATE 'SELECT ? + x AS q FROM var_src' USING var_v")
    assert _direct(got, "q") == {(source, "x", "derived"), (source, "z", "aggregate")}



@pytest.mark.skipif(not SPARK4, reason="SQL scripting came with Spark 4.0")
def test_sql_script_local_variable(lineage, spark, source):
    got = lineage.run("""BEGIN
        DECLARE lv INT DEFAULT 0;
        SET lv = (SELECT min(z) FROM var_src);
        CREATE TABLE var_script USING parquet AS SELECT lv AS m FROM var_src;
    END""")
    writes = [q for q in got.queries if q["target_dataset"]]
    assert [q["target_dataset"] for q in writes] == ["spark_catalog.default.var_script"]
    assert _direct(got, "m") == {(source, "z", "aggregate")}
