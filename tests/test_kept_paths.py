"""Paths that run forward in time, windows that keep them, and lanes (copy, masked copy, influence)
that keep their own capture times, on stores written through the store's write path."""
from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from lineage_listener.query import open_store
from lineage_listener.query.reports import impact
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import row_of
from lineage_listener.store.connection import open_writable
from lineage_listener.store.upsert import commit_batch

S, A, B, C = ("spark_catalog.db.s", "x"), ("spark_catalog.db.a", "x"), ("spark_catalog.db.b", "x"), \
    ("spark_catalog.db.c", "x")


def at(day: int, hour: int) -> datetime:
    return datetime(2026, 1, 1) + timedelta(days=day - 1, hours=hour)


def step(source, target, when: datetime, transform="identity", kind="direct", expr=None, masking=False,
         job: str | None = None) -> tuple:
    """One captured edge, as its own query (``job`` names the run)."""
    run = job or f"{target[0]}-{when:%m%d%H}"
    q = f"{run}:{when:%m%d%H%M}:{transform}"
    target_col = None if kind == "indirect" and transform == "filter" else target[1]
    return (q, run, target[0], target_col, source[0], source[1], transform, kind, expr or source[1], masking,
            when.isoformat(sep=" "))


def store_of(tmp_path: Path, rows: list[tuple]) -> Path:
    path = tmp_path / "lineage.duckdb"
    con = open_writable(path)
    try:
        batch = Batch()
        for r in rows:
            batch.add(row_of("column_lineage", r))
        commit_batch(con, batch)
    finally:
        con.close()
    return path


def test_a_path_never_runs_backwards_in_time(tmp_path):
    """s -> a on day 5, a -> b on day 3 only: b never held what s gave a."""
    store = open_store(store_of(tmp_path, [step(S, A, at(5, 3)), step(A, B, at(3, 3))]))
    down = store.downstream(*S)
    assert A in down and B not in down
    up = store.upstream(*B)
    assert A in up and S not in up
    assert store.upstream(*A).has_edge(S, A)


@pytest.mark.parametrize("day, days", [(10, 30), (20, 40)])   # known among an edge's first captures / asked
def test_exact_capture_times_where_the_bounds_cannot_decide(tmp_path, day, days):
    """a -> b runs daily at 02:00, s -> a once at 03:00, b -> c once at 01:00 the next day: s's data
    reaches b the next day at 02:00 (after c was written), though b's first and last captures bracket it."""
    rows = [step(S, A, at(day, 3)), step(B, C, at(day + 1, 1))]
    rows += [step(A, B, at(d, 2), job="daily-ab") for d in range(1, days + 1)]
    store = open_store(store_of(tmp_path, rows))
    down = store.downstream(*S)
    assert B in down and C not in down
    up = store.upstream(*C)
    assert A in up and S not in up            # c's data left a at 02:00 that day, before s wrote a
    assert S in store.upstream(*B)
    # a window on the next day: b was written in it from a, which s wrote before it
    g = store.downstream(*S, since=at(day + 1, 0), until=at(day + 1, 23))
    assert not g.nodes[B]["before_window"] and g.nodes[A]["before_window"]
    assert g.edges[A, B]["captures"] == 1 and g.edges[S, A]["before_window"]
    # ... and a window ending before s's data reached b holds only a, which was not written in it
    g = store.downstream(*S, since=at(day, 12), until=at(day + 1, 1))
    assert g.number_of_edges() == 0
    assert g.graph["window"]["outside"]["captures"] >= 1


def test_a_window_keeps_the_masking_of_the_writes_in_it(tmp_path):
    """s -> a copied in clear on day 1, masked from day 10 on."""
    rows = [step(S, A, at(1, 1)), step(S, A, at(10, 1), "derived", expr="sha2(x, 256)", masking=True),
            step(S, A, at(11, 1), "derived", expr="sha2(x, 256)", masking=True)]
    store = open_store(store_of(tmp_path, rows))
    assert store.downstream(*S).nodes[A]["masking"] == "partly"
    assert store.downstream(*S, since=at(5, 0)).nodes[A]["masking"] == "masked"
    assert store.downstream(*S, until=at(5, 0)).nodes[A]["masking"] == "unmasked"
    report = impact(store, *S, since=at(5, 0))
    assert [(d["column"], d["masking"], d["runs"]) for d in report["downstream"]] == [
        ("x", "masked", ["spark_catalog.db.a-011001", "spark_catalog.db.a-011101"])]


