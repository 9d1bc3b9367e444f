"""Dataset names: ours (``file:/p``, ``spark_catalog.db.t``, ``jdbc:...``) <-> OpenLineage (namespace, name).

OpenLineage's naming conventions: files ``file`` + path; object stores ``s3://bucket``
(any scheme kept: ``s3a://bucket``) + key; HDFS ``hdfs://host:port`` + path; JDBC
``postgres://host:port`` + ``db.table``. Catalog tables and views: the catalog as
namespace (or ``table_namespace``, e.g. ``hive://metastore:9083``) + ``db.table``.
In-memory data: ``spark-local`` + the rest of its ``local:`` name.

>>> to_openlineage("file:/data/in/orders.csv")
('file', '/data/in/orders.csv')
>>> to_openlineage("s3a://bucket/raw/orders")
('s3a://bucket', 'raw/orders')
>>> to_openlineage("hdfs://nn:8020/warehouse/t")
('hdfs://nn:8020', '/warehouse/t')
>>> to_openlineage("spark_catalog.shop.orders")
('spark_catalog', 'shop.orders')
>>> to_openlineage("jdbc:postgresql://db:5432/shop/public.orders")
('postgres://db:5432', 'shop.public.orders')
>>> all(from_openlineage(*to_openlineage(n)) == n for n in ["file:/a b/c", "s3a://b/k", "hdfs://nn:8020/p",
...     "spark_catalog.shop.orders", "jdbc:postgresql://db:5432/shop/public.orders", "local:q1/Range/ab12"])
True
>>> from_openlineage("hive://metastore:9083", "shop.orders", table_namespace="hive://metastore:9083")
'spark_catalog.shop.orders'
"""
from __future__ import annotations

LOCAL = "spark-local"
DEFAULT_CATALOG = "spark_catalog"

#: JDBC sub-protocols whose OpenLineage scheme differs.
_JDBC_SCHEMES = {"postgresql": "postgres"}
_JDBC_BACK = {v: k for k, v in _JDBC_SCHEMES.items()}
_OBJECT_STORES = ("s3", "s3a", "s3n", "gs", "wasb", "wasbs", "abfs", "abfss", "oss", "cos")
_JDBC_NAMESPACES = ("postgres", "mysql", "sqlserver", "oracle", "db2", "redshift", "snowflake", "mariadb",
                    "teradata", "jdbc")


def to_openlineage(dataset: str, table_namespace: str | None = None) -> tuple[str, str]:
    """(namespace, name) of one of our dataset names."""
    if dataset.startswith("file:"):
        path = dataset[len("file:"):]
        return "file", "/" + path.lstrip("/") if path.startswith("//") else path
    if dataset.startswith("local:"):
        return LOCAL, dataset[len("local:"):]
    if dataset.startswith("jdbc:"):
        rest = dataset[len("jdbc:"):]
        sub, _, tail = rest.partition("://")
        authority, _, path = tail.partition("/")
        db, _, table = path.partition("/")
        return f"{_JDBC_SCHEMES.get(sub, sub)}://{authority}", f"{db}.{table}" if table else db
    if "://" in dataset:
        scheme, _, tail = dataset.partition("://")
        authority, _, path = tail.partition("/")
        if scheme in _OBJECT_STORES:
            return f"{scheme}://{authority}", path
        return f"{scheme}://{authority}", "/" + path
    catalog, _, name = dataset.partition(".")
    if not name:
        return table_namespace or DEFAULT_CATALOG, dataset
    if table_namespace and catalog == DEFAULT_CATALOG:
        return table_namespace, name
    return catalog, name


def from_openlineage(namespace: str, name: str, table_namespace: str | None = None) -> str:
    """Our dataset name for an OpenLineage (namespace, name): the inverse of :func:`to_openlineage`."""
    if namespace == "file":
        return f"file:{name}"
    if namespace == LOCAL:
        return f"local:{name}"
    if table_namespace and namespace == table_namespace:
        return f"{DEFAULT_CATALOG}.{name}"
    if "://" in namespace:
        scheme, _, authority = namespace.partition("://")
        if scheme in _JDBC_NAMESPACES:
            db, _, table = name.partition(".")
            return f"jdbc:{_JDBC_BACK.get(scheme, scheme)}://{authority}/{db}/{table}" if table else \
                f"jdbc:{_JDBC_BACK.get(scheme, scheme)}://{authority}/{db}"
        if scheme in _OBJECT_STORES:
            return f"{namespace}/{name}"
        return f"{namespace}{name if name.startswith('/') else '/' + name}"
    return f"{namespace}.{name}"
