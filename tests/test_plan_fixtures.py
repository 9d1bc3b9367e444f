"""The walker on plans captured from real Spark (``python -m tests.fixtures.capture_plans``),
without starting Spark: exact edges for each shape and a few TPC-DS queries."""
from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from lineage_listener.lineage.query import QueryLineage, lineage
from lineage_listener.plan.classes import READ_FROM_JVM
from lineage_listener.plan.tree import parse
from tests import tpcds
from tests.fixtures.capture_plans import OUT, SHAPES, TPCDS, load

FIXTURES = sorted(OUT.glob("*.json.gz"))


@cache
def walked(name: str) -> QueryLineage:
    fixture = load(OUT / f"{name}.json.gz")
    return lineage(parse(fixture["plan"]), fixture["leaves"], fixture["target"])


def edges(name: str) -> set[tuple]:
    """``{(target column, table, source column, transform)}``; tables by their short name."""
    return {(e.target_column, e.source.dataset.rsplit(".", 1)[-1], e.source.name, e.transform.value)
            for e in walked(name).edges}


def expression(name: str, target: str | None, source: str) -> str | None:
    found = {e.expression for e in walked(name).edges if e.target_column == target and e.source.name == source}
    assert len(found) == 1, found
    return found.pop()


def test_every_fixture_is_there():
    names = {p.name.removesuffix(".json.gz") for p in FIXTURES}
    assert names == set(SHAPES) | {f"tpcds_{q}" for q in TPCDS}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name.removesuffix(".json.gz"))
def test_fixture_walks_with_readable_expressions(path: Path):
    result = walked(path.name.removesuffix(".json.gz"))
    assert result.fallbacks == frozenset()
    assert result.edges
    assert tpcds.unreadable(result.edges) == []


def test_project_filter():
    assert edges("project") == {("a", "t", "a", "identity"), ("bb", "t", "b", "rename"), ("ub", "t", "b", "derived"),
                                (None, "t", "k", "filter")}
    assert expression("project", "ub", "b") == "upper(b)"


def test_aggregate_having():
    assert edges("aggregate") == {("k", "t", "k", "identity"), ("total", "t", "a", "aggregate"),
                                  (None, "t", "k", "group_by"), (None, "t", "a", "filter")}
    assert expression("aggregate", "total", "a") == "sum(a) * 2"


def test_join():
    assert edges("join") == {("a", "t", "a", "identity"), ("b", "u", "b", "identity"),
                             (None, "t", "k", "join"), (None, "u", "k", "join")}


def test_union_branches_name_their_expression():
    assert edges("union") == {("a", "t", "a", "identity"), ("a", "u", "a", "derived"),
                              ("b", "t", "b", "identity"), ("b", "u", "b", "identity")}
    assert {(e.source.dataset.rsplit(".", 1)[-1], e.expression) for e in walked("union").edges
            if e.target_column == "a"} == {("t", "a"), ("u", "UNION branch 2: a + 1")}


def test_between_as_written():
    assert edges("between") == {("a", "t", "a", "identity"), (None, "t", "a", "filter")}
    assert expression("between", None, "a") == "a BETWEEN 1 AND 10"
    assert edges("between_value") == {("inr", "t", "a", "derived"), ("inr", "t", "k", "derived")}
    assert expression("between_value", "inr", "k") == "a BETWEEN k AND 10"


def test_interval_as_written():
    assert edges("interval") == {("d", "t", "a", "derived")}
    assert expression("interval", "d", "a") == "date_add(current_date(), a) + INTERVAL '14' DAY"


def test_grouping_functions_as_written():
    assert edges("grouping") == {
        ("k", "t", "k", "identity"), ("b", "t", "b", "identity"), ("s", "t", "a", "aggregate"),
        ("gk", "t", "k", "derived"), ("gid", "t", "k", "derived"), ("gid", "t", "b", "derived"),
        (None, "t", "k", "group_by"), (None, "t", "b", "group_by")}
    assert expression("grouping", "gk", "k") == "grouping(k)"
    assert expression("grouping", "gid", "b") == "grouping_id(k, b)"


def test_rollup_over_union_reads_null_projections_by_position():
    assert edges("rollup_union") == {("k", "t", "k", "identity"), ("k", "u", "k", "identity"),
                                     ("s", "t", "a", "aggregate"), ("s", "u", "a", "aggregate"),
                                     (None, "t", "k", "group_by"), (None, "u", "k", "group_by")}
    assert walked("rollup_union").problems == (
        "Expand.projections was null in the plan JSON: outputs read by position from the child",)


