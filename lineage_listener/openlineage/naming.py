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

Other producers' names (the naming spec, https://openlineage.io/docs/spec/naming) come back
as they were sent: tables of a ``scheme://authority`` namespace (Hive, Trino, Cassandra, Spark
Thrift, DuckDB, ...) are stored as ``<namespace>/<name>`` (a database file's namespace,
``duckdb:///data/shop.duckdb``, keeps its path); object stores and Kafka keep their key or
topic as is; JDBC databases become ``jdbc:`` names; a namespace without ``://`` (``bigquery``, a Glue ARN)
is a catalog: ``<namespace>.<name>``.

>>> spec = [("hive://metastore:9083", "shop.orders"), ("trino://t:8080", "hive.shop.orders"),
...     ("postgres://db:5432", "shop.public.orders"), ("mysql://db:3306", "shop.orders"),
...     ("snowflake://org-acct", "DB.PUBLIC.ORDERS"), ("bigquery", "proj.sales.orders"),
...     ("redshift://c.eu-west-1:5439", "dev.public.t"), ("sqlserver://h:1433", "shop.dbo.t"),
...     ("oracle://h:1521", "ORCL.SHOP.T"), ("db2://h:50000", "shop.s.t"), ("teradata://h:1025", "shop.t"),
...     ("mssql://h:1433", "shop.dbo.t"), ("cassandra://h:9042", "ks.t"), ("awsathena://athena.eu-west-1.amazonaws.com",
...     "AwsDataCatalog.db.t"), ("azurekusto://c.kusto.windows.net", "db/t"), ("arn:aws:glue:eu-west-1:123", "table/db/t"),
...     ("s3://bucket", "raw/orders.csv"), ("gs://bucket", "raw/o"), ("abfss://c@acct.dfs.core.windows.net", "raw/o"),
...     ("wasbs://c@acct.blob.core.windows.net", "raw/o"), ("hdfs://nn:8020", "/warehouse/t"), ("dbfs://ws", "/mnt/t"),
...     ("file", "/data/o.csv"), ("file://host", "/data/o.csv"), ("kafka://broker:9092", "orders"),
...     ("spark-local", "q1/Range/ab12"), ("spark_catalog", "shop.orders"), ("spark://h:10000", "db.t"),
...     ("duckdb://shop.db", "shop.main.t"), ("duckdb:///data/shop.duckdb", "shop.main.t")]
>>> [(ns, n) for ns, n in spec if to_openlineage(from_openlineage(ns, n)) != (ns, n)]
[]
>>> from_openlineage("hive://metastore:9083", "shop.orders"), kind_of("hive://metastore:9083")
('hive://metastore:9083/shop.orders', 'table')
"""
from __future__ import annotations

LOCAL = "spark-local"
DEFAULT_CATALOG = "spark_catalog"

#: JDBC sub-protocols whose OpenLineage scheme differs.
_JDBC_SCHEMES = {"postgresql": "postgres"}
_JDBC_BACK = {v: k for k, v in _JDBC_SCHEMES.items()}
#: Namespaces whose names are keys (no leading slash): object stores, and Kafka topics.
_OBJECT_STORES = ("s3", "s3a", "s3n", "gs", "wasb", "wasbs", "abfs", "abfss", "oss", "cos", "kafka")
_JDBC_NAMESPACES = ("postgres", "mysql", "sqlserver", "oracle", "db2", "redshift", "snowflake", "mariadb",
                    "teradata", "jdbc")
#: Table services of the naming spec other than JDBC ones: the name is ``db.table`` (or the
#: service's own form), kept as sent after ``<namespace>/``.
_TABLE_SERVICES = ("hive", "trino", "presto", "cassandra", "crate", "oceanbase", "mssql", "awsathena", "azurekusto",
                   "azurecosmos", "spanner", "clickhouse", "databricks", "dremio", "vertica", "sqlite", "spark",
                   "duckdb", "impala", "druid", "pinot", "mongodb", "couchbase", "sybase")


def kind_of(namespace: str) -> str:
    """Our ``datasets.kind`` for an OpenLineage dataset namespace."""
    if namespace == "file" or namespace.startswith("file://"):
        return "path"
    if namespace == LOCAL:
        return "local"
    scheme = namespace.partition("://")[0]
    if "://" not in namespace or scheme in _TABLE_SERVICES:
        return "table"
    return "jdbc" if scheme in _JDBC_NAMESPACES else "path"


#: Schemes of file systems and object stores: a namespace of one of them is a place, not a catalog.
_FILESYSTEMS = ("file", "hdfs", "viewfs", "dbfs", "maprfs", *(s for s in _OBJECT_STORES if s != "kafka"))


def is_filesystem(namespace: str) -> bool:
    """Whether ``namespace`` is a file system or object store (``file``, ``file:/wh``, ``hdfs://nn/wh``).

    >>> [is_filesystem(n) for n in ("file", "file:/tmp/wh", "hdfs://nn/wh", "s3a://b", "hive://h:9083", "bigquery")]
    [True, True, True, True, False, False]
    """
    return namespace.partition(":")[0] in _FILESYSTEMS


def warehouse_table(namespace: str, name: str) -> str | None:
    """Our name of the table a ``symlinks`` identifier of type ``TABLE`` names in a file system's
    namespace, else None.

    Such a table is a table of the warehouse at that place (the Spark agent names a session-catalog
    table without a metastore so: namespace ``file:/tmp/wh``, name ``default.t``): it is named as
    capture names catalog tables, ``spark_catalog.db.table`` (docs/reference/datasets.md). A table
    in any other namespace is named as a dataset of that namespace would be.

    >>> warehouse_table("file:/tmp/cll_test", "default.tbl1")
    'spark_catalog.default.tbl1'
    >>> warehouse_table("hdfs://cluster-m/user/hive/warehouse", "default.t1")
    'spark_catalog.default.t1'
    >>> warehouse_table("hive://metastore:9083", "default.t1") is None
    True
    """
    return f"{DEFAULT_CATALOG}.{name}" if is_filesystem(namespace) else None


def to_openlineage(dataset: str, table_namespace: str | None = None) -> tuple[str, str]:
    """(namespace, name) of one of our dataset names."""
    if dataset.startswith("file://"):  # file:///p (local) or file://host/p (a remote file system)
        host, _, path = dataset[len("file://"):].partition("/")
        return ("file://" + host if host else "file"), "/" + path
    if dataset.startswith("file:"):
        return "file", dataset[len("file:"):]
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
        if scheme in _TABLE_SERVICES and not authority:  # a database file: duckdb:///data/shop.duckdb
            where, _, table = path.rpartition("/")
            return f"{scheme}:///{where}", table
        if scheme in _OBJECT_STORES or scheme in _TABLE_SERVICES:
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
        if scheme in _OBJECT_STORES or scheme in _TABLE_SERVICES:
            return f"{namespace}/{name}"
        return f"{namespace}{name if name.startswith('/') else '/' + name}"
    return f"{namespace}.{name}"
