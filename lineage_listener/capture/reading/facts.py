"""Facts of one query's datasets, read from live JVM objects while the ``QueryExecution`` is alive.

:func:`leaves` names every source leaf of a plan (catalog tables from the plan JSON itself, the
rest by the fact readers of :mod:`lineage_listener.capture.reading.readers`, remembered per leaf in a
:class:`FactCache`); :func:`target` names a write command's target with the schema it writes;
:func:`null_fields` / :func:`repair_null_fields` (:mod:`~lineage_listener.capture.reading.nullfields`)
read the plan fields ``toJSON`` wrote as null. A fact that cannot be read is simply absent.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lineage_listener import redact
from lineage_listener.capture.jvm import jvm_call_failed, seq
from lineage_listener.capture import parents
from lineage_listener.capture.multiwrite import WRITES
from lineage_listener.capture.reading.nullfields import null_fields, repair_null_fields
from lineage_listener.capture.reading.readers import relation, target_of
from lineage_listener.lineage.datasets import RelationFact, table_name
from lineage_listener.plan.classes import MULTI_WRITE, NESTED_PLAN_FIELDS, SOURCE_LEAVES, WRITE_COMMANDS
from lineage_listener.plan.scan import json_leaves

log = redact.logger(__name__)

#: What the capture calls here (``null_fields`` and ``repair_null_fields`` live in ``nullfields``).
__all__ = ["FactCache", "leaves", "null_fields", "repair_null_fields", "resolve", "run_info", "target"]


@dataclass
class FactCache:
    """Facts that outlive one query: by leaf exprId (unique per JVM) and table locations."""

    by_expr_id: dict[int, RelationFact] = field(default_factory=dict)
    locations: dict[str, str | None] = field(default_factory=dict)  # "cat.db.t" -> location
    classifications: dict[str, RelationFact] = field(default_factory=dict)  # "cat.db.t" -> what keeps labels

    def remember(self, expr_id: int, fact: RelationFact) -> None:
        if len(self.by_expr_id) > 50_000:
            self.by_expr_id.clear()
        self.by_expr_id[expr_id] = fact
        if fact.get("table") and "location" in fact:
            self.locations[table_name(fact["table"])] = fact["location"]
            kept = {k: fact[k] for k in ("classification", "classified_schema") if k in fact}
            if kept:
                self.classifications[table_name(fact["table"])] = kept


def leaves(plan: Any, items: Any, current: tuple[str, str] | None = None,
           cache: FactCache | None = None, nulls: list[dict[str, Any]] | None = None) -> dict[int, RelationFact]:
    """Facts of every data-source leaf, keyed by the exprId of the leaf's first output.

    Catalog tables are named by the plan JSON itself (their location is read once per
    table); only the rest (path-based files, DSv2, new tables) costs py4j calls.
    """
    cache = cache if cache is not None else FactCache()
    out: dict[int, RelationFact] = {}
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
            cache: FactCache | None = None) -> dict[int, RelationFact]:
    """Facts of the source leaves of ``plan`` whose first output ids are ``needed``, read from
    the JVM objects (a few py4j calls each; remembered in ``cache``)."""
    cache = cache if cache is not None else FactCache()
    out = {eid: cache.by_expr_id[eid] for eid in needed if eid in cache.by_expr_id}
    needed = set(needed) - set(out)
    if not needed:
        return out
    roots = [plan] + seq(plan.innerChildren()) + seq(plan.subqueriesAll()) + nested_plans(plan)
    for root in roots:
        for leaf in seq(root.collectLeaves()):
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
            except jvm_call_failed() as exc:  # a leaf we cannot read stays unnamed
                log.debug("could not read leaf facts: %s", exc)
            if not needed:
                return out
    return out


def nested_plans(plan: Any) -> list[Any]:
    """Plans a command holds in fields rather than as children (Delta's MERGE source and target)."""
    out = []
    try:
        getters = NESTED_PLAN_FIELDS.get(str(plan.nodeName()), ())
    except jvm_call_failed():
        return out
    for getter in getters:
        try:
            nested = getattr(plan, getter)()
            out += [nested] + seq(nested.subqueriesAll())
        except jvm_call_failed():
            continue
    return out


def target(cmd: Any, name: str, current: tuple[str, str] | None = None) -> RelationFact | None:
    """Facts of a write command's target (with the written schema), or None if unknown; of a
    multi-insert (a ``Union`` of writes), ``{"writes": [...]}``, each write's (:mod:`.multiwrite`)."""
    if name == MULTI_WRITE:
        return _writes(cmd, current)
    fact = target_of(cmd, name, current)
    if fact is not None:
        for getter in ("query", "plan", "child", "target"):
            try:
                fact["schema"] = str(getattr(cmd, getter)().schema().json())
                break
            except jvm_call_failed():
                continue
    return fact


def _writes(union: Any, current: tuple[str, str] | None) -> RelationFact | None:
    """The target of each child of a ``Union`` whose every child is a write command, or None."""
    children = seq(union.children())
    names = [str(child.nodeName()) for child in children]
    if not names or not set(names) <= WRITE_COMMANDS:
        return None
    return {WRITES: [target(child, name, current) for child, name in zip(children, names)]}


def run_info(sc: Any) -> dict[str, Any]:
    """Facts of the Spark application (``runs`` row) from a JVM ``SparkContext``."""
    info: dict[str, Any] = {"app_id": str(sc.applicationId())}
    for key, getter in (("app_name", "appName"), ("spark_version", "version"),
                        ("spark_user", "sparkUser"), ("master", "master"), ("started_at_ms", "startTime")):
        try:
            info[key] = getattr(sc, getter)()
        except jvm_call_failed():
            info[key] = None
    try:  # the scheduler's run that launched this one (Airflow's OpenLineage conf keys)
        info.update(parents.of_conf(sc.getConf()))
    except jvm_call_failed():
        pass
    return info