def test_a_null_expression_field_is_recorded_never_silent():
    """Any field of ``EXPRESSION_FIELDS`` written as null is a recorded problem (here a
    Project's list, nulled by hand in a real plan); one the capture read whole from the JVM is not."""
    fixture = load(OUT / "rollup_union.json.gz")
    items = [dict(i) for i in fixture["plan"]]
    project = next(i for i in items if i["class"].endswith(".Project"))
    project["projectList"] = None
    problems = lineage(parse(items), fixture["leaves"], fixture["target"]).problems
    assert "Project.projectList was null in the plan JSON: lineage through this node is lost" in problems
    expand = next(i for i in items if i["class"].endswith(".Expand"))
    expand["projections"], expand[READ_FROM_JVM] = [], ["projections"]
    problems = lineage(parse(items), fixture["leaves"], fixture["target"]).problems
    assert not [p for p in problems if p.startswith("Expand.")]


def test_cte_second_read_keeps_its_source_after_a_union():
    """``c2.a`` comes from ``t.a`` only, never from the union's other branch."""
    assert edges("cte_union_join") == {("a", "t", "a", "identity"), ("a", "u", "a", "identity"),
                                       ("a2", "t", "a", "rename"), (None, "t", "k", "join"),
                                       (None, "u", "k", "join")}


def test_insert_names_the_target_columns():
    result = walked("insert")
    assert result.target is not None and result.target.name == "spark_catalog.default.sink"
    assert edges("insert") == {("x", "t", "a", "derived"), ("y", "t", "b", "rename")}


def test_tpcds_q3():
    where = {"d_date_sk", "ss_sold_date_sk", "ss_item_sk", "i_item_sk", "i_manufact_id", "d_moy"}
    table = {"d": "date_dim", "s": "store_sales", "i": "item"}
    assert edges("tpcds_q3") == {
        ("d_year", "date_dim", "d_year", "identity"), ("brand_id", "item", "i_brand_id", "rename"),
        ("brand", "item", "i_brand", "rename"), ("sum_agg", "store_sales", "ss_ext_sales_price", "aggregate"),
        *((None, table[c[0]], c, "filter") for c in where),
        (None, "date_dim", "d_year", "group_by"), (None, "item", "i_brand", "group_by"),
        (None, "item", "i_brand_id", "group_by"),
        (None, "date_dim", "d_year", "sort"), (None, "store_sales", "ss_ext_sales_price", "sort"),
        (None, "item", "i_brand_id", "sort")}


def test_tpcds_q12_between_and_interval():
    keys = ("i_item_id", "i_item_desc", "i_category", "i_class", "i_current_price")
    where = {("date_dim", "d_date"), ("date_dim", "d_date_sk"), ("item", "i_category"), ("item", "i_item_sk"),
             ("web_sales", "ws_item_sk"), ("web_sales", "ws_sold_date_sk")}
    assert edges("tpcds_q12") == {
        *((k, "item", k, "identity") for k in keys), *((None, "item", k, "group_by") for k in keys),
        ("itemrevenue", "web_sales", "ws_ext_sales_price", "aggregate"),
        ("revenueratio", "web_sales", "ws_ext_sales_price", "aggregate"), ("revenueratio", "item", "i_class", "window"),
        *((None, t, c, "filter") for t, c in where),
        *((None, "item", k, "sort") for k in keys[:4]), (None, "web_sales", "ws_ext_sales_price", "sort")}
    assert "d_date BETWEEN '1999-02-22' AND '1999-02-22' + INTERVAL '30' DAY" in expression("tpcds_q12", None, "d_date")


def test_tpcds_q36_grouping():
    got = edges("tpcds_q36")
    assert {("lochierarchy", "item", "i_category", "derived"), ("lochierarchy", "item", "i_class", "derived")} <= got
    assert expression("tpcds_q36", "lochierarchy", "i_class") == "grouping(i_category) + grouping(i_class)"


def test_tpcds_q5_rollup_over_union_keeps_its_sources():
    """``id``, ``sales``, ``returns``, ``profit`` through a ROLLUP over three UNIONs
    (``channel`` is a literal per branch: no source)."""
    sales = {"store": "ss", "catalog": "cs", "web": "ws"}
    direct = {(t, d, c, tr) for t, d, c, tr in edges("tpcds_q5") if t is not None and tr in ("derived", "aggregate")}
    assert direct == {
        ("id", "store", "s_store_id", "derived"), ("id", "catalog_page", "cp_catalog_page_id", "derived"),
        ("id", "web_site", "web_site_id", "derived"),
        *(("sales", f"{k}_sales", f"{p}_ext_sales_price", "aggregate") for k, p in sales.items()),
        ("returns", "store_returns", "sr_return_amt", "aggregate"),
        ("returns", "catalog_returns", "cr_return_amount", "aggregate"),
        ("returns", "web_returns", "wr_return_amt", "aggregate"),
        *(("profit", f"{k}_sales", f"{p}_net_profit", "aggregate") for k, p in sales.items()),
        *(("profit", f"{k}_returns", f"{p[0]}r_net_loss", "aggregate") for k, p in sales.items())}
    assert not any(t == "channel" for t, _, _, _ in direct)
