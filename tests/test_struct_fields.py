"""Struct fields through a built struct: ``struct(a AS x) AS s`` and
``named_struct`` write field-level edges (``s.x <- a``) next to a top-level column literally
named ``s.x``; multi-hop questions about a nested path follow the struct column's own edges
where the field has none (a struct copied whole)."""
from __future__ import annotations

import lineage_listener


def _upstream(store, dataset: str, column: str, depth: int) -> set[tuple[str, str]]:
    g = store.upstream(dataset, column, depth=depth)  # src itself was written from a local range
    return set(g.nodes) - {g.graph["start"]}


def test_built_struct_fields_and_multi_hop(lineage, spark, tmp_path):
    src_path, t1, t2, t3, t4 = (tmp_path / n for n in ("src", "t1", "t2", "t3", "t4"))
    spark.sql("SELECT id AS a, id * 10 AS b FROM range(3)").write.parquet(str(src_path))
    src = f"file:{src_path}"
    df = spark.read.parquet(str(src_path))
    df.createOrReplaceTempView("struct_src")

    # job 1: a struct built with struct(), one with nested named_struct, and a column named `s.x`
    got = lineage.run(lambda: spark.sql(
        "SELECT struct(a AS x) AS s, named_struct('y', b, 'z', named_struct('w', a), 'v', a + 1) AS n, "
        "b AS `s.x` FROM struct_src").write.parquet(str(t1)))
    assert got.simple("direct") == {
        ("s", "a", "derived"), ("s.x", "a", "rename"),
        ("n", "a", "derived"), ("n", "b", "derived"),
        ("n.y", "b", "rename"), ("n.z", "a", "derived"), ("n.z.w", "a", "rename"), ("n.v", "a", "derived"),
        ("`s.x`", "b", "rename")}
    assert {e.target_column: e.expression for e in got.edges if e.target_column in ("s", "s.x", "n.z.w", "n.v")} == {
        "s": "named_struct('x', a)", "s.x": "a", "n.z.w": "a", "n.v": "a + 1"}
    assert {e.source_dataset for e in got.edges} == {src}

    # job 2 reads the field s.x and the column `s.x`; job 3 copies the struct whole; job 4 reads its field
    lineage.run(lambda: spark.read.parquet(str(t1)).selectExpr("s.x AS f", "`s.x` AS g", "n.z.w AS w")
                .write.parquet(str(t2)))
    lineage.run(lambda: spark.read.parquet(str(t1)).selectExpr("s AS s2").write.parquet(str(t3)))
    got4 = lineage.run(lambda: spark.read.parquet(str(t3)).selectExpr("s2.x AS v").write.parquet(str(t4)))
    assert got4.simple() == {("v", "s2.x", "rename")}

    store = lineage_listener.open_store(str(lineage.store))
    one, two, three, four = (f"file:{p}" for p in (t1, t2, t3, t4))
    assert _upstream(store, two, "f", 2) == {(one, "s.x"), (src, "a")}
    assert _upstream(store, two, "g", 2) == {(one, "`s.x`"), (src, "b")}
    assert _upstream(store, two, "w", 2) == {(one, "n.z.w"), (src, "a")}
    # t3.s2.x has no edge of its own: the copy t3.s2 <- t1.s carries the field along, to t1.s.x <- a
    assert _upstream(store, four, "v", 3) == {(three, "s2.x"), (one, "s.x"), (src, "a")}
    up = store.upstream(four, "v")
    assert up.edges[(one, "s.x"), (three, "s2.x")]["transform"] == "rename"
    # downstream, a reader of the whole struct reads its fields
    down = store.downstream(src, "a")
    assert {(two, "f"), (two, "w"), (three, "s2"), (three, "s2.x"), (four, "v")} <= set(down.nodes)
    assert (two, "g") not in down.nodes
    assert set(store.downstream(src, "b").nodes) == {(src, "b"), (one, "n"), (one, "n.y"), (one, "`s.x`"),
                                                      (two, "g")}
