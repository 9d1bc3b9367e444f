"""Many writers through one lineage server: group commits, exact edges, a poison batch, reads meanwhile.

A real ``lineage-listener serve`` on 127.0.0.1 and a real DuckDB store. To make the server's writer
group batches for sure, the test holds the store file itself (as a job writing it directly would)
while the posts queue up, then lets go.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from tests.server_helpers import ROOT, TOKEN, Server


def rows(name: str, edges: int, captured_at: str = "2026-03-01 10:00:00") -> dict[str, list[list]]:
    """A capture batch: one query ``name`` writing ``edges`` columns of ``db.<name>`` from ``db.src``."""
    target = f"db.{name}"
    return {"queries": [[name, "run-1", "save", "InsertIntoHadoopFsRelationCommand", None, "succeeded", None, 5,
                         "2026-03-01 10:00:00", target]],
            "runs": [["run-1", "app", "writers", "4.3.0", None, "local[2]", "2026-03-01 09:00:00", None]],
            "datasets": [[target, "table", "parquet", None, None, "2026-03-01 10:00:00", "2026-03-01 10:00:00"]],
            "column_lineage": [[name, "run-1", target, f"c{i}", "db.src", f"c{i}", "identity", "direct", f"c{i}",
                                False, captured_at] for i in range(edges)]}


def post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(f"{url}/api/batches", data=json.dumps({"rows": body}).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def get(url: str, path: str) -> dict:
    with urllib.request.urlopen(url + path, timeout=60) as r:
        return json.loads(r.read())


def edges_in(store: Path) -> tuple[int, int]:
    """(edges, distinct edges) in the store."""
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute("SELECT count(*), count(DISTINCT (query_id, target_column, source_dataset, source_column)) "
                           "FROM column_lineage").fetchone()


@pytest.fixture
def server(tmp_path: Path):
    srv = Server(tmp_path / "lineage.duckdb", extra_args=["--lock-timeout", "120", "--queue-rows", "200000"],
                 output=tmp_path / "server.log").start()
    assert post(srv.url, rows("first", 3)) == (200, {"written": True, "rows": 6, "new_edges": 3})
    yield srv
    srv.stop()


def wait_released(srv: Server) -> None:
    """Until the server's writer has let the store go (it does when no batch waits)."""
    deadline = time.monotonic() + 30
    while get(srv.url, "/healthz")["writer"]["open"]:
        assert time.monotonic() < deadline, "the writer never let the store go"
        time.sleep(0.05)


@contextmanager
def holding(srv: Server):
    """Hold the store as another process would while posts queue up; the writer waits, then groups them."""
    wait_released(srv)
    con = duckdb.connect(str(srv.store))
    try:
        yield
    finally:
        con.close()


def writers_waiting(srv: Server, batches: int) -> None:
    """Until ``batches`` batches wait in the server: the group its writer holds (waiting for the store)
    and the queue behind it (the next group)."""
    deadline = time.monotonic() + 60
    while True:
        w = get(srv.url, "/healthz")["writer"]
        if w["writing"] and w["writing"] + w["queued"] >= batches:
            return
        assert time.monotonic() < deadline, f"posts never queued: {w}"
        time.sleep(0.05)


def test_concurrent_posters_replays_exact_edges(server: Server) -> None:
    """20 posters x 10 batches, with replays of the same batch (after its answer; by two posters at once,
    in one group): every edge once, each batch's new_edges summing to the store's edges, fewer commits
    than batches."""
    batches = [[rows(f"p{p}-b{b}", 1 + (p * 7 + b * 3) % 40) for b in range(10)] for p in range(20)]
    for p in range(0, 20, 4):
        batches[p].append(batches[p][0])  # resent after a lost answer
        batches[p + 1].insert(0, batches[p][0])  # sent by two at once: one group, most likely

    def poster(mine: list[dict]) -> list[tuple[int, dict]]:
        return [post(server.url, b) for b in mine]
    with ThreadPoolExecutor(20) as pool:
        with holding(server):
            futures = [pool.submit(poster, mine) for mine in batches]
            writers_waiting(server, 10)
    answers = [a for f in futures for a in f.result()]
    assert {status for status, _ in answers} == {200}
    stats = get(server.url, "/healthz")["writer"]
    server.stop()
    distinct = 3 + sum(len(b["column_lineage"]) for b in {b["queries"][0][0]: b for m in batches for b in m}.values())
    assert edges_in(server.store) == (distinct, distinct)
    assert 3 + sum(body["new_edges"] for _, body in answers) == distinct
    assert stats["batches"] == 1 + len(answers)
    assert stats["groups"] <= stats["batches"] - 8, stats  # 10 waiting batches made two groups at most


def test_poison_batch_sinks_no_other(server: Server) -> None:
    """A batch that cannot be written (a time that is no time) is refused alone (422); the batches
    committed in its group are all in the store."""
    good = [rows(f"good{i}", 5 + i) for i in range(8)]
    poison = rows("poison", 4, captured_at="not a time")

    with ThreadPoolExecutor(9) as pool:
        with holding(server):
            futures = [pool.submit(post, server.url, good[0])]
            writers_waiting(server, 1)  # the writer holds it, waiting for the store; the rest queue up
            futures += [pool.submit(post, server.url, b) for b in good[1:4] + [poison] + good[4:]]
            writers_waiting(server, 9)
    answers = [f.result() for f in futures]
    assert answers[4][0] == 422 and "cannot be written" in answers[4][1]["detail"]
    assert [a[0] for a in answers[:4] + answers[5:]] == [200] * 8
    assert sum(a[1]["new_edges"] for a in answers[:4] + answers[5:]) == sum(5 + i for i in range(8))
    stats = get(server.url, "/healthz")["writer"]
    assert (stats["refused"], stats["split"]) == (1, 1)  # one group of 8 failed, was written one by one
    # the poster retries the good batches only; the server is fine afterwards
    assert post(server.url, rows("after", 2))[0] == 200
    server.stop()
    expected = 3 + sum(5 + i for i in range(8)) + 2
    assert edges_in(server.store) == (expected, expected)


