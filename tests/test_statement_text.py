"""A ``spark.sql`` write keeps its statement text (``queries.sql_text``) when analysis replaces the plan's
root by a command of its own (a CTAS), with the compact plan reader and with py4j calls; a DataFrame write
of a ``spark.sql`` query, or one reading a view, does not take another statement's text."""
from __future__ import annotations

import pytest

from lineage_listener.capture.reading import planreader


@pytest.fixture(params=["compact", "json"])
def reader(request, monkeypatch):
    monkeypatch.setenv(planreader.ENV, request.param)
    return request.param


def sql_of_write(got) -> str | None:
    [write] = [q for q in got.queries if q["target_dataset"]]
    return write["sql_text"]


def test_ctas_keeps_its_statement_text(lineage, spark, people, reader):
    spark.sql("CREATE OR REPLACE TEMP VIEW people_v AS SELECT id, amount * 2 AS twice FROM people")
    statements = [f"CREATE TABLE st_ctas_{reader} USING parquet AS SELECT id, amount + 1 AS a1 FROM people",
                  f"CREATE TABLE st_part_{reader} USING parquet PARTITIONED BY (dept) AS SELECT id, dept FROM people",
                  f"CREATE TABLE st_view_{reader} USING parquet AS SELECT * FROM people_v"]
    for statement in statements:
        got = lineage.run(lambda: spark.sql(statement))
        assert sql_of_write(got) == statement
    query = "SELECT id, name FROM people WHERE amount > 0"
    got = lineage.run(lambda: spark.sql(query).write.mode("overwrite").saveAsTable(f"st_df_{reader}"))
    assert sql_of_write(got) is None  # the DataFrame API wrote it: not the SELECT's text
    got = lineage.run(lambda: spark.table("people_v").write.mode("overwrite").saveAsTable(f"st_dfv_{reader}"))
    assert sql_of_write(got) is None  # the view's own text is not this write's
