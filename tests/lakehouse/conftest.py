"""One Spark session with Delta Lake and Apache Iceberg (real jars from ``make jars``).

A session whose extensions are Delta's and Iceberg's must be its own JVM, so these tests
run as their own pytest process (``make test-lakehouse``), on each Spark line a jar set
exists for. The ``spark`` fixture here replaces the suite's plain one; ``lineage``
(the capture harness) comes from the root ``conftest.py``.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.jars import jar_set

#: The jar set for this PySpark line: ``lakehouse-<major>.<minor>`` (tests/jars/<set>/pom.xml).
SPARK_LINE = ".".join(__import__("pyspark").__version__.split(".")[:2])
JAR_SET = f"lakehouse-{SPARK_LINE}"


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    pytest.importorskip("delta", reason="the delta-spark package (pyproject extra `lakehouse`)")
    jars = jar_set(JAR_SET)
    warehouse = tmp_path_factory.mktemp("warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("lineage-listener-lakehouse-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.jars", ",".join(str(j) for j in jars))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension,"
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.ice.type", "hadoop")
        .config("spark.sql.catalog.ice.warehouse", str(warehouse / "iceberg"))
        .config("spark.sql.warehouse.dir", str(warehouse / "spark"))
        .config("spark.driver.extraJavaOptions", "-Dderby.system.home=" + str(warehouse))
        # Small local tables: few partitions everywhere (Delta replays its log in 50 by default).
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.databricks.delta.stats.collect", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.sql("CREATE DATABASE IF NOT EXISTS db")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def raw(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Raw parquet files (orders, prices) as temp views, and their dataset names."""
    root = tmp_path_factory.mktemp("raw")
    spark.sql("SELECT * FROM VALUES (1, 10, 2), (1, 11, 1), (2, 10, 5), (4, 11, 1) AS t(id, pid, qty)") \
        .write.parquet(str(root / "orders"))
    spark.sql("SELECT * FROM VALUES (10, 'pen', 1.5D), (11, 'ink', 4.0D) AS t(pid, name, price)") \
        .write.parquet(str(root / "prices"))
    spark.read.parquet(str(root / "orders")).createOrReplaceTempView("orders")
    spark.read.parquet(str(root / "prices")).createOrReplaceTempView("prices")
    return {"orders": f"file:{root / 'orders'}", "prices": f"file:{root / 'prices'}"}
