"""Preview and capture agree edge for edge on the project's SQL: every SQL statement of the capture
tests (accuracy, plan shapes, expressions, write targets), the fixture shapes, and every TPC-DS query.

Each statement is captured for real (run by Spark with capture on) into one store, in order; then
the CLI previews the same statements, as one file, against that store (in a process of its own,
with tables stood in from the store's recorded schemas) and each statement's edges are compared:
target and source dataset and column, transform, kind, expression, masking.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests import tpcds
from tests.fixtures.capture_plans import SETUP, SHAPES

HERE = Path(__file__).parent
#: Test modules whose ``spark.sql("...")`` and ``lineage.run("...")`` statements are the corpus.
SOURCES = ("test_accuracy.py", "test_plan_shapes.py", "test_expressions.py", "test_write_targets.py",
           "test_failed_writes.py", "test_retarget.py")
DATABASE = "preview_corpus"
APP = "lineage-listener-tests"  # the shared session's name: in-memory data is named after it


def _constants(fn: ast.AST) -> dict[str, str]:
    """Names bound to a string constant in a function (an f-string may use them)."""
    return {t.id: node.value.value for node in ast.walk(fn) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


def _text(arg: ast.AST, names: dict[str, str]) -> str | None:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr):  # f"... {rollup}": only from constants of the same function
        parts = []
        for v in arg.values:
            if isinstance(v, ast.Constant):
                parts.append(v.value)
            elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and v.value.id in names:
                parts.append(names[v.value.id])
            else:
                return None
        return "".join(parts)
    return None


def test_sql() -> list[str]:
    """The SQL text of every ``spark.sql(...)`` and ``lineage.run(...)`` of :data:`SOURCES`, in file order."""
    out = []
    for name in SOURCES:
        tree = ast.parse((HERE / name).read_text(encoding="utf-8"))
        for fn in sorted((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), key=lambda n: n.lineno):
            names = _constants(fn)
            calls = sorted((c for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                            and c.func.attr in ("sql", "run") and c.args),
                           key=lambda c: (c.lineno, c.col_offset))
            for call in calls:
                text = _text(call.args[0], names)
                if text and text.split(None, 1)[0].upper() in ("SELECT", "WITH", "INSERT", "CREATE", "DROP"):
                    out.append(text)
    return list(dict.fromkeys(out))


test_sql.__test__ = False  # a helper, not a test


def _edges(store: Path, query_ids: list[str]) -> set[tuple]:
    if not query_ids:  # no query captured (a USE, a CREATE DATABASE): the store may not exist yet
        return set()
    with duckdb.connect(str(store), read_only=True) as con:
        return set(con.execute("""SELECT target_dataset, target_column, source_dataset, source_column, transform,
                                         kind, expression, masking
                                  FROM column_lineage WHERE query_id IN (SELECT unnest(?))""", [query_ids]).fetchall())


def _query_ids(store: Path) -> set[str]:
    if not store.exists():
        return set()
    with duckdb.connect(str(store), read_only=True) as con:
        return {r[0] for r in con.execute("SELECT query_id FROM queries").fetchall()}


@pytest.fixture(scope="module")
def corpus(spark, people, depts, tmp_path_factory):
    """``(store, [(sql, captured edges, from TPC-DS)...], skipped)``: each statement run with capture on, in
    order (statements that fail are left out: their own tests expect them to fail, or need a fixture)."""
    import lineage_listener

    out = tmp_path_factory.mktemp("preview_corpus")
    store = out / "lineage.duckdb"
    has_tpcds = bool(tpcds.queries())
    if has_tpcds:
        tpcds.create_tables(spark)
    statements = [(sql, False) for sql in (f"CREATE DATABASE IF NOT EXISTS {DATABASE}", f"USE {DATABASE}", *SETUP,
                                           *(s for s in SHAPES.values() if isinstance(s, str)), *test_sql())]
    if has_tpcds:
        statements.append((f"USE {tpcds.DATABASE}", True))
        statements += [(s.text, True) for q in tpcds.queries().values() for s in _split(q)]
    handle = lineage_listener.enable(spark, store=str(store))
    done, skipped = [], []
    try:
        for sql, from_tpcds in statements:
            assert handle.flush(60)
            before = _query_ids(store)
            try:
                spark.sql(sql).collect()
            except Exception as exc:  # noqa: BLE001 - a statement its own test expects to fail, or needs a fixture
                skipped.append((sql, str(exc).splitlines()[0][:120]))
                continue
            assert handle.flush(120), "capture did not flush"
            done.append((sql, _edges(store, sorted(_query_ids(store) - before)), from_tpcds))
    finally:
        spark.sql("USE default")
        lineage_listener.disable(spark)
    return store, done, skipped


def _split(sql: str) -> list:
    from lineage_listener.preview.sqlfile import statements

    return statements(sql)


def test_preview_agrees_with_capture_edge_for_edge(corpus, people, depts, tmp_path):
    store, done, skipped = corpus
    sql_file = tmp_path / "corpus.sql"
    sql_file.write_text(";\n".join(sql for sql, _, _ in done) + ";\n", encoding="utf-8")
    schema = tmp_path / "views.sql"  # the tests' temporary views over files, as Spark DDL
    schema.write_text(f"CREATE TEMPORARY VIEW people USING parquet OPTIONS (path '{people}');\n"
                      f"CREATE TEMPORARY VIEW depts USING csv OPTIONS (path '{depts}', header 'true');\n")
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", "preview", "--store", str(store), str(sql_file),
                           "--schema", str(schema), "--app", APP, "--format", "json"],
                          capture_output=True, text=True, timeout=1800, cwd=HERE.parent)
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    previewed: dict[int, set[tuple]] = {}
    for e in body["edges"]:
        previewed.setdefault(e["statement"], set()).add(
            (e["target_dataset"], e["target_column"], e["source_dataset"], e["source_column"], e["transform"],
             e["kind"], e["expression"], e["masking"]))
    assert len(body["statements"]) == len(done)
    differ = []
    for i, (sql, captured, _) in enumerate(done, 1):
        got = previewed.get(i, set())
        if got != captured:
            differ.append(f"{sql[:100]!r}: only captured {sorted(captured - got, key=str)[:3]}, "
                          f"only previewed {sorted(got - captured, key=str)[:3]}")
    assert differ == [], "\n".join(differ)
    # the corpus is the project's SQL, not a handful: most of the tests' statements have lineage to compare
    assert sum(1 for _, captured, t in done if captured and not t) >= 60, skipped
    if tpcds.queries():
        assert sum(1 for _, captured, t in done if captured and t) >= 90, skipped
        tables = {d["dataset"] for d in body["defined"] if d["from"] == "store"}
        assert f"spark_catalog.{tpcds.DATABASE}.store_sales" in tables  # stood in from the recorded schema
