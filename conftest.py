"""Shared fixtures: one real local[2] SparkSession per test run, and a capture helper.

Tests use real Spark and a real DuckDB file; nothing here mocks Spark.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.jvm_cds import submit_opts

os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", os.sys.executable)
#: Every Spark application the tests start (the session, zero-code jobs, the scripts tests run) runs
#: short, different queries: the JIT's first tier and the serial collector take about half the CPU of
#: the default tiers and G1 there. Each also maps Spark's classes from the virtualenv's archive when
#: ``make test`` made one (tests/jvm_cds.py). Faster, the same runs; your own SPARK_SUBMIT_OPTS wins.
SUITE_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
if "SPARK_SUBMIT_OPTS" not in os.environ:
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, [SUITE_JVM, submit_opts()]))


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


#: Doctests of optional integrations and of the docs site's tools are collected only where their extra is
#: installed (``make test-spark35`` installs ``test-core``: no DataHub, no docs site).
OPTIONAL = (("datahub", "lineage_listener/datahub"), ("openlineage", "lineage_listener/openlineage"),
            ("fastapi", "lineage_listener/server"), ("mkdocs", "docs/hooks.py"), ("griffe", "docs/griffe_doctests.py"))
collect_ignore = [str(path) for module, place in OPTIONAL if _missing(module)
                  for path in ([Path(__file__).parent / place] if place.endswith(".py")
                               else sorted((Path(__file__).parent / place).rglob("*.py")))]


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    warehouse = tmp_path_factory.mktemp("warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("lineage-listener-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.extraJavaOptions", "-Dderby.system.home=" + str(warehouse))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@dataclass(frozen=True)
class EdgeRow:
    target_dataset: str | None
    target_column: str | None
    source_dataset: str
    source_column: str
    transform: str
    kind: str
    expression: str | None
    masking: bool
    guess: bool = False


class Captured:
    """What the store holds for the queries one test action produced."""

    def __init__(self, store: Path, query_ids: list[str], con: duckdb.DuckDBPyConnection | None = None) -> None:
        """``con``: a read-only connection to ``store`` already open (else one is opened here)."""
        self.store = store
        self.query_ids = query_ids
        self.queries: list[dict[str, Any]] = []
        self.edges: list[EdgeRow] = []
        if con is not None:
            self._read(con)
        elif store.exists():
            with duckdb.connect(str(store), read_only=True) as con:
                self._read(con)

    def _read(self, con: duckdb.DuckDBPyConnection) -> None:
        self.queries = [dict(zip([d[0] for d in con.description], r)) for r in
                        con.execute("SELECT * FROM queries WHERE query_id IN (SELECT unnest(?)) "
                                    "ORDER BY captured_at", [self.query_ids]).fetchall()]
        rows = con.execute(
            "SELECT target_dataset, target_column, source_dataset, source_column, transform, kind, expression, "
            "masking, guess FROM column_lineage WHERE query_id IN (SELECT unnest(?))", [self.query_ids]).fetchall()
        self.edges = [EdgeRow(*r) for r in rows]

    def simple(self, kind: str | None = None) -> set[tuple[str | None, str, str]]:
        """``{(target_column, source_column, transform)}``, optionally only direct/indirect edges."""
        return {(e.target_column, e.source_column, e.transform) for e in self.edges if kind in (None, e.kind)}

    def edge(self, target_column: str | None, source_column: str, transform: str | None = None) -> EdgeRow:
        found = [e for e in self.edges if e.target_column == target_column and e.source_column == source_column
                 and transform in (None, e.transform)]
        assert found, f"no edge {target_column} <- {source_column} ({transform}); have {sorted(self.simple())}"
        return found[0]


class LineageHarness:
    """Enable capture into a fresh store, run an action, return what was captured."""

    def __init__(self, spark: Any, store: Path) -> None:
        import lineage_listener

        self.spark = spark
        self.store = store
        self.handle = lineage_listener.enable(spark, store=str(store))

    def _query_ids(self) -> list[str]:
        if not self.store.exists():
            return []
        with duckdb.connect(str(self.store), read_only=True) as con:
            return self._ids(con)

    @staticmethod
    def _ids(con: duckdb.DuckDBPyConnection) -> list[str]:
        return [r[0] for r in con.execute("SELECT query_id FROM queries").fetchall()]

    def run(self, action: str | Callable[[], Any]) -> Captured:
        """Run SQL (collected) or a callable; return the queries it added to the store."""
        assert self.handle.flush(60)
        before = set(self._query_ids())
        if isinstance(action, str):
            self.spark.sql(action).collect()
        else:
            action()
        assert self.handle.flush(60), "capture did not flush"
        if not self.store.exists():
            return Captured(self.store, [])
        with duckdb.connect(str(self.store), read_only=True) as con:  # the ids and their rows over one connection
            return Captured(self.store, [q for q in self._ids(con) if q not in before], con)


@pytest.fixture
def lineage(spark: Any, tmp_path: Path) -> Iterator[LineageHarness]:
    import lineage_listener
    from pyspark.sql.session import _monkey_patch_RDD

    # PySpark points RDD.toDF at the newest SparkSession constructed (each one patches it): a test that
    # made another session (newSession()) would leave toDF building DataFrames in a session not captured.
    _monkey_patch_RDD(spark)
    harness = LineageHarness(spark, tmp_path / "lineage.duckdb")
    yield harness
    lineage_listener.disable(spark)


@pytest.fixture(scope="session")
def people(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A parquet dataset with flat, nested and array columns, registered as temp view ``people``."""
    path = tmp_path_factory.mktemp("data") / "people"
    spark.sql("""
        SELECT id, name, amount, dept, email,
               named_struct('city', city, 'zip', zip) AS address, array(1, 2) AS tags
        FROM VALUES (1, 'ann', 10.0D, 'a', 'ann@x', 'Oslo', '0150'),
                    (2, 'bob', 200.0D, 'b', 'bob@x', 'Rome', '00100'),
                    (3, 'cid', 30.0D, 'a', NULL, 'Lima', '15001')
             AS t(id, name, amount, dept, email, city, zip)
    """).write.mode("overwrite").parquet(str(path))
    spark.read.parquet(str(path)).createOrReplaceTempView("people")
    return "file:" + str(path)


