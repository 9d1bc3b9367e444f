"""``enable()`` only starts capture: the capture thread builds the rest and warms up while the job runs.

Queries that end before the capture thread is ready wait in its queue and are captured once;
a warm-up that fails costs one log line, not the capture.
"""
from __future__ import annotations

import logging
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

import lineage_listener
from lineage_listener.capture.reading import planreader

REPO = Path(__file__).resolve().parent.parent


def test_importing_the_capture_entry_point_loads_neither_sqlglot_nor_duckdb() -> None:
    """The lineage walk (sqlglot), the store (duckdb), the plan and fact readers and the store's
    rows are loaded by the capture thread, not by enable()."""
    code = ("import sys, lineage_listener.capture.inprocess; "
            "print(sorted(m for m in ('sqlglot', 'duckdb', 'lineage_listener.capture.recording.records', "
            "'lineage_listener.store.writer', 'lineage_listener.store.remote', 'lineage_listener.capture.reading.queryreader', "
            "'lineage_listener.capture.reading.readers', 'lineage_listener.capture.reading.streams', "
            "'lineage_listener.store.rows') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def _edges(store: Path) -> list[tuple]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute("SELECT source_column, target_column, count(*) FROM column_lineage "
                           "GROUP BY ALL ORDER BY ALL").fetchall()


def _captured(session: Any, store: Path, folder: Path, *columns: str,
              started: Callable[[Any], None] = lambda handle: None) -> None:
    """Enable capture, write ``range(3).selectExpr(column)`` for each column, flush, disable."""
    handle = lineage_listener.enable(session, store=str(store))
    try:
        for column in columns:
            session.range(3).selectExpr(column).write.mode("overwrite").parquet(str(folder / column.split()[-1]))
        started(handle)
        assert handle.flush(60)
    finally:
        lineage_listener.disable(session)


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
    _captured(spark, store, tmp_path, "id AS kept")
    said = [r.getMessage() for r in caplog.records if r.name.startswith("lineage_listener")]
    assert len(said) == 1 and "warm-up failed" in said[0] and "no class loader today" in said[0], said
    assert [e[1] for e in _edges(store)] == ["kept"]
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT stage, error FROM capture_errors").fetchall() == [
            ("plan", "warm-up failed: RuntimeError: no class loader today")]


def test_the_lineage_keys_are_read_from_the_sessions_conf(spark: Any) -> None:
    """enable() reads the session's ``spark.lineage.*`` keys in one go: the application's conf as the
    session was built from it, with the session's own values over it; no other key."""
    from lineage_listener.capture.inprocess import lineage_conf
    from lineage_listener.kafka.settings import KafkaSettings

    app = spark._jsparkSession.sharedState().conf()  # what Spark copies into each new session's conf
    keys = {"spark.lineage.kafka.bootstrap": "127.0.0.1:9", "spark.lineage.kafka.topic": "lineage",
            "spark.lineage.kafka.conf.acks": "all"}
    assert KafkaSettings.from_conf(lineage_conf(spark)) is None
    for key, value in keys.items():
        app.set(key, value)
    try:
        session = spark.newSession()
        session.conf.set("spark.lineage.kafka.topic", "the-sessions")
        session.conf.set("spark.lineage.url", "http://127.0.0.1:9")
        found = lineage_conf(session)
    finally:
        for key in keys:
            app.remove(key)
    assert KafkaSettings.from_conf(found) == KafkaSettings("127.0.0.1:9", "the-sessions", {"acks": "all"})
    assert found["spark.lineage.url"] == "http://127.0.0.1:9"
    assert all(key.startswith("spark.lineage.") for key in found), found
    assert "spark.lineage.url" not in lineage_conf(spark)  # set in the other session only


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


def _threads(prefix: str) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(prefix) and t.is_alive()]


def _query_listeners(session: Any) -> int:
    """How many QueryExecutionListeners the session has (Spark's own ones included)."""
    return len(session._jsparkSession.listenerManager().listListeners())


def _stream_listeners(session: Any) -> int:
    """How many StreamingQueryListeners the session has (a fresh session: only capture's)."""
    return len(session._jsparkSession.streams().listListeners())


