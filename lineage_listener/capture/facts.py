"""Facts read from live JVM objects while the ``QueryExecution`` is alive (py4j calls).

The plan JSON leaves out what lineage needs most: a path-based ``LogicalRelation``
serialises ``"relation": null``, write commands leave out their output path. These
functions ask the JVM for those facts, a few py4j calls per leaf, and return plain
dicts (see :mod:`lineage_listener.lineage.datasets` for their shape). Every reader
swallows its own errors: a fact that cannot be read is simply absent.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from py4j.java_gateway import JavaObject
from py4j.protocol import Py4JError

from lineage_listener.lineage.datasets import table_name
from lineage_listener.plan.classes import EXPRESSION_FIELDS, NESTED_PLAN_FIELDS, READ_FROM_JVM, SOURCE_LEAVES
from lineage_listener import redact

log = redact.logger(__name__)


def _opt(option: Any) -> Any:
    """A Scala ``Option``'s value, or None."""
    try:
        return option.get() if option is not None and option.isDefined() else None
    except Py4JError:
        return None


def _seq(seq: Any) -> list[Any]:
    try:
        return [seq.apply(i) for i in range(seq.length())]
    except Py4JError:
        return []


_SEP = "\u001e"


def scala_map(m: Any) -> dict[str, str]:
    """A Scala ``Map[String, String]`` (or java Map) as a dict, in one py4j call."""
    if m is None:
        return {}
    try:
        text = str(m.mkString(_SEP))  # "k -> v<RS>k2 -> v2"
        return dict(pair.split(" -> ", 1) for pair in text.split(_SEP) if " -> " in pair)
    except Py4JError:  # a java.util.Map (DSv2 options): py4j converts it
        try:
            return {str(k): str(v) for k, v in dict(m).items()}
        except (Py4JError, TypeError, ValueError):
            return {}


def table_identifier(ident: Any, current: tuple[str, str] | None = None) -> dict[str, str | None]:
    """A ``TableIdentifier`` as ``{"catalog", "database", "table"}``."""
    database = _opt(ident.database())
    catalog = _opt(ident.catalog()) if hasattr(ident, "catalog") else None
    if database is None and current:
        catalog, database = catalog or current[0], current[1]
    return {"catalog": catalog, "database": database, "table": ident.table()}


def catalog_table(table: Any, current: tuple[str, str] | None = None) -> dict[str, Any]:
    """Facts of a ``CatalogTable``: identity, location, provider, storage properties."""
    fact: dict[str, Any] = {"table": table_identifier(table.identifier(), current)}
    try:
        loc = _opt(table.storage().locationUri())
        fact["location"] = str(loc.toString()) if loc is not None else None
    except Py4JError:
        pass
    fact["format"] = _opt(table.provider())
    try:
        fact["view"] = str(table.tableType().name()) == "VIEW"
    except Py4JError:
        pass
    fact.update(classified(table))
    return fact


def classified(table: Any) -> dict[str, Any]:
    """What a table keeps of labels (capture/classification.py): its ``lineage.classification.<column>``
    properties (``classification``) and, when its schema mentions one, the schema (``classified_schema``)."""
    out: dict[str, Any] = {}
    # PySpark turns some JVM errors into its own exceptions (not Py4JError): any failure here only
    # means no labels from this table, never a lost query.
    try:
        labelled = {k: v for k, v in scala_map(table.properties()).items() if k.startswith("lineage.classification.")}
        if labelled:
            out["classification"] = labelled
    except Exception:  # noqa: BLE001
        log.debug("table properties not readable", exc_info=True)
    try:
        schema = str(table.schema().json())
    except Exception:  # noqa: BLE001 - Spark 4.1's Table.schema() raises for a table with columns() only
        log.debug("table schema not readable", exc_info=True)
        return out
    if "classification" in schema:
        out["classified_schema"] = schema
    return out


def qualify(path: str) -> str:
    return path if ":" in path.split("/", 1)[0] else f"file:{path}"


