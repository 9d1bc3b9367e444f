"""The lakehouse page's real run: its MERGE on its two Delta tables under capture, then the page's
commands on the store, from the store's folder, print what the page shows."""
from __future__ import annotations

import re
import shlex

import pytest

from tests.lakehouse.conftest import SPARK_LINE
from tests.test_docs_commands import ROOT, compare, examples, run_shown

PAGE = "docs/lakehouse.md"


@pytest.mark.skipif(SPARK_LINE != "3.5", reason="the page's run is Delta 3.3 on PySpark 3.5")
def test_the_pages_merge_prints_what_the_page_shows(spark, tmp_path):
    """The tables are made before capture starts: the store holds the MERGE alone, as the page's."""
    import lineage_listener

    text = (ROOT / PAGE).read_text()
    block = re.search(r"```\n(-- shop\.customers .*?)```", text, re.S).group(1)
    statement = block.split("\n\n")[0].split("\n", 1)[1]  # after the comment, up to the commands
    spark.sql("CREATE DATABASE IF NOT EXISTS shop")
    try:
        spark.sql("CREATE TABLE shop.customers (id INT, balance DOUBLE, name STRING) USING delta")
        spark.sql("CREATE TABLE shop.updates (id INT, amount DOUBLE, name STRING, closed BOOLEAN) USING delta")
        spark.sql("INSERT INTO shop.customers VALUES (1, 10.0D, 'ann'), (2, 5.0D, 'bob')")
        spark.sql("INSERT INTO shop.updates VALUES (1, 2.5D, 'ANN', false), (2, 0.0D, 'bob', true), "
                  "(3, 7.0D, 'cid', false)")
        handle = lineage_listener.enable(spark, store=str(tmp_path / "lineage.duckdb"))
        try:
            spark.sql(statement).collect()
            assert handle.flush(60)
        finally:
            lineage_listener.disable(spark)
    finally:
        spark.sql("DROP DATABASE IF EXISTS shop CASCADE")
    shown = [e for e in examples(PAGE) if e.line > text[:text.index(block)].count("\n")]
    assert len(shown) == 2
    problems = [p for e in shown for p in compare(e, run_shown(e, tmp_path, shlex.split(e.command)), {})]
    assert not problems, "\n\n".join(problems)
