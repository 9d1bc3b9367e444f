"""Dotted names and nested fields are distinct columns in the store.

A top-level column literally named ``s.x`` is stored as ```s.x```; the field ``x`` of
struct ``s`` as ``s.x`` (scheme in :mod:`lineage_listener.lineage.column_path`).
"""
from __future__ import annotations

import duckdb
import pytest

import lineage_listener
from lineage_listener.lineage.column_path import child, last, lookups, quote, split


@pytest.fixture
def dotted(spark, tmp_path):
    """A parquet dataset with a top-level column ``s.x``, a struct ``s`` (fields x, y) and ``a``."""
    path = tmp_path / "dotted"
    spark.sql("SELECT 1 AS `s.x`, named_struct('x', 2, 'y', 3, 'p.q', 4) AS s, 5 AS a") \
        .write.mode("overwrite").parquet(str(path))
    return f"file:{path}"


def test_top_level_dotted_name_and_struct_field_are_distinct(lineage, spark, dotted, tmp_path):
    out = tmp_path / "out"
    src = spark.read.parquet(dotted[len("file:"):])
    got = lineage.run(lambda: src.selectExpr("`s.x` AS from_top", "s.x AS from_field", "s.`p.q` AS pq",
                                             "a + 1 AS `t.v`").write.parquet(str(out)))
    target = f"file:{out}"
    assert {(e.target_column, e.source_column, e.transform) for e in got.edges} == {
        ("from_top", "`s.x`", "rename"), ("from_field", "s.x", "rename"), ("pq", "s.`p.q`", "rename"),
        ("`t.v`", "a", "derived")}
    assert {e.target_column: e.expression for e in got.edges} == {
        "from_top": "`s.x`", "from_field": "s.x", "pq": "s.`p.q`", "`t.v`": "a + 1"}
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        cols = {r[0] for r in con.execute("SELECT column_name FROM dataset_columns WHERE dataset = ?",
                                          [dotted]).fetchall()}
        tcols = {r[0] for r in con.execute("SELECT column_name FROM dataset_columns WHERE dataset = ?",
                                           [target]).fetchall()}
    assert cols == {"`s.x`", "s", "s.x", "s.y", "s.`p.q`", "a"}
    assert tcols == {"from_top", "from_field", "pq", "`t.v`"}

    store = lineage_listener.open_store(str(lineage.store))
    assert set(store.upstream(target, "from_top").predecessors((target, "from_top"))) == {(dotted, "`s.x`")}
    assert set(store.upstream(target, "from_field").predecessors((target, "from_field"))) == {(dotted, "s.x")}
    # as typed first: s.x is the struct field; `s.x` the top-level column
    assert set(store.downstream(dotted, "s.x").successors((dotted, "s.x"))) == {(target, "from_field")}
    assert set(store.downstream(dotted, "`s.x`").successors((dotted, "`s.x`"))) == {(target, "from_top")}
    # t.v has no struct field of that name: it finds the column named t.v
    assert store.upstream(target, "t.v").graph["start"] == (target, "`t.v`")


def test_identity_copy_of_dotted_names(lineage, spark, dotted, tmp_path):
    out = tmp_path / "copy"
    src = spark.read.parquet(dotted[len("file:"):])
    got = lineage.run(lambda: src.select("`s.x`", "s").write.parquet(str(out)))
    assert ("`s.x`", "`s.x`", "identity") in got.simple()
    assert ("s", "s", "identity") in got.simple()


def test_column_path_scheme():
    assert quote("plain") == "plain" and quote("order count ") == "order count "
    assert quote("s.x") == "`s.x`" and quote("a`b") == "`a``b`"
    assert child("s", "x") == "s.x" and child("`s.x`", "y") == "`s.x`.y" and child("s", "p.q") == "s.`p.q`"
    for segments in (["s.x"], ["s", "x"], ["s", "p.q", "a`b"], ["`", "."]):
        stored = quote(segments[0])
        for seg in segments[1:]:
            stored = child(stored, seg)
        assert split(stored) == segments
    assert last("s.`p.q`") == "p.q"
    assert lookups("s.x") == ["s.x", "`s.x`"] and lookups("`s.x`") == ["`s.x`"]