def relation(leaf: Any, name: str, current: tuple[str, str] | None = None) -> dict[str, Any]:
    """Facts of one leaf plan node: a table, path(s), JDBC table, or nothing (local data)."""
    fact: dict[str, Any] = {}
    if name == "LogicalRelation":
        table = _opt(leaf.catalogTable())
        if table is not None:
            fact.update(catalog_table(table, current))
        rel = leaf.relation()
        kind = str(rel.getClass().getSimpleName()) or str(rel.getClass().getSuperclass().getSimpleName())
        if kind == "HadoopFsRelation":
            fact["paths"] = [qualify(str(p.toString())) for p in _seq(rel.location().rootPaths())]
            try:
                fact["format"] = fact.get("format") or str(rel.fileFormat().shortName())
            except Py4JError:
                fact["format"] = fact.get("format") or str(rel.fileFormat().toString()).lower()
            fact["options"] = scala_map(rel.options())
            delta_read(rel, fact)
        elif kind == "KafkaRelation":  # a batch read of topics: named as a stream of them is
            options = scala_map(_private(rel, "sourceOptions"))
            fact.update({"kafka": kafka_names(options, reading=True), "format": "kafka", "options": options})
        elif kind == "JDBCRelation":
            opts = rel.jdbcOptions()
            fact["jdbc"] = {"url": str(opts.url()), "table": str(opts.tableOrQuery())}
            fact["options"] = scala_map(opts.parameters())
        else:
            fact["format"] = fact.get("format") or kind
    elif name == "HiveTableRelation":
        fact.update(catalog_table(leaf.tableMeta(), current))
        fact["format"] = "hive"
    elif name in ("DataSourceV2Relation", "DataSourceV2ScanRelation"):
        rel = leaf.relation() if name == "DataSourceV2ScanRelation" else leaf
        ident, catalog = _opt(rel.identifier()), _opt(rel.catalog())
        if ident is not None:
            ns = list(ident.namespace())
            fact["table"] = {"catalog": str(catalog.name()) if catalog is not None else None,
                             "database": ".".join(ns) if ns else None, "table": str(ident.name())}
        else:
            table = rel.table()
            try:  # a file source read through DSv2 (FileTable): name it by its root paths
                fact["paths"] = [qualify(str(p.toString())) for p in _seq(table.fileIndex().rootPaths())]
            except Py4JError:
                fact["paths"] = [str(table.name())]
        fact["format"] = v2_format(rel.table())
        fact["options"] = scala_map(rel.options())
        fact.update(classified(rel.table()))
        table_version(rel.table(), fact)
        ident_fact = fact.get("table")
        if fact["format"] in ("delta", "iceberg") and ident_fact and ident_fact.get("database") == fact["format"] \
                and "/" in str(ident_fact.get("table")):  # delta.`/path`: a path, not a table
            fact["paths"] = [qualify(str(ident_fact["table"]))]
            del fact["table"]
    return fact


def v2_format(table: Any) -> str | None:
    """A DataSource V2 table's format: ``iceberg`` / ``delta`` for those formats' tables, else its
    class name without ``Table`` (``SparkTable`` is Iceberg's; Delta's is ``DeltaTableV2``)."""
    try:
        cls = str(table.getClass().getName())
        if cls.endswith(".RowLevelOperationTable"):  # a MERGE/UPDATE/DELETE target: the table it wraps
            cls = str(table.table().getClass().getName())
    except Py4JError:
        return None
    for known in ("iceberg", "delta"):
        if f".{known}." in cls:
            return known
    return cls.rsplit(".", 1)[-1].replace("Table", "").lower() or None


def delta_read(rel: Any, fact: dict[str, Any]) -> None:
    """A Delta table read as files (``TahoeFileIndex``): format ``delta`` and the version read."""
    try:
        index = rel.location()
        if not str(index.getClass().getSimpleName()).startswith(("Tahoe", "PreparedDelta", "Delta")):
            return
        fact["format"] = "delta"
    except Py4JError:
        return
    for getter in ("snapshotAtAnalysis", "getSnapshot"):  # the version this read is pinned to
        try:
            snapshot = getattr(index, getter)()
            fact.setdefault("options", {})["delta.version"] = str(snapshot.version())
        except Py4JError:
            continue
        try:  # labels the Delta table keeps: its schema's metadata and its properties live in its log
            metadata = snapshot.metadata()
            labelled = {k: v for k, v in scala_map(metadata.configuration()).items()
                        if k.startswith("lineage.classification.")}
            if labelled:
                fact["classification"] = labelled
            schema = str(metadata.schemaString())
            if "classification" in schema:
                fact["classified_schema"] = schema
        except Py4JError:
            pass
        return


