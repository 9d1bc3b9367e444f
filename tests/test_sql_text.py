"""``spark.lineage.sqlText``: what capture keeps of SQL text. The same statements captured ``full``,
``masked`` and ``none`` (real Spark, real DuckDB files, a real HTTP endpoint for live OpenLineage):
masked and none leave no literal value anywhere in the store or in what was sent, none leaves no
statement text; the literals of Spark SQL (escapes, raw and binary strings, typed literals) are
read by the tokenizer as Spark reads them.
"""
from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import duckdb
import pytest

import lineage_listener
from lineage_listener.capture import textmode
from lineage_listener.lineage.literals import mask, mask_message

#: (Spark SQL, masked): every kind of literal Spark SQL has, and what is not a value.
CORPUS = [
    ("SELECT * FROM t WHERE email = 'alice@example.com'", "SELECT * FROM t WHERE email = ?"),
    (r"SELECT 'it\'s', 'a\\' 'b' FROM t", "SELECT ?, ? FROM t"),  # escapes; 'a\\' 'b' is one string to Spark
    ('SELECT "double \\" quoted" AS x', "SELECT ? AS x"),
    (r"SELECT r'C:\new\table' AS p", "SELECT ? AS p"),
    ("SELECT X'1F2E', x'00'", "SELECT ?, ?"),
    ("SELECT DATE '2024-01-31', TIMESTAMP '2024-01-31 10:00:00', TIMESTAMP_NTZ '2024-01-31 10:00'",
     "SELECT ?, ?, ?"),
    ("SELECT ts + INTERVAL '1' DAY, ts - INTERVAL 3 HOURS 2 MINUTES, INTERVAL '1-2' YEAR TO MONTH",
     "SELECT ts + ?, ts - ?, ?"),
    ("SELECT 42, -7, 3.14, 1e-3, 10L, 2S, 1Y, 3.0D, 1.5BD", "SELECT ?, -?, ?, ?, ?, ?, ?, ?, ?"),
    ("SELECT CAST(a AS DECIMAL(10, 2)), CAST(b AS VARCHAR(20)), CAST(c AS CHAR(3))",
     "SELECT CAST(a AS DECIMAL(10, 2)), CAST(b AS VARCHAR(20)), CAST(c AS CHAR(3))"),
    ("SELECT a FROM t -- owner: 'bob'\n/* pin 1234 */ WHERE b IN (1, 2)", "SELECT a FROM t\nWHERE b IN (?, ?)"),
    ("SELECT /*+ REPARTITION(8) */ `col ''x'` FROM t WHERE flag = TRUE AND n IS NULL",
     "SELECT /*+ REPARTITION(?) */ `col ''x'` FROM t WHERE flag = TRUE AND n IS NULL"),
    ("INSERT INTO t VALUES (1, 'ann', DATE '2020-01-01'), (2, 'bob', NULL)",
     "INSERT INTO t VALUES (?, ?, ?), (?, ?, NULL)"),
]


@pytest.mark.parametrize("sql, masked", CORPUS)
def test_every_kind_of_literal_is_masked(sql: str, masked: str) -> None:
    assert mask(sql) == masked


def test_what_cannot_be_tokenized_is_never_kept_as_it_was() -> None:
    assert mask("SELECT 'no end") is None
    assert textmode.keep(textmode.MASKED).statement("SELECT 'no end") is None
    said = mask_message("[INVALID] can't parse 'alice@example.com' at 12")
    assert "alice" not in said and "12" not in said and said.startswith("[INVALID] can")


#: Literal values of the statements below: none may be kept by ``masked`` or ``none``.
SECRETS = ("alice@example.com", "VIP-7731", "1.0825", "2031-02-03", "4242", "Mallory", "bob-secret-99")
STATEMENTS = [
    "CREATE TABLE {db}.vip USING parquet AS SELECT id, upper(name) AS name, "
    "CASE WHEN email = 'alice@example.com' THEN 'VIP-7731' ELSE 'plain' END AS tier, amount * 1.0825 AS gross, "
    "DATE '2031-02-03' AS since FROM people WHERE amount < 4242 AND name <> 'Mallory'",
    "SELECT id, CAST('bob-secret-99' AS INT) + id AS broken FROM people",  # fails: the value is in Spark's error
]


class Receiver(BaseHTTPRequestHandler):
    """An OpenLineage endpoint that keeps the bodies it is sent."""

    bodies: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        Receiver.bodies.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api/v1/lineage"
    server.shutdown()


