"""``enable()`` only starts capture: the capture thread builds the rest and warms up while the job runs.

Queries that end before the capture thread is ready wait in its queue and are captured once;
a warm-up that fails costs one log line, not the capture.
"""
from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest

import lineage_listener
from lineage_listener.capture import planreader

REPO = Path(__file__).resolve().parent.parent


def test_importing_the_capture_entry_point_loads_neither_sqlglot_nor_duckdb() -> None:
    """The lineage walk (sqlglot) and the store (duckdb) are loaded by the capture thread, not by enable()."""
    code = ("import sys, lineage_listener.capture.inprocess; "
            "print(sorted(m for m in ('sqlglot', 'duckdb', 'lineage_listener.capture.records', "
            "'lineage_listener.store.writer', 'lineage_listener.store.remote') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def _edges(store: Path) -> list[tuple]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute("SELECT source_column, target_column, count(*) FROM column_lineage "
                           "GROUP BY ALL ORDER BY ALL").fetchall()


def test_queries_before_the_capture_thread_is_ready_are_captured_exactly_once(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "l.duckdb"
    release = threading.Event()
    real_warm_up = planreader.warm_up

    def held_warm_up(session: Any) -> bool:  # the capture thread is still starting while queries end
        assert release.wait(60)
        return real_warm_up(session)

    monkeypatch.setattr(planreader, "warm_up", held_warm_up)
    handle = lineage_listener.enable(spark, store=str(store))
    try:
        for i in range(3):
            spark.range(3).selectExpr(f"id * {i + 1} AS c{i}").write.mode("overwrite").parquet(
                str(tmp_path / f"out{i}"))
        assert not handle.flush(0.5)  # cannot be done: the capture thread has not started reading
        assert not store.exists()  # nothing written before the thread is ready
        release.set()
        assert handle.flush(60)
    finally:
        release.set()
        lineage_listener.disable(spark)
    edges = _edges(store)
    assert [e[1] for e in edges] == ["c0", "c1", "c2"], edges
    assert all(e[2] == 1 for e in edges), edges  # each once
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM queries").fetchone() == (3,)


def test_a_failing_warm_up_costs_one_line_and_capture_goes_on(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    store = tmp_path / "l.duckdb"

    def broken_warm_up(session: Any) -> bool:
        raise RuntimeError("no class loader today")

    monkeypatch.setattr(planreader, "warm_up", broken_warm_up)
    caplog.set_level(logging.WARNING, logger="lineage_listener")
    handle = lineage_listener.enable(spark, store=str(store))
    try:
        spark.range(3).selectExpr("id AS kept").write.mode("overwrite").parquet(str(tmp_path / "out"))
        assert handle.flush(60)
    finally:
        lineage_listener.disable(spark)
    said = [r.getMessage() for r in caplog.records if r.name.startswith("lineage_listener")]
    assert len(said) == 1 and "warm-up failed" in said[0] and "no class loader today" in said[0], said
    assert [e[1] for e in _edges(store)] == ["kept"]


def test_kafka_settings_are_read_from_the_applications_conf(spark: Any) -> None:
    """enable() reads only the ``spark.lineage.kafka.*`` keys of the application's conf (one JVM call)."""
    from lineage_listener.kafka import settings

    conf = spark.sparkContext._jsc.sc().conf()
    keys = {"spark.lineage.kafka.bootstrap": "127.0.0.1:9", "spark.lineage.kafka.topic": "lineage",
            "spark.lineage.kafka.conf.acks": "all"}
    assert settings.of_session(spark) is None
    for key, value in keys.items():
        conf.set(key, value)
    try:
        found = settings.of_session(spark)
    finally:
        for key in keys:
            conf.remove(key)
    assert found == settings.KafkaSettings("127.0.0.1:9", "lineage", {"acks": "all"})


def test_the_capture_thread_starts_after_the_listener_bus_is_drained(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """enable()'s JVM calls that do not need the capture thread come before it starts: each answer
    that arrives while the thread imports its modules waits for the GIL."""
    from lineage_listener.capture import inprocess, pipeline

    order: list[str] = []
    real_drain, real_init = inprocess.wait_for_listener_bus, pipeline.Capture.__init__

    def drain(*args: Any, **kwargs: Any) -> bool:
        order.append("drain")
        return real_drain(*args, **kwargs)

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        order.append("capture thread")
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(inprocess, "wait_for_listener_bus", drain)
    monkeypatch.setattr(pipeline.Capture, "__init__", init)
    lineage_listener.enable(spark, store=str(tmp_path / "l.duckdb"))
    lineage_listener.disable(spark)
    assert order[:2] == ["drain", "capture thread"], order
