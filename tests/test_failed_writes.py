"""A write Spark rejects keeps its edges for audit but is no dataset for graph questions
``queries.status = 'failed'`` marks them; ``include_failed`` shows them."""
from __future__ import annotations

import duckdb
import pytest

import lineage_listener
from lineage_listener.query.reports import impact, provenance


def test_failed_write_is_kept_marked_and_left_out_of_graphs(lineage, spark, tmp_path):
    src_path = tmp_path / "src"
    spark.sql("SELECT id AS a, id * 2 AS b FROM range(5)").write.parquet(str(src_path))
    src = f"file:{src_path}"
    ok = tmp_path / "ok"
    df = spark.read.parquet(str(src_path))
    lineage.run(lambda: df.selectExpr("a + 1 AS a1").write.parquet(str(ok)))
    df.createOrReplaceTempView("failsrc")

    def failing():
        with pytest.raises(Exception, match="boom"):
            spark.sql("CREATE TABLE never_created USING parquet AS "
                      "SELECT a, CASE WHEN a > 1 THEN raise_error('boom') ELSE b END AS v FROM failsrc")
    got = lineage.run(failing)
    assert not spark.catalog.tableExists("never_created")
    never = "spark_catalog.default.never_created"
    assert got.queries and {q["status"] for q in got.queries} == {"failed"}
    assert {q["target_dataset"] for q in got.queries} == {never}
    # kept for audit: the edges are in the store
    with duckdb.connect(str(lineage.store), read_only=True) as con:
        kept = con.execute("SELECT count(*) FROM column_lineage WHERE target_dataset = ?", [never]).fetchone()[0]
    assert kept == len(got.edges) > 0

    store = lineage_listener.open_store(str(lineage.store))
    down = store.downstream(src, "a")
    assert {n[0] for n in down.nodes} == {src, f"file:{ok}"}
    with_failed = store.downstream(src, "a", include_failed=True)
    assert {n[0] for n in with_failed.nodes} == {src, f"file:{ok}", never}
    assert store.upstream(never, "v").number_of_edges() == 0
    assert set(store.upstream(never, "v", include_failed=True).predecessors((never, "v"))) >= {(src, "b")}
    report = impact(store, src, "a")
    assert never not in {r["target_dataset"] for r in report["reads"]}
    assert never not in {d["dataset"] for d in report["downstream"]}
    audit = impact(store, src, "a", include_failed=True)
    assert {r["status"] for r in audit["reads"] if r["target_dataset"] == never} == {"failed"}
    assert provenance(store, never, "v")["origins"] == []