@pytest.fixture(scope="session")
def depts(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A CSV dataset ``depts(dept, title)`` registered as temp view ``depts``."""
    path = tmp_path_factory.mktemp("data") / "depts"
    spark.sql("SELECT * FROM VALUES ('a', 'Alpha'), ('b', 'Beta') AS t(dept, title)") \
        .write.mode("overwrite").option("header", "true").csv(str(path))
    spark.read.option("header", "true").csv(str(path)).createOrReplaceTempView("depts")
    return "file:" + str(path)


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.fixture
def java_exceptions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Java exceptions py4j brings back while the test runs (PySpark converts each with tens of
    round trips more), as their first lines."""
    from py4j import protocol

    seen: list[str] = []
    real = protocol.Py4JJavaError.__init__

    def made(self: Any, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        seen.append((str(self).strip().splitlines() or ["?"])[0])
    monkeypatch.setattr(protocol.Py4JJavaError, "__init__", made)
    return seen


@pytest.fixture(scope="session")
def demo_store(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store filled by the demo pipeline (``examples/sample_job.py``) run in this session."""
    import importlib.util

    import lineage_listener

    spec = importlib.util.spec_from_file_location("sample_job", Path(__file__).parent / "examples" / "sample_job.py")
    sample_job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sample_job)
    out = tmp_path_factory.mktemp("demo")
    store = out / "lineage.duckdb"
    handle = lineage_listener.enable(spark, store=str(store))
    try:
        sample_job.pipeline(spark, out)
        assert handle.flush(120)
    finally:
        lineage_listener.disable(spark)
    return store


@dataclass(frozen=True)
class Retail:
    """The four-job retail pipeline of ``tests/retail.py``, run once: its folder, store and job times."""

    root: Path
    store: Path
    times: dict[str, Any]   # job name -> tests.retail.JobTimes (naive UTC)

    def raw(self, name: str) -> str:
        return f"file:{self.root / 'raw' / name}"

    def export(self, name: str) -> str:
        return f"file:{self.root / 'exports' / name}"


@pytest.fixture(scope="session")
def retail(tmp_path_factory: pytest.TempPathFactory) -> Retail:
    """The retail pipeline (four real applications under zero-code capture, ~70 s) captured into a store,
    shared by every test of the session that asks for it."""
    from tests.retail import run_pipeline

    root = tmp_path_factory.mktemp("retail")
    store = root / "lineage.duckdb"
    return Retail(root, store, run_pipeline(root, store))


@pytest.fixture(scope="session")
def hive_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Hive-enabled application of ``tests/hive_app.py``, run once: its folder holds ``hive.duckdb``,
    ``multi.duckdb`` and ``separate.duckdb``."""
    from tests import hive_app

    return hive_app.run(tmp_path_factory.mktemp("hive"))


@pytest.fixture(scope="session")
def access_store(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small warehouse of the access tests (``tests/access_pipeline.py``: tables and paths a marts
    reader may and may not read, SQL literals on both sides, two streams) captured into a store, once."""
    import lineage_listener
    from tests.access_pipeline import pipeline

    out = tmp_path_factory.mktemp("access")
    handle = lineage_listener.enable(spark, store=str(out / "lineage.duckdb"))
    try:
        pipeline(spark, out)
        assert handle.flush(120)
    finally:
        lineage_listener.disable(spark)
    return out / "lineage.duckdb"
