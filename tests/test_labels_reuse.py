"""What a store's label questions keep from one question to the next (names, hops between datasets,
declared labels, hops between columns, known columns: ``LineageStore.reuse``) answers as asking
afresh does, and is let go when a write changes the store between two questions. Stores are
written through the store's write path; the stamp's settling time is set to nothing so a store
written a moment ago is trusted (a store changed in the last seconds keeps nothing otherwise)."""
from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bench import labels_bench
from bench.make_synthetic_store import generate
from lineage_listener.govern import labelstore
from lineage_listener.govern.answers import column_labels
from lineage_listener.query import open_store
from lineage_listener.query import store as query_store
from lineage_listener.store import stamp
from lineage_listener.store.connection import open_writable
from lineage_listener.store.rows import row_of
from lineage_listener.store.upsert import commit_batch

DB = "spark_catalog.db."


@pytest.fixture
def settled_at_once(monkeypatch):
    monkeypatch.setattr(stamp, "SETTLED_NS", 0)


def at(day: int) -> datetime:
    return datetime(2026, 1, 1) + timedelta(days=day - 1, hours=3)


def step(source: tuple[str, str], target: tuple[str, str], day: int) -> tuple:
    run = f"{target[0]}-{day}"
    return (f"{run}:q", run, target[0], target[1], source[0], source[1], "identity", "direct", source[1], False,
            at(day).isoformat(sep=" "))


def write(path: Path, rows: list[tuple] = (), labels: list[tuple[str, str, str, bool]] = (),
          tables: list[tuple[str, str]] = ()) -> None:
    batch = labelstore.set_batch(labels, "test")
    for r in rows:
        batch.add(row_of("column_lineage", r))
    for name, location in tables:
        batch.add(row_of("datasets", (name, "table", "parquet", location, None, at(1), at(1))))
    con = open_writable(path)
    try:
        commit_batch(con, batch)
    finally:
        con.close()


def carried(answer: dict) -> dict[str, set[str]]:
    return {c["column"]: {x["label"] for x in c["labels"]} for c in answer["columns"]}


def counting(monkeypatch) -> list[int]:
    """The queries sent over the connections opened from now on (one counter for all)."""
    sent = [0]
    real = query_store.open_readonly

    def opened(path):
        con = real(path)

        class Counted:
            def execute(self, *args, **kwargs):
                sent[0] += 1
                return con.execute(*args, **kwargs)

            def __getattr__(self, name):
                return getattr(con, name)
        return Counted()
    monkeypatch.setattr(query_store, "open_readonly", opened)
    return sent


def test_questions_kept_between_answer_as_each_asked_afresh(tmp_path, monkeypatch, settled_at_once):
    path = tmp_path / "lineage.duckdb"
    generate(path, edges=5_000)
    seeds = labels_bench.declare(str(path), 12, 1)
    reached = labels_bench.reached_datasets(str(path), seeds)
    assert len(reached) >= 4
    picks = reached[:: max(1, len(reached) // 4)][:4]
    sent = counting(monkeypatch)
    kept, afresh = open_store(path), {}
    for influence in (True, False):
        for dataset in picks:
            afresh[dataset, influence] = json.dumps(column_labels(open_store(path), dataset, influence=influence),
                                                    sort_keys=True, default=str)
    asked_afresh, sent[0] = sent[0], 0
    for _ in range(2):
        for influence in (True, False):
            for dataset in picks:
                answer = column_labels(kept, dataset, influence=influence)
                assert json.dumps(answer, sort_keys=True, default=str) == afresh[dataset, influence], dataset
    assert any(c["labels"] for (d, i), text in afresh.items() for c in json.loads(text)["columns"])
    # twice the questions, and what the first ones read serves the rest
    assert sent[0] < asked_afresh, (sent[0], asked_afresh)


def test_a_write_between_two_questions_is_seen(tmp_path, settled_at_once):
    s, a, b, n = DB + "s", DB + "a", DB + "b", DB + "n"
    path = tmp_path / "lineage.duckdb"
    write(path, [step((s, "email"), (a, "email"), 1), step(("file:/wh/a", "email"), (b, "email"), 2)],
          [(s, "email", "pii.email", True)])
    store = open_store(path)
    for _ in range(2):   # the second walks over what the first kept (every hop between datasets at once)
        assert carried(column_labels(store, a)) == {"email": {"pii.email"}}
        assert carried(column_labels(store, b)) == {"email": set()}
    # a new dataset upstream, a new label on it, and a's storage location: the path into b
    write(path, [step((n, "secret"), (a, "secret"), 3)], [(n, "secret", "confidential", True)],
          [(a, "file:/wh/a")])
    assert carried(column_labels(store, a)) == {"email": {"pii.email"}, "secret": {"confidential"}}
    assert carried(column_labels(store, b)) == {"email": {"pii.email"}}
    # a label taken back
    write(path, labels=[(s, "email", "pii.email", False)])
    assert carried(column_labels(store, b)) == {"email": set()}
    assert carried(column_labels(store, a, influence=False)) == {"email": set(), "secret": {"confidential"}}