def table_version(table: Any, fact: dict[str, Any]) -> None:
    """The version a V2 read is pinned to (time travel): Iceberg's snapshot id, Delta's version."""
    try:
        if fact.get("format") == "iceberg":
            snapshot = table.snapshotId()
            if snapshot is not None:
                fact.setdefault("options", {})["iceberg.snapshot-id"] = str(snapshot)
        elif fact.get("format") == "delta":
            travel = _opt(table.timeTravelOpt())
            if travel is not None:
                version = _opt(travel.version())
                stamp = _opt(travel.timestamp())
                fact.setdefault("options", {})["delta.version"] = str(version if version is not None else stamp)
    except Py4JError:
        return




def kafka_names(options: Mapping[str, str], reading: bool) -> list[str]:
    """``kafka://<bootstrap servers>/<topic>`` for each topic named in ``options``.

    >>> kafka_names({"kafka.bootstrap.servers": "b1:9092,b2:9092", "subscribe": "a, b"}, True)
    ['kafka://b1:9092,b2:9092/a', 'kafka://b1:9092,b2:9092/b']
    >>> kafka_names({"kafka.bootstrap.servers": "b:9092", "subscribePattern": "ev.*"}, True)
    ['kafka://b:9092/ev.*']
    """
    lower = {k.lower(): v for k, v in options.items()}
    servers = lower.get("kafka.bootstrap.servers", "?")
    topics: list[str] = []
    if reading:
        if lower.get("subscribe"):
            topics = [t.strip() for t in lower["subscribe"].split(",") if t.strip()]
        elif lower.get("subscribepattern"):
            topics = [lower["subscribepattern"]]
        elif lower.get("assign"):
            try:
                topics = sorted(json.loads(lower["assign"]))
            except ValueError:
                topics = [lower["assign"]]
    elif lower.get("topic"):
        topics = [lower["topic"]]
    return [f"kafka://{servers}/{t}" for t in topics or ["*"]]


def _private(obj: Any, name: str) -> Any:
    """A private field of a JVM object (connectors keep their options there), or None."""
    try:
        f = obj.getClass().getDeclaredField(name)
        f.setAccessible(True)
        return f.get(obj)
    except Py4JError:
        return None


@dataclass
class FactCache:
    """Facts that outlive one query: by leaf exprId (unique per JVM) and table locations."""

    by_expr_id: dict[int, dict[str, Any]] = field(default_factory=dict)
    locations: dict[str, str | None] = field(default_factory=dict)  # "cat.db.t" -> location
    classifications: dict[str, dict[str, Any]] = field(default_factory=dict)  # "cat.db.t" -> what keeps labels

    def remember(self, expr_id: int, fact: dict[str, Any]) -> None:
        if len(self.by_expr_id) > 50_000:
            self.by_expr_id.clear()
        self.by_expr_id[expr_id] = fact
        if fact.get("table") and "location" in fact:
            self.locations[table_name(fact["table"])] = fact["location"]
            kept = {k: fact[k] for k in ("classification", "classified_schema") if k in fact}
            if kept:
                self.classifications[table_name(fact["table"])] = kept


def dicts(items: Any) -> Iterator[dict[str, Any]]:
    """Every dict of plan JSON items, each once (the compact reader's items share each attribute's
    dict), parents before their children."""
    stack = [items]
    seen: set[int] = set()
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict) and id(value) not in seen:
            seen.add(id(value))
            yield value
            stack.extend(v for v in value.values() if isinstance(v, (list, dict)))