def test_reads_answer_while_a_group_is_written(server: Server) -> None:
    """A read answers from the last commit while a big group is being written: it neither waits for the
    group's commit nor sees part of it."""
    big = [rows(f"big{i}", 25_000) for i in range(6)]
    reads: list[tuple[dict, int, dict]] = []  # (writer before, queries seen, writer after)
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            before = get(server.url, "/healthz")["writer"]
            if not before["writing_rows"]:
                time.sleep(0.01)
                continue
            seen = get(server.url, "/api/runs?limit=1")[0]["queries"]
            after = get(server.url, "/healthz")["writer"]
            if after["writing_rows"]:
                reads.append((before, seen, after))
    t = threading.Thread(target=reader)
    t.start()
    try:
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda b: post(server.url, b), big))
    finally:
        stop.set()
        t.join()
    assert [a[0] for a in answers] == [200] * 6
    within = [(b, seen) for b, seen, a in reads
              if b["groups"] == a["groups"] and not (b["committing"] or a["committing"])]
    assert within, f"no read answered while one group was being written: {reads}"
    # a read saw exactly the batches committed before it (one query each), never part of a group
    assert [seen for _, seen in within] == [b["batches"] for b, _ in within]
    server.stop()
    assert edges_in(server.store)[0] == 3 + 6 * 25_000


def test_a_job_writing_the_store_directly_gets_its_turn(tmp_path: Path) -> None:
    """While posts keep the server's writer busy, a job writing the same file directly (StoreWriter) gets
    the store when the writer lets go (no batch waiting, or ``--hold`` reached), and writes without
    spooling; the server takes the store back after."""
    srv = Server(tmp_path / "lineage.duckdb", extra_args=["--hold", "0.5"], output=tmp_path / "server.log").start()
    stop = threading.Event()
    answers: list[int] = []

    def poster(p: int) -> None:
        n = 0
        while not stop.is_set():
            answers.append(post(srv.url, rows(f"busy{p}-{n}", 20))[0])
            n += 1
    posters = [threading.Thread(target=poster, args=(p,)) for p in range(4)]
    try:
        for t in posters:
            t.start()
        deadline = time.monotonic() + 30
        while get(srv.url, "/healthz")["writer"]["opened"] < 1 or not answers:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        direct = subprocess.run(
            [sys.executable, "-c", DIRECT_WRITE, str(srv.store)], capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        while get(srv.url, "/healthz")["writer"]["opened"] < 2:  # the server takes the store back after
            assert time.monotonic() < deadline + 120, "the server never took the store back"
            time.sleep(0.05)
    finally:
        stop.set()
        for t in posters:
            t.join()
        srv.stop()
    assert direct.stdout.split() == ["True", "7"], direct.stderr[-2000:]
    assert set(answers) == {200}
    assert edges_in(srv.store)[0] == 7 + 20 * len(answers)


DIRECT_WRITE = """
import sys
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import row_of
from lineage_listener.store.writer import StoreWriter
b = Batch()
b.add(row_of("queries", ("direct", "run-d", "save", "X", None, "succeeded", None, 1, "2026-03-01 10:00:00", "db.direct")))
for i in range(7):
    b.add(row_of("column_lineage", ("direct", "run-d", "db.direct", f"c{i}", "db.src", f"c{i}", "identity", "direct",
                             f"c{i}", False, "2026-03-01 10:00:00")))
w = StoreWriter(sys.argv[1], lock_timeout=60)
print(w.write(b), w.new_edges)
"""


def test_a_full_queue_answers_503_with_retry_after(tmp_path: Path) -> None:
    """The queue is bounded in rows: past ``--queue-rows`` a post is answered 503 with Retry-After (not
    held in memory); once the queue drains, the same batch is taken."""
    srv = Server(tmp_path / "lineage.duckdb", extra_args=["--queue-rows", "50", "--lock-timeout", "120"],
                 output=tmp_path / "server.log").start()
    try:
        assert post(srv.url, rows("first", 3))[0] == 200
        with ThreadPoolExecutor(2) as pool:
            with holding(srv):
                futures = [pool.submit(post, srv.url, rows("taken", 20))]
                writers_waiting(srv, 1)
                futures.append(pool.submit(post, srv.url, rows("queued", 20)))  # 22 rows wait
                writers_waiting(srv, 2)
                req = urllib.request.Request(f"{srv.url}/api/batches", method="POST",
                                             data=json.dumps({"rows": rows("over", 30)}).encode(),
                                             headers={"Authorization": f"Bearer {TOKEN}"})
                with pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(req, timeout=60)
            assert [f.result()[0] for f in futures] == [200, 200]
        assert refused.value.code == 503 and int(refused.value.headers["Retry-After"]) >= 2
        assert "retry" in json.loads(refused.value.read())["detail"]
        assert post(srv.url, rows("over", 30)) == (200, {"written": True, "rows": 33, "new_edges": 30})
    finally:
        srv.stop()
