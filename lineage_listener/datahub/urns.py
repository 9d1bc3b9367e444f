"""Our dataset names -> DataHub dataset URNs (platform + name), and field URNs.

Files: platform ``file`` and the path; object stores ``s3`` (s3/s3a/s3n), ``gcs``,
``abs`` with ``bucket/key``; ``hdfs`` with the path; catalog tables and views ``hive``
with ``db.table``; JDBC the database's platform with ``db.table``; in-memory data
``spark`` with the ``local:`` name.

>>> platform_and_name("file:/data/raw/customers.csv")
('file', '/data/raw/customers.csv')
>>> platform_and_name("s3a://bucket/raw/orders")
('s3', 'bucket/raw/orders')
>>> platform_and_name("spark_catalog.sales.customer_summary")
('hive', 'sales.customer_summary')
>>> platform_and_name("jdbc:postgresql://db:5432/shop/public.orders")
('postgres', 'shop.public.orders')
>>> field_urn(dataset_urn("spark_catalog.sales.t"), "address.city")
'urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:hive,sales.t,PROD),address.city)'
"""
from __future__ import annotations

from datahub.emitter.mce_builder import make_dataset_urn, make_schema_field_urn

_OBJECT_STORES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gcs", "wasb": "abs", "wasbs": "abs",
                  "abfs": "abs", "abfss": "abs"}
_JDBC = {"postgresql": "postgres", "mysql": "mysql", "sqlserver": "mssql", "oracle": "oracle",
         "redshift": "redshift", "snowflake": "snowflake", "mariadb": "mariadb", "db2": "db2"}


def platform_and_name(dataset: str) -> tuple[str, str]:
    if dataset.startswith("file:"):
        return "file", dataset[len("file:"):]
    if dataset.startswith("local:"):
        return "spark", dataset
    if dataset.startswith("jdbc:"):
        sub, _, tail = dataset[len("jdbc:"):].partition("://")
        _, _, path = tail.partition("/")
        db, _, table = path.partition("/")
        return _JDBC.get(sub, sub), f"{db}.{table}" if table else db
    if "://" in dataset:
        scheme, _, tail = dataset.partition("://")
        if scheme in _OBJECT_STORES:
            return _OBJECT_STORES[scheme], tail
        return scheme, "/" + tail.partition("/")[2]
    catalog, _, name = dataset.partition(".")
    return ("hive", name) if catalog == "spark_catalog" and name else ("spark", dataset)


def dataset_urn(dataset: str, env: str = "PROD", platform: str | None = None) -> str:
    """The URN of one of our datasets; ``platform`` overrides the one the name implies."""
    implied, name = platform_and_name(dataset)
    return make_dataset_urn(platform or implied, name, env)


def field_urn(dataset_urn_: str, column: str) -> str:
    """A schemaField URN; nested struct fields keep their dotted path (DataHub's v1 field paths)."""
    return make_schema_field_urn(dataset_urn_, column)