def test_an_action_that_ends_before_the_capture_exists_is_captured_once(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The listener is registered before the capture thread starts: an action delivered to it
    meanwhile waits in the listener and reaches the capture first, once."""
    from lineage_listener.capture import inprocess

    store = tmp_path / "l.duckdb"
    real_capture = inprocess.Capture
    delivered: list[int] = []

    def capture_after_an_action(*args: Any, **kwargs: Any) -> Any:
        spark.range(3).selectExpr("id AS early").write.mode("overwrite").parquet(str(tmp_path / "early"))
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(60_000)  # delivered to the listener
        delivered.append(True)
        return real_capture(*args, **kwargs)

    monkeypatch.setattr(inprocess, "Capture", capture_after_an_action)
    _captured(spark, store, tmp_path, "id AS late")
    assert delivered, "the capture was not built"
    edges = _edges(store)
    assert [e[1] for e in edges] == ["early", "late"], edges
    assert all(e[2] == 1 for e in edges), edges
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM queries").fetchone() == (2,)


def test_a_query_right_after_enable_returns_is_captured_once(spark: Any, tmp_path: Path) -> None:
    """On a fresh session (Spark builds its streams on first use, on the start-up thread meanwhile)."""
    session = spark.newSession()
    store = tmp_path / "l.duckdb"
    _captured(session, store, tmp_path, "id + 1 AS right_after")
    edges = _edges(store)
    assert [(e[1], e[2]) for e in edges] == [("right_after", 1)], edges
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM queries").fetchone() == (1,)


def test_disable_right_after_enable_leaves_nothing(spark: Any, tmp_path: Path) -> None:
    """disable() before the start-up thread is done: no thread, no listener left, nothing written later."""
    session = spark.newSession()
    store = tmp_path / "l.duckdb"
    before = _query_listeners(session)
    handle = lineage_listener.enable(session, store=str(store))
    session.range(2).selectExpr("id AS kept").write.mode("overwrite").parquet(str(tmp_path / "a"))
    assert _query_listeners(session) == before + 1
    lineage_listener.disable(session)  # no exception
    assert _threads("lineage-listener-start") == [] and not handle.capture._thread.is_alive()
    assert _query_listeners(session) == before
    assert _stream_listeners(session) == 0
    session.range(2).selectExpr("id AS after_disable").write.mode("overwrite").parquet(str(tmp_path / "b"))
    session.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(60_000)
    edges = _edges(store)
    assert [(e[1], e[2]) for e in edges] == [("kept", 1)], edges


def test_an_enable_that_fails_leaves_no_listener(spark: Any, tmp_path: Path) -> None:
    """The listener is registered before the capture is built: when building it fails (an unknown
    option), enable() raises and unregisters it, so no listener is left keeping every callback."""
    session = spark.newSession()
    before = _query_listeners(session)
    with pytest.raises(TypeError):
        lineage_listener.enable(session, store=str(tmp_path / "l.duckdb"), no_such_option=1)
    assert _query_listeners(session) == before
    handle = lineage_listener.enable(session, store=str(tmp_path / "l.duckdb"))  # a later enable() works
    assert _query_listeners(session) == before + 1
    lineage_listener.disable(session)
    assert handle.capture is not None and _query_listeners(session) == before


class _OtherListener:
    """A user's own QueryExecutionListener in Python, as py4j users write one (no ``equals``)."""

    def onSuccess(self, funcName: str, qe: Any, durationNs: int) -> None:  # noqa: N802,N803 - Java names
        pass

    def onFailure(self, funcName: str, qe: Any, exception: Any) -> None:  # noqa: N802,N803
        pass

    class Java:
        implements = ["org.apache.spark.sql.util.QueryExecutionListener"]


def test_disable_removes_the_listener_behind_a_users_own(spark: Any, tmp_path: Path) -> None:
    """Spark finds the listener to remove by asking it ``equals`` of each one registered before it:
    with a user's Python listener there first, that question comes to capture's Python listener,
    which must answer it for disable() to remove it (a callback after disable() reaches nothing)."""
    from lineage_listener.capture.jvm import jvm_proxy

    session = spark.newSession()
    session._jsparkSession.listenerManager().register(jvm_proxy(session, _OtherListener()))
    before = _query_listeners(session)
    store = tmp_path / "l.duckdb"
    lineage_listener.enable(session, store=str(store))
    session.range(2).selectExpr("id AS kept").write.mode("overwrite").parquet(str(tmp_path / "a"))
    assert _query_listeners(session) == before + 1
    lineage_listener.disable(session)
    assert _query_listeners(session) == before
    session.range(2).selectExpr("id AS after_disable").write.mode("overwrite").parquet(str(tmp_path / "b"))
    session.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(60_000)
    assert [(e[1], e[2]) for e in _edges(store)] == [("kept", 1)]


def test_disable_while_the_streaming_listener_is_being_added_removes_it(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up thread adds the streaming listener after disable() began: it removes it itself."""
    from lineage_listener.capture import inprocess
    from lineage_listener.capture.reading import streams

    real_register = streams.register
    session = spark.newSession()

    def register_once_disable_began(jsession: Any, capture: Any) -> Any:
        handle = inprocess._handles.get(str(jsession.sessionUUID()))
        assert handle is None or handle.stopping.wait(60)  # disable() popped the handle, or began
        return real_register(jsession, capture)

    monkeypatch.setattr(streams, "register", register_once_disable_began)
    lineage_listener.enable(session, store=str(tmp_path / "l.duckdb"))
    lineage_listener.disable(session)
    assert _threads("lineage-listener-start") == []
    assert _stream_listeners(session) == 0


def test_a_failing_streaming_listener_costs_one_line_and_a_recorded_error(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    from lineage_listener.capture.reading import streams

    def broken_register(jsession: Any, capture: Any) -> Any:
        raise RuntimeError("no streams here\nsecond line of a Java trace")

    monkeypatch.setattr(streams, "register", broken_register)
    caplog.set_level(logging.WARNING, logger="lineage_listener")
    store = tmp_path / "l.duckdb"
    def start_up_done(handle: Any) -> None:
        assert handle.startup is not None
        handle.startup.join(60)

    _captured(spark, store, tmp_path, "id AS batch_goes_on", started=start_up_done)  # no exception
    said = [r.getMessage() for r in caplog.records if r.name.startswith("lineage_listener")]
    assert said == ["lineage-listener: streaming queries will not be captured: RuntimeError: no streams here"], said
    assert [e[1] for e in _edges(store)] == ["batch_goes_on"]
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT stage, error FROM capture_errors").fetchall() == [
            ("stream", "streaming queries will not be captured: RuntimeError: no streams here")]