def texts(store: Path) -> str:
    """Every text value of every table of ``store``, one per line."""
    with duckdb.connect(str(store), read_only=True) as con:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return "\n".join(str(v) for t in tables for row in con.execute(f"SELECT * FROM {t}").fetchall()
                         for v in row if isinstance(v, str))


@pytest.fixture(scope="module")
def captured(spark: Any, people: str, endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The statements captured once per mode, each into a store made under a permissive umask, with
    live OpenLineage emission: the store and the events sent, by mode."""
    out: dict[str, Any] = {}
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    old_umask = os.umask(0)
    try:
        for mode in textmode.MODES:
            db = f"sqltext_{mode}"
            store = tmp_path_factory.mktemp(mode) / "lineage.duckdb"
            Receiver.bodies.clear()
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
            handle = lineage_listener.enable(spark, store=str(store), sql_text=mode, openlineage_url=endpoint)
            try:
                for statement in STATEMENTS:
                    try:
                        spark.sql(statement.format(db=db)).collect()
                    except Exception:  # noqa: BLE001 - the failing statement: its error is what is checked
                        pass
                assert handle.flush(60)
            finally:
                lineage_listener.disable(spark)
            out[mode] = {"store": store, "events": list(Receiver.bodies)}
    finally:
        os.umask(old_umask)
        spark.conf.set("spark.sql.ansi.enabled", ansi)
    return out


def queries(store: Path) -> list[tuple]:
    """(command, status, sql_text, error) of every query."""
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute("SELECT command, status, sql_text, error FROM queries ORDER BY captured_at").fetchall()


def test_full_keeps_the_literals_masked_and_none_keep_none(captured: dict[str, Any]) -> None:
    for mode, found in captured.items():
        stored, sent = texts(found["store"]), "\n".join(found["events"])
        assert found["events"], f"{mode}: nothing was sent"
        kept = {s for s in SECRETS if s in stored}
        if mode == textmode.FULL:  # the check below can fail: in full, the values are there
            assert {"alice@example.com", "VIP-7731", "Mallory", "bob-secret-99"} <= kept, kept
            assert "alice@example.com" in sent
        else:
            assert kept == set(), f"{mode} kept {kept}"
            assert {s for s in SECRETS if s in sent} == set(), f"{mode} sent literal values"
        assert stat.S_IMODE(os.stat(found["store"]).st_mode) == 0o600, mode  # made under umask 0


def test_what_each_mode_stores_for_the_same_statement(captured: dict[str, Any]) -> None:
    by_mode = {m: queries(captured[m]["store"]) for m in textmode.MODES}
    write = {m: next(q for q in by_mode[m] if q[0].startswith("CreateDataSourceTableAsSelect")) for m in by_mode}
    assert "'alice@example.com'" in write["full"][2]
    assert write["masked"][2] == ("CREATE TABLE sqltext_masked.vip USING parquet AS SELECT id, upper(name) AS name, "
                                  "CASE WHEN email = ? THEN ? ELSE ? END AS tier, amount * ? AS gross, "
                                  "? AS since FROM people WHERE amount < ? AND name <> ?")
    assert write["none"][2] is None
    failure = {m: next(q for q in by_mode[m] if q[1] == "failed") for m in by_mode}
    assert "bob-secret-99" in failure["full"][3]
    assert "CAST_INVALID_INPUT" in failure["masked"][3] and "?" in failure["masked"][3]
    assert "CAST_INVALID_INPUT" in failure["none"][3] and "== SQL" not in failure["none"][3]
    assert failure["none"][2] is None and failure["masked"][2].startswith("SELECT id, CAST(? AS INT)")
    with duckdb.connect(str(captured["masked"]["store"]), read_only=True) as con:
        expressions = {r[0] for r in con.execute("SELECT expression FROM column_lineage").fetchall()}
    assert "CASE WHEN email = ? THEN ? ELSE ? END" in expressions and "amount * ?" in expressions, expressions
    events = [json.loads(b) for b in captured["masked"]["events"]]
    facets = [e["job"]["facets"]["sql"]["query"] for e in events if "sql" in e.get("job", {}).get("facets", {})]
    assert facets and all("?" in f for f in facets)


def test_a_bad_mode_is_refused_in_code_and_kept_least_from_conf(spark: Any, tmp_path: Path, caplog) -> None:
    with pytest.raises(ValueError, match="spark.lineage.sqlText must be one of full, masked, none, not 'mask'"):
        lineage_listener.enable(spark, store=str(tmp_path / "x.duckdb"), sql_text="mask")
    assert textmode.from_conf("masked ") == "masked" and textmode.from_conf(None) == "full"
    assert textmode.from_conf("hidden") == "none" and "storing no SQL text" in caplog.text
