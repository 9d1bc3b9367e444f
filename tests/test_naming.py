"""Canonical dataset names and secret redaction (docs/reference/datasets.md)."""
from __future__ import annotations

from lineage_listener.lineage.datasets import datasets_of, jdbc_name
from lineage_listener.redact import redact_options, redact_url


def test_jdbc_name_drops_credentials_and_parameters():
    assert jdbc_name("jdbc:postgresql://bob:pw@db:5432/shop?user=bob&password=pw", "orders") == \
        "jdbc:postgresql://db:5432/shop/orders"
    assert jdbc_name("jdbc:sqlserver://db:1433;databaseName=shop;password=pw", "dbo.t") == \
        "jdbc:sqlserver://db:1433/dbo.t"


def test_jdbc_dataset_keeps_no_secret():
    (ds,) = datasets_of({"jdbc": {"url": "jdbc:mysql://u:secret@h/db", "table": "t"},
                         "options": {"url": "jdbc:mysql://u:secret@h/db", "password": "secret", "fetchsize": "10"}})
    assert (ds.name, ds.kind) == ("jdbc:mysql://h/db/t", "jdbc")
    assert "secret" not in ds.properties_json() and ds.properties["fetchsize"] == "10"


def test_redaction_of_keys_and_urls():
    opts = redact_options({"fs.s3a.access.key": "AKIA", "sfToken": "t", "credentials": "c", "header": "true",
                           "path": "s3a://user:pw@bucket/x?sig=1&token=abc"})
    assert opts["fs.s3a.access.key"] == opts["sfToken"] == opts["credentials"] == "***"
    assert opts["header"] == "true"
    assert opts["path"] == "s3a://bucket/x?sig=***&token=***"
    assert redact_url("https://example.org/a?b=1") == "https://example.org/a?b=1"


def test_table_path_and_local_names():
    assert datasets_of({"table": {"catalog": None, "database": None, "table": "t"}})[0].name == "spark_catalog.default.t"
    assert [d.name for d in datasets_of({"paths": ["file:/a", "file:/b/"], "format": "csv"})] == ["file:/a", "file:/b"]
    local = datasets_of({"node": "Range", "columns": ["id"], "scope": "job"})[0]
    assert local.kind == "local" and local.name.startswith("local:job/Range/")