def test_a_copy_that_is_also_a_filter_key_is_a_copy_and_a_filter_only_influences(tmp_path):
    rows = [step(S, A, at(1, 1), job="j1"), step(S, A, at(1, 1), "filter", "indirect", "x > 0", job="j1"),
            step(("spark_catalog.db.r", "y"), A, at(1, 1), job="j1"),
            step(S, B, at(2, 1), "filter", "indirect", "x > 0", job="j2"),
            step(("spark_catalog.db.r", "y"), B, at(2, 1), job="j2")]
    store = open_store(store_of(tmp_path, rows))
    g = store.downstream(*S)
    assert (g.nodes[A]["reach"], g.nodes[A]["masking"]) == ("copy", "unmasked")
    assert (g.nodes[B]["reach"], g.nodes[B]["via"]) == ("influenced", ["filter"])
    assert "masking" not in g.nodes[B]
    up = store.upstream(*B)
    assert up.nodes[S]["reach"] == "influenced" and up.nodes[("spark_catalog.db.r", "y")]["reach"] == "copy"


def kept_from(path: Path, starts: list, since: datetime | None = None):
    """The downstream walk of ``starts`` as the store's own walks make it, with the steps of why-paths."""
    from lineage_listener.query.expand import Filters, expand, nearest_captures
    from lineage_listener.query.graph import build_graph
    from lineage_listener.query.kept import keep
    from lineage_listener.store.connection import open_readonly

    con = open_readonly(path)
    try:
        found = build_graph(starts[0], expand(con, starts, "downstream"), "downstream")
        return keep(found, starts, "downstream", since, None, lambda asked: nearest_captures(con, asked, Filters()),
                    arrivals=True)
    finally:
        con.close()


def test_several_starts_walk_as_one_and_each_column_says_its_earliest_path(tmp_path):
    """s -> a on day 2, r -> a on day 1, a -> b on day 3, s -> r on day 5: walked from s and r at
    once, a is reached first from r (day 1), b through a (day 3); r, a start, is not reached from s."""
    from lineage_listener.query.kept import path

    R = ("spark_catalog.db.r", "x")
    k = kept_from(store_of(tmp_path, [step(S, A, at(2, 1)), step(R, A, at(1, 1)), step(A, B, at(3, 1)),
                                      step(S, R, at(5, 1))]), [S, R])
    assert k.nodes[S]["reach"] == k.nodes[R]["reach"] == "start"
    assert [(u, v, t) for u, v, _, t in path(k, B, "clear")] == [(R, A, at(1, 1)), (A, B, at(3, 1))]
    assert path(k, R, "clear") == [] and path(k, B, "masked") == []
    assert (k.nodes[B]["depth"], k.nodes[A]["depth"]) == (2, 1)


def test_a_path_in_a_window_ends_with_a_write_in_it_and_runs_forward_in_time(tmp_path):
    """s -> a on day 1; a -> b daily from day 2 to day 12; b -> c on day 11. In a window from day 10,
    c's path ends with its day-11 write and b's with its first write in the window (day 10), while
    the path into c goes through b's write before c's (day 2, the earliest): never backwards in time."""
    from lineage_listener.query.kept import path

    rows = [step(S, A, at(1, 1)), step(B, C, at(11, 1))] + [step(A, B, at(d, 2), job="daily") for d in range(2, 13)]
    k = kept_from(store_of(tmp_path, rows), [S], since=at(10, 0))
    assert [t for _, _, _, t in path(k, B, "clear")] == [at(1, 1), at(10, 2)]
    assert [t for _, _, _, t in path(k, C, "clear")] == [at(1, 1), at(2, 2), at(11, 1)]
    assert path(k, A, "clear") == []                  # a was written before the window only
    whole = kept_from(store_of(tmp_path / "all", rows), [S])
    assert [t for _, _, _, t in path(whole, B, "clear")] == [at(1, 1), at(2, 2)]
