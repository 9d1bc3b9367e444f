"""Canonical dataset names (``docs/reference/datasets.md``) from the facts read about a leaf or target.

A *relation fact* is the plain dict ``capture.facts`` reads from the JVM:
``{"table": {"catalog", "database", "table"} | None, "paths": [...], "format": str,
"options": {...}, "location": str | None, "jdbc": {"url", "table"} | None, "view": bool}``.

>>> dataset_of({"table": {"catalog": None, "database": "sales", "table": "orders"}}).name
'spark_catalog.sales.orders'
>>> dataset_of({"paths": ["file:/data/raw/orders.csv"], "format": "csv"}).name
'file:/data/raw/orders.csv'
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lineage_listener.redact import redact_options, redact_url

DEFAULT_CATALOG = "spark_catalog"
DEFAULT_DATABASE = "default"


@dataclass(frozen=True)
class Dataset:
    """One row of the ``datasets`` table (columns live in ``dataset_columns``)."""

    name: str
    kind: str  # table | path | view | jdbc | local | topic | memory
    format: str | None = None
    location: str | None = None
    properties: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def properties_json(self) -> str:
        return json.dumps(dict(self.properties), sort_keys=True, default=str)


def table_name(table: Mapping[str, str | None]) -> str:
    """``catalog.database.table`` with Spark's defaults filled in."""
    return ".".join((table.get("catalog") or DEFAULT_CATALOG,
                     table.get("database") or DEFAULT_DATABASE,
                     table["table"]))


def jdbc_name(url: str, table: str) -> str:
    """``jdbc:<url without credentials or parameters>/<table>``."""
    clean = redact_url(url)
    for sep in ("?", ";"):
        clean = clean.split(sep, 1)[0]
    clean = clean.rstrip("/")
    return f"{clean if clean.startswith('jdbc:') else 'jdbc:' + clean}/{table}"


def local_name(node: str, columns: list[str], scope: str | None = None, content: str = "") -> str:
    """A name for in-memory data: ``local:<scope>/<node>/<hash of columns and content>``.

    ``content`` is what tells two leaves apart and stays the same when the same code runs
    again (a Range's start/end/step, a LocalRelation's rows), so names are unique per
    query and stable across re-runs where Spark writes such content.
    """
    digest = hashlib.sha1((",".join(columns) + ("\0" + content if content else "")).encode()).hexdigest()[:8]
    return f"local:{scope + '/' if scope else ''}{node}/{digest}"


def dataset_of(fact: Mapping[str, Any]) -> Dataset:
    """The canonical :class:`Dataset` a relation fact names (first path if several)."""
    return datasets_of(fact)[0]


def datasets_of(fact: Mapping[str, Any]) -> list[Dataset]:
    """All datasets a relation fact names: one, or one per root path of a path read."""
    fmt = fact.get("format")
    props = redact_options(fact.get("options") or {})
    location = redact_url(fact["location"]) if fact.get("location") else None
    if fact.get("table"):
        kind = "view" if fact.get("view") else "table"
        return [Dataset(table_name(fact["table"]), kind, fmt, location, props)]
    if fact.get("kafka"):  # topics: kafka://<bootstrap servers>/<topic> (capture/streams.py)
        return [Dataset(name, "topic", "kafka", name, props) for name in fact["kafka"]]
    if fact.get("named"):  # a stream's memory sink: memory:<query name>
        return [Dataset(fact["named"], fact.get("kind") or "memory", fmt, None, props)]
    if fact.get("jdbc"):
        j = fact["jdbc"]
        props.pop("url", None)
        return [Dataset(jdbc_name(j["url"], j.get("table") or "?"), "jdbc", "jdbc", None, props)]
    paths = [redact_url(p) for p in fact.get("paths") or [] if p]
    if paths:
        return [Dataset(p.rstrip("/") if len(p) > 1 else p, "path", fmt, p, props) for p in paths]
    return [Dataset(local_name(fact.get("node", "relation"), fact.get("columns", []), fact.get("scope"),
                               fact.get("content") or ""),
                    "local", fmt or fact.get("node"), None, props)]
