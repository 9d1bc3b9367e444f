"""One Hive-enabled Spark application (Derby metastore, Hive-format tables) of its own, run once for
the tests that need one: starting such an application is the slow part, so ``test_hive.py`` and
``test_multi_insert.py`` each read their own stores from the same run (the ``hive_app`` fixture of
``conftest.py``). Each part enables capture into its own store and disables it when done, and drops
its tables then, so the parts see what an application of their own would."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PRELUDE = """
import lineage_listener
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.warehouse.dir", {wh!r})
         .config("spark.driver.extraJavaOptions", "-Dderby.system.home=" + {wh!r})
         .enableHiveSupport().getOrCreate())
"""

#: Hive tables (``test_hive.py``): HiveTableRelation, InsertIntoHiveTable, Hive CTAS into ``hive.duckdb``.
HIVE_TABLES = """
handle = lineage_listener.enable(spark, store={hive!r})
spark.sql("CREATE TABLE src (k INT, v STRING) STORED AS TEXTFILE")
spark.sql("INSERT INTO src VALUES (1, 'a')")
spark.sql("CREATE TABLE dst (k INT, vv STRING) STORED AS TEXTFILE")
spark.sql("INSERT INTO dst SELECT k, upper(v) FROM src")
spark.sql("CREATE TABLE ctas STORED AS TEXTFILE AS SELECT k * 2 AS k2 FROM src")
assert handle.flush(120)
lineage_listener.disable(spark)
for table in ("src", "dst", "ctas"):
    spark.sql(f"DROP TABLE {{table}}")
"""

#: A Hive-format multi-insert (``test_multi_insert.py``) into ``multi.duckdb``, and the same writes as two
#: INSERT statements into ``separate.duckdb``.
MULTI_INSERT = """
spark.sql("CREATE TABLE src (k INT, v STRING) STORED AS TEXTFILE")
spark.sql("INSERT INTO src VALUES (1, 'a')")
spark.sql("CREATE TABLE a (k INT, v STRING) STORED AS TEXTFILE")
spark.sql("CREATE TABLE b (kk INT) STORED AS TEXTFILE")
handle = lineage_listener.enable(spark, store={multi!r})
spark.sql("FROM src INSERT INTO a SELECT k, upper(v) INSERT INTO b SELECT k + 1 WHERE k > 0").collect()
assert handle.flush(120)
lineage_listener.disable(spark)
handle = lineage_listener.enable(spark, store={separate!r})
spark.sql("INSERT INTO a SELECT k, upper(v) FROM src").collect()
spark.sql("INSERT INTO b SELECT k + 1 FROM src WHERE k > 0").collect()
assert handle.flush(120)
lineage_listener.disable(spark)
for table in ("src", "a", "b"):
    spark.sql(f"DROP TABLE {{table}}")
"""


def run(folder: Path) -> Path:
    """Run both parts in one application in ``folder``; returns ``folder`` (it holds the stores)."""
    script = folder / "hive_app.py"
    wh = str(folder / "wh")
    script.write_text(textwrap.dedent(PRELUDE.format(wh=wh))
                      + HIVE_TABLES.format(hive=str(folder / "hive.duckdb"))
                      + MULTI_INSERT.format(multi=str(folder / "multi.duckdb"),
                                            separate=str(folder / "separate.duckdb"))
                      + "spark.stop()\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return folder