def json_leaves(items: Any, nulls: list[dict[str, Any]] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(first output exprId, node dict)`` of every source leaf in plan JSON, subqueries included.

    In the same pass, plan nodes with a needed field written as null (see
    :data:`~lineage_listener.plan.classes.EXPRESSION_FIELDS`) are appended to ``nulls``.
    """
    for value in dicts(items):
        cls = value.get("class")
        short = cls.rsplit(".", 1)[-1] if isinstance(cls, str) else ""
        if short in SOURCE_LEAVES:
            output = value.get("output") or (value.get("dataCols") or []) + (value.get("partitionCols") or [])
            if output and isinstance(output[0], list) and output[0]:
                eid = output[0][0].get("exprId", {}).get("id")
                if eid is not None:
                    yield eid, value
        elif nulls is not None and short in EXPRESSION_FIELDS and any(
                name in value and value[name] is None for name in EXPRESSION_FIELDS[short]):
            nulls.append(value)


def null_fields(items: Any) -> list[dict[str, Any]]:
    """Plan nodes of ``items`` with a needed field written as null (see :func:`json_leaves`)."""
    nulls: list[dict[str, Any]] = []
    for _ in json_leaves(items, nulls):
        pass
    return nulls


def leaves(plan: Any, items: Any, current: tuple[str, str] | None = None,
           cache: FactCache | None = None, nulls: list[dict[str, Any]] | None = None) -> dict[int, dict[str, Any]]:
    """Facts of every data-source leaf, keyed by the exprId of the leaf's first output.

    Catalog tables are named by the plan JSON itself (their location is read once per
    table); only the rest (path-based files, DSv2, new tables) costs py4j calls.
    """
    cache = cache if cache is not None else FactCache()
    out: dict[int, dict[str, Any]] = {}
    needed: set[int] = set()
    for eid, node in json_leaves(items, nulls):
        if eid in cache.by_expr_id:
            out[eid] = cache.by_expr_id[eid]
            continue
        table = node.get("catalogTable") or node.get("tableMeta")
        ident = table.get("identifier") if isinstance(table, dict) else None
        if isinstance(ident, dict) and ident.get("table") and table_name(ident) in cache.locations \
                and table.get("provider") != "delta":  # a Delta read's version is read each time
            out[eid] = {"table": {k: ident.get(k) for k in ("catalog", "database", "table")},
                        "format": table.get("provider"), "location": cache.locations[table_name(ident)],
                        "view": False}
            out[eid].update(cache.classifications.get(table_name(ident), {}))
        else:
            needed.add(eid)
    out.update(resolve(plan, needed, current, cache))
    return out


def resolve(plan: Any, needed: set[int], current: tuple[str, str] | None = None,
            cache: FactCache | None = None) -> dict[int, dict[str, Any]]:
    """Facts of the source leaves of ``plan`` whose first output ids are ``needed``, read from
    the JVM objects (a few py4j calls each; remembered in ``cache``)."""
    cache = cache if cache is not None else FactCache()
    out = {eid: cache.by_expr_id[eid] for eid in needed if eid in cache.by_expr_id}
    needed = set(needed) - set(out)
    if not needed:
        return out
    roots = [plan] + _seq(plan.innerChildren()) + _seq(plan.subqueriesAll()) + nested_plans(plan)
    for root in roots:
        for leaf in _seq(root.collectLeaves()):
            try:
                name = str(leaf.nodeName())
                if name not in SOURCE_LEAVES:
                    continue
                first = leaf.output().head().exprId().id()
                if first not in needed:
                    continue
                fact = relation(leaf, name, current)
                out[first] = fact
                cache.remember(first, fact)
                needed.discard(first)
            except Py4JError as exc:  # a leaf we cannot read stays unnamed
                log.debug("could not read leaf facts: %s", exc)
            if not needed:
                return out
    return out


def nested_plans(plan: Any) -> list[Any]:
    """Plans a command holds in fields rather than as children (Delta's MERGE source and target)."""
    out = []
    try:
        getters = NESTED_PLAN_FIELDS.get(str(plan.nodeName()), ())
    except Py4JError:
        return out
    for getter in getters:
        try:
            nested = getattr(plan, getter)()
            out += [nested] + _seq(nested.subqueriesAll())
        except Py4JError:
            continue
    return out


def target(cmd: Any, name: str, current: tuple[str, str] | None = None) -> dict[str, Any] | None:
    """Facts of a write command's target (with the written schema), or None if unknown."""
    fact = _target(cmd, name, current)
    if fact is not None:
        for getter in ("query", "plan", "child", "target"):
            try:
                fact["schema"] = str(getattr(cmd, getter)().schema().json())
                break
            except Py4JError:
                continue
    return fact


def view_columns(cmd: Any) -> list[str] | None:
    """``CREATE VIEW v (x, y) AS ...``: the user's column names (the plan JSON prints them as None)."""
    try:
        cols = cmd.userSpecifiedColumns()
        return [str(cols.apply(i)._1()) for i in range(cols.size())] or None
    except Py4JError:  # AlterViewAsCommand has none
        return None


def _target(cmd: Any, name: str, current: tuple[str, str] | None = None) -> dict[str, Any] | None:
    if name == "InsertIntoHadoopFsRelationCommand":
        table = _opt(cmd.catalogTable())
        fact = catalog_table(table, current) if table is not None else {}
        path = qualify(str(cmd.outputPath().toString()))
        fact.setdefault("location", path)
        if "table" not in fact:
            fact["paths"] = [path]
        try:
            fact["format"] = fact.get("format") or str(cmd.fileFormat().shortName())
        except Py4JError:
            pass
        fact["options"] = scala_map(cmd.options())
        fact["mode"] = str(cmd.mode().toString())
        return fact
    if name in ("CreateDataSourceTableAsSelectCommand", "CreateHiveTableAsSelectCommand",
                "OptimizedCreateHiveTableAsSelectCommand", "InsertIntoHiveTable", "SaveAsV1TableCommand"):
        for getter in ("table", "tableDesc"):  # the field's name differs between commands
            if getter in dir(cmd):
                return catalog_table(getattr(cmd, getter)(), current)
        return None
    if name in ("CreateViewCommand", "AlterViewAsCommand"):
        if name == "CreateViewCommand" and "Persisted" not in str(cmd.viewType().toString()):
            return None
        fact = {"table": table_identifier(cmd.name(), current), "view": True, "format": "view"}
        names = view_columns(cmd)
        if names:
            fact["output_columns"] = names
        return fact
    if name == "InsertIntoDataSourceCommand":
        return relation(cmd.logicalRelation(), "LogicalRelation", current)
    if name == "SaveIntoDataSourceCommand":
        opts = scala_map(cmd.options())
        provider = str(cmd.dataSource().getClass().getSimpleName())
        provider = "delta" if provider.startswith("Delta") else provider  # DeltaDataSource
        if "url" in opts and ("dbtable" in opts or "query" in opts):
            return {"jdbc": {"url": opts["url"], "table": opts.get("dbtable") or opts.get("query")},
                    "options": opts}
        if "path" in opts:
            return {"paths": [qualify(opts["path"])], "format": provider, "options": opts}
        if provider == "KafkaSourceProvider":
            return {"kafka": kafka_names(opts, reading=False), "format": "kafka", "options": opts}
        return {"node": provider, "format": provider, "options": opts}
    if name in ("AppendData", "OverwriteByExpression", "OverwritePartitionsDynamic", "ReplaceData",
                "WriteDelta", "DeltaDynamicPartitionOverwriteCommand"):
        return relation(cmd.table(), "DataSourceV2Relation", current)
    if name in ("MergeIntoCommand", "UpdateCommand", "DeleteCommand"):  # Delta's
        table = _opt(cmd.catalogTable())
        if table is not None:
            fact = catalog_table(table, current)
            fact["format"] = fact.get("format") or "delta"
            return fact
        for leaf in _seq(cmd.target().collectLeaves()):
            leaf_name = str(leaf.nodeName())
            if leaf_name in SOURCE_LEAVES:
                fact = relation(leaf, leaf_name, current)
                fact.get("options", {}).pop("delta.version", None)  # the version read, not written
                return fact
        return None
    if name in ("CreateTableAsSelect", "ReplaceTableAsSelect"):
        resolved = cmd.name()
        ident = resolved.identifier()
        ns = list(ident.namespace())
        return {"table": {"catalog": str(resolved.catalog().name()), "database": ".".join(ns) or None,
                          "table": str(ident.name())}}
    return None


def run_info(sc: Any) -> dict[str, Any]:
    """Facts of the Spark application (``runs`` row) from a JVM ``SparkContext``."""
    info: dict[str, Any] = {"app_id": str(sc.applicationId())}
    for key, getter in (("app_name", "appName"), ("spark_version", "version"),
                        ("spark_user", "sparkUser"), ("master", "master"), ("started_at_ms", "startTime")):
        try:
            info[key] = getattr(sc, getter)()
        except Py4JError:
            info[key] = None
    return info


def _is_tree(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict) and "class" in value[0]


def child_path(items: list[dict], position: int) -> list[int]:
    """Child indexes leading from the root to the node at ``position`` of a pre-order list.

    >>> child_path([{"num-children": 2}, {"num-children": 0}, {"num-children": 1},
    ...             {"num-children": 0}], 3)
    [1, 0]
    """
    path: list[int] = []
    stack: list[list[int]] = []  # [children still to come, index of the next child]
    for i, item in enumerate(items[: position + 1]):
        if stack:
            top = stack[-1]
            path = path[: len(stack) - 1] + [top[1]]
            top[0] -= 1
            top[1] += 1
        if i == position:
            return path
        stack.append([int(item.get("num-children", 0)), 0])
        while stack and stack[-1][0] == 0:
            stack.pop()
    return path


Step = tuple[str, Any]  # ("child", k) | ("field", name) | ("item", j)


def path_to(items: list[dict], target: dict) -> list[Step] | None:
    """How to reach ``target`` (a node dict somewhere in ``items``) from the plan's root on the
    JVM: child indexes, fields holding a nested tree (a command's ``query``, a subquery's
    ``plan``) and positions in fields holding a list of trees.

    >>> sub = [{"class": "a.Expand", "num-children": 0, "projections": None}]
    >>> items = [{"class": "a.Cmd", "num-children": 1}, {"class": "a.Filter", "num-children": 0,
    ...          "condition": [{"class": "e.ScalarSubquery", "num-children": 0, "plan": sub}]}]
    >>> path_to(items, sub[0])
    [('child', 0), ('field', 'condition'), ('field', 'plan')]
    """
    stack: list[tuple[list[dict], list[Step]]] = [(items, [])]
    while stack:
        tree, prefix = stack.pop()
        for pos, node in enumerate(tree):
            if not isinstance(node, dict):
                continue
            here: list[Step] | None = None
            if node is target:
                return prefix + [("child", k) for k in child_path(tree, pos)]
            for key, value in node.items():
                nested = [(value, [])] if _is_tree(value) else [
                    (v, [("item", j)]) for j, v in enumerate(value) if _is_tree(v)] if isinstance(value, list) else []
                for sub, extra in nested:
                    if here is None:
                        here = prefix + [("child", k) for k in child_path(tree, pos)]
                    stack.append((sub, here + [("field", key)] + extra))
    return None


def _jvm_json(value: Any) -> Any:
    """A JVM field value as ``toJSON`` would have written it: a tree as its pre-order list,
    a ``Seq`` (of ``Seq``s...) as a list, an ``Option`` as its value; scalars as they are."""
    if not isinstance(value, JavaObject):
        return value
    try:
        return json.loads(str(value.toJSON()))  # an expression (a TreeNode)
    except Py4JError:
        pass
    try:
        if value.getClass().getName().startswith(("scala.Some", "scala.None")):
            return _jvm_json(_opt(value))
    except Py4JError:
        return None
    return [_jvm_json(v) for v in _seq(value)]


def _follow(node: Any, steps: list[Step]) -> Any:
    for kind, arg in steps:
        if kind == "child":
            node = node.children().apply(arg)
        elif kind == "field":
            node = getattr(node, arg)()
            if isinstance(node, JavaObject) and node.getClass().getName().startswith("scala.Some"):
                node = node.get()
        else:
            node = node.apply(arg)
    return node


def repair_null_fields(plan: Any, items: Any, nulls: list[dict[str, Any]]) -> list[Any]:
    """Read from the JVM plan every needed field ``toJSON`` wrote as null in the node dicts
    ``nulls`` (found by :func:`json_leaves`), patch them in place and mark them
    (:data:`~lineage_listener.plan.classes.READ_FROM_JVM`). Returns the values read.
    A field that cannot be read stays null (the walk records it)."""
    read = []
    for node in nulls:
        steps = path_to(items, node)
        short = str(node.get("class", "")).rsplit(".", 1)[-1]
        for name in EXPRESSION_FIELDS.get(short, ()):
            if name not in node or node[name] is not None or steps is None:
                continue
            try:
                value = _jvm_json(getattr(_follow(plan, steps), name)())
            except Py4JError as exc:
                log.debug("could not read %s.%s from the JVM: %s", short, name, exc)
                continue
            if value is not None:
                node[name] = value
                node.setdefault(READ_FROM_JVM, []).append(name)
                read.append(value)
    return read
