"""Each write records what it did to the data already in its target (``queries.write_mode``,
docs/reference/semantics.md, "Current state"): file writes by ``SaveMode``, ``saveAsTable`` and
``insertInto``, CTAS, ``INSERT OVERWRITE`` of a whole table or of partitions (static and dynamic),
reads. Real Spark (local[2]); one capture of each, in one test."""
from __future__ import annotations

from typing import Any


def test_each_write_records_what_it_does_to_its_target(spark: Any, lineage, tmp_path) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS modes")
    df = spark.range(4).selectExpr("id", "id % 2 AS p")
    out = str(tmp_path / "out")
    parts = str(tmp_path / "parts")
    writes = [
        ("overwrite by path", lambda: df.write.mode("overwrite").parquet(out), "replace"),
        ("append by path", lambda: df.write.mode("append").parquet(out), "append"),
        ("partitioned overwrite (static mode: every partition)",
         lambda: df.write.mode("overwrite").partitionBy("p").parquet(parts), "replace"),
        ("dynamic partition overwrite", lambda: df.write.mode("overwrite").partitionBy("p")
         .option("partitionOverwriteMode", "dynamic").parquet(parts), "partitions"),
        ("saveAsTable", lambda: df.write.mode("overwrite").saveAsTable("modes.t"), "replace"),
        ("saveAsTable append", lambda: df.write.mode("append").saveAsTable("modes.t"), "append"),
        ("insertInto", lambda: df.write.insertInto("modes.t"), "append"),
        ("insertInto overwrite", lambda: df.write.insertInto("modes.t", overwrite=True), "replace"),
        ("CTAS", lambda: spark.sql("CREATE TABLE modes.c USING parquet AS SELECT * FROM modes.t"), "replace"),
        ("partitioned table", lambda: spark.sql("CREATE TABLE modes.tp (id BIGINT, p BIGINT) USING parquet "
                                                "PARTITIONED BY (p)"), None),
        ("INSERT OVERWRITE of a partition", lambda: spark.sql(
            "INSERT OVERWRITE modes.tp PARTITION (p = 1) SELECT id FROM modes.t"), "partitions"),
        ("INSERT OVERWRITE of the whole table", lambda: spark.sql(
            "INSERT OVERWRITE modes.tp SELECT id, p FROM modes.t"), "replace"),
        ("INSERT INTO", lambda: spark.sql("INSERT INTO modes.tp SELECT id, p FROM modes.t"), "append"),
        ("a read", lambda: spark.table("modes.t").collect(), None),
    ]
    found = {}
    try:
        for name, action, _ in writes:
            got = lineage.run(action)
            found[name] = [q["write_mode"] for q in got.queries]
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
        got = lineage.run(lambda: spark.sql("INSERT OVERWRITE modes.tp SELECT id, p FROM modes.t"))
        found["INSERT OVERWRITE, dynamic partition mode"] = [q["write_mode"] for q in got.queries]
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
        spark.sql("DROP DATABASE IF EXISTS modes CASCADE")
    expected = {name: [mode] if mode else [] for name, _, mode in writes}
    expected["partitioned table"] = []
    expected["a read"] = [None]
    expected["INSERT OVERWRITE, dynamic partition mode"] = ["partitions"]
    assert found == expected
