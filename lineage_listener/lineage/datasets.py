"""Canonical dataset names (``docs/reference/datasets.md``) from the facts read about a leaf or target.

A *relation fact* is the plain dict the capture's fact readers (``capture/reading/readers/``, and the
bridge jar's ``Facts`` for the common leaves) read from the JVM about one source leaf or one
write target. :class:`RelationFact` lists every key, in this one place; a fact holds only the
keys that apply, and :func:`datasets_of` names it by the first of ``table``, ``kafka``,
``named``, ``jdbc``, ``paths`` present, else as local data.

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
from typing import Any, TypedDict

from lineage_listener.redact import redact_options, redact_url

class TableIdent(TypedDict):
    """A catalog table's identity; ``None`` parts take Spark's defaults (:func:`table_name`)."""

    catalog: str | None
    database: str | None
    table: str


class JdbcTable(TypedDict):
    """A JDBC table: the connection URL (credentials are redacted when named) and table or query."""

    url: str
    table: str | None


class RelationFact(TypedDict, total=False):
    """What the capture reads about one source leaf or write target (every key optional).

    Naming (what :func:`datasets_of` reads):

    - ``table``: a catalog table or view (:class:`TableIdent`);
    - ``view``: True when ``table`` is a view (``kind`` view);
    - ``kafka``: ``kafka://<bootstrap servers>/<topic>`` names, one per topic read or written;
    - ``named``: a ready name (a stream's memory sink: ``memory:<query name>``), with ``kind``;
    - ``kind``: the dataset kind of a ``named`` fact;
    - ``jdbc``: a JDBC table (:class:`JdbcTable`);
    - ``paths``: qualified root paths (``file:/x``, ``s3a://b/x``) of a path read or write;
    - ``node``, ``columns``, ``scope``, ``content``: in-memory data without a name (a stream
      source such as ``rate``): named ``local:`` from its node, columns, scope and content;
    - ``format``: the source format (``parquet``, ``delta``, ``iceberg``, ``jdbc``, ``kafka``...);
    - ``location``: a table's storage location;
    - ``options``: the reader's or writer's options (redacted when stored); ``delta.version`` and
      ``iceberg.snapshot-id`` give the version a read is pinned to.

    Labels (``capture/recording/spark_labels.py``):

    - ``classification``: a table's ``lineage.classification.<column>`` properties;
    - ``classified_schema``: its schema JSON when that mentions a classification.

    Write targets only:

    - ``schema``: the written schema (JSON of a ``StructType``);
    - ``output_columns``: the user's column names of ``CREATE VIEW v (x, y)``;
    - ``mode``: the save mode of a file write or a ``save()`` (``Append``, ``Overwrite``...);
    - ``partitions_only``: an overwrite replaces only some partitions (a partition spec, a dynamic
      partition overwrite): ``lineage/writes.py``;
    - ``writes``: a multi-insert's targets, one fact (or None) per write, in plan order; it holds
      no other key (``capture/multiwrite.py``).

    A ``foreachBatch`` micro-batch (``lineage/streaming.py``):

    - ``stream_plan``: the stream's plan items under its sink;
    - ``stream_leaves``: the stream's leaf facts, by exprId;
    - ``stream``: the stream's ``{"id", "name"}``.
    """

    table: TableIdent
    view: bool
    kafka: list[str]
    named: str
    kind: str
    jdbc: JdbcTable
    paths: list[str]
    node: str
    columns: list[str]
    scope: str | None
    content: str
    format: str | None
    location: str | None
    options: dict[str, str]
    classification: dict[str, str]
    classified_schema: str
    schema: str
    output_columns: list[str]
    mode: str
    partitions_only: bool
    writes: list["RelationFact | None"]
    stream_plan: Any
    stream_leaves: dict[int, Any]
    stream: dict[str, str | None]


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
    if fact.get("kafka"):  # topics: kafka://<bootstrap servers>/<topic> (capture/reading/streams.py)
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
