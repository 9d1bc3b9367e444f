"""Secrets never reach the store, its WAL, the spool or the logs.

Real Spark runs a table of hostile actions (user-info in write paths and SQL text,
secret options on csv and JDBC reads and writes, connection strings) while another
process holds the store, so every batch is spooled first; then the store is released
and the spool ingested. The raw bytes of every spool file, the DuckDB file and its
WAL are grepped for each secret.
"""
from __future__ import annotations

import contextlib
import io
import logging
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

import lineage_listener
from lineage_listener.redact import is_secret_key, logger, redact_options, redact_text, redact_url
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import row_of
from lineage_listener.store.writer import StoreWriter

#: Every secret is unique, so a find names the input that leaked.
S = {name: f"S3cr3t-{name}-zq" for name in (
    "userinfo_write", "csv_password", "csv_sas", "conn_password", "azure_key", "csv_sig", "sql_uri",
    "insert_uri", "jdbc_url", "jdbc_prop", "jdbc_read", "ctas_option", "write_token")}

DERBY = "org.apache.derby.iapi.jdbc.AutoloadedDriver"


def _hostile_actions(spark, tmp: Path) -> None:
    """Run every hostile input through Spark; failures are expected for some of them."""
    plain = tmp / "plain"
    spark.range(3).write.mode("overwrite").csv(str(plain))
    attempts = [
        # Spark rejects the path ("Wrong FS"): the failed query's error and target hold it.
        lambda: spark.range(3).write.mode("overwrite").parquet(
            f"file://bob:{S['userinfo_write']}@localhost{tmp}/out"),
        lambda: spark.read.option("password", S["csv_password"]).option("sas", S["csv_sas"])
        .option("connectionString", f"Server=db1;User Id=u;Password={S['conn_password']};")
        .option("fs.azure.account.key.acct.dfs.core.windows.net", S["azure_key"])
        .option("sig", S["csv_sig"]).option("header", "false").csv(str(plain)).collect(),
        lambda: spark.sql(f"SELECT 'jdbc:postgresql://bob:{S['sql_uri']}@db/x' AS u, id FROM range(2)").collect(),
        lambda: spark.sql(f"CREATE TABLE hostile_t USING parquet OPTIONS (password '{S['ctas_option']}') "
                          "AS SELECT id FROM range(2)"),
        lambda: spark.sql(f"INSERT INTO hostile_t SELECT id FROM range(2) "
                          f"WHERE 'x' != 'file://u:{S['insert_uri']}@h/x'"),
        lambda: spark.range(3).write.mode("overwrite").jdbc(
            f"jdbc:derby:memory:hostile;create=true;user=bob;password={S['jdbc_url']}", "t",
            properties={"user": "bob", "password": S["jdbc_prop"], "driver": DERBY}),
        lambda: spark.read.format("jdbc").option("url", "jdbc:derby:memory:hostile;user=bob")
        .option("dbtable", "t").option("password", S["jdbc_read"]).option("driver", DERBY).load().collect(),
        lambda: spark.range(2).write.mode("overwrite").option("token", S["write_token"]).csv(str(tmp / "tok")),
    ]
    for attempt in attempts:
        try:
            attempt()
        except Exception:  # noqa: BLE001 - a rejected query is part of the table
            pass


def _leaks(path: Path) -> list[str]:
    data = path.read_bytes()
    return [name for name, secret in S.items() if secret.encode() in data]


@pytest.fixture
def held_store(tmp_path):
    """A store another process holds open until ``release`` is created."""
    store = tmp_path / "hostile.duckdb"
    duckdb.connect(str(store)).close()
    ready, release = tmp_path / "ready", tmp_path / "release"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import duckdb, pathlib, time
        con = duckdb.connect({str(store)!r})
        pathlib.Path({str(ready)!r}).write_text("x")
        while not pathlib.Path({str(release)!r}).exists():
            time.sleep(0.05)
    """)])
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    yield store, release, holder
    release.write_text("x")
    holder.wait(30)


def test_hostile_inputs_leave_no_secret_in_spool_store_wal_or_log(spark, tmp_path, held_store, caplog):
    store, release, holder = held_store
    caplog.set_level(logging.DEBUG, logger="lineage_listener")
    handle = lineage_listener.enable(spark, store=str(store), lock_timeout=0.3)
    try:
        _hostile_actions(spark, tmp_path)
        assert handle.flush(120) is False  # the store is held: everything went to the spool
        spooled = StoreWriter(store).spooled()
        assert spooled
        for f in spooled:
            assert _leaks(f) == [], f
        spool_text = " ".join(f.read_text() for f in spooled)
        assert f"file://localhost{tmp_path}/out" in spool_text  # the redacted form is what was kept
        release.write_text("x")
        assert holder.wait(30) == 0
        assert handle.flush(120) is True  # released: the spool is ingested
    finally:
        lineage_listener.disable(spark)
        spark.sql("DROP TABLE IF EXISTS hostile_t")
    assert StoreWriter(store).spooled() == []
    for f in [store, store.with_name(store.name + ".wal")]:
        if f.exists():
            assert _leaks(f) == [], f
    assert f"file://localhost{tmp_path}/out".encode() in store.read_bytes()  # raw grep sees stored text
    assert [n for n, s in S.items() if s in caplog.text] == []

    with duckdb.connect(str(store), read_only=True) as con:
        failed = con.execute("SELECT error, target_dataset FROM queries WHERE status = 'failed'").fetchall()
        sql_texts = {r[0] for r in con.execute("SELECT sql_text FROM queries WHERE sql_text IS NOT NULL").fetchall()}
        props = dict(con.execute("SELECT dataset, properties FROM datasets").fetchall())
        names = set(props)
    assert ("java.lang.IllegalArgumentException: Wrong FS: "
            f"file://***@localhost{tmp_path}/out, expected: file:///", f"file://localhost{tmp_path}/out") in failed
    assert "SELECT 'jdbc:postgresql://***@db/x' AS u, id FROM range(2)" in sql_texts
    assert "INSERT INTO hostile_t SELECT id FROM range(2) WHERE 'x' != 'file://***@h/x'" in sql_texts
    csv = props[f"file:{tmp_path}/plain"]
    for key in ('"password": "***"', '"sas": "***"', '"connectionstring": "***"', '"sig": "***"',
                '"fs.azure.account.key.acct.dfs.core.windows.net": "***"', '"header": "false"'):
        assert key in csv
    assert "jdbc:derby:memory:hostile/t" in names
    assert '"password": "***"' in props["spark_catalog.default.hostile_t"]
    assert '"token": "***"' in props[f"file:{tmp_path}/tok"]


@pytest.mark.parametrize("text, redacted", [
    ("Wrong FS: file://bob:PW@localhost/tmp/x, expected: file:///",
     "Wrong FS: file://***@localhost/tmp/x, expected: file:///"),
    ("s3a://AKIA:ab/cd+ef@bucket/x", "s3a://***@bucket/x"),          # an AWS secret key holds '/'
    ("file://bob:p@ss@host/x", "file://***@host/x"),                 # an unescaped '@' in the password
    ("wasbs://c@acct.blob.core.windows.net/x?sv=1&sig=PW&se=2",     # the container is a name, the SAS a secret
     "wasbs://c@acct.blob.core.windows.net/x?sv=1&sig=***&se=2"),
    ("abfss://c:PW@acct.dfs.core.windows.net/x", "abfss://***@acct.dfs.core.windows.net/x"),
    ("Server=db1;User Id=u;Password=PW;", "Server=db1;User Id=u;Password=***;"),
    ("Data Source=x;Pwd=PW", "Data Source=x;Pwd=***"),
    ("AccountName=a;AccountKey=PW==;EndpointSuffix=core.windows.net",
     "AccountName=a;AccountKey=***;EndpointSuffix=core.windows.net"),
    ("BlobEndpoint=https://a/;SharedAccessSignature=PW", "BlobEndpoint=https://a/;SharedAccessSignature=***"),
    ("Map(password -> PW, user -> u)", "Map(password -> ***, user -> u)"),
    ('{"sas": "PW", "header": "true"}', '{"sas": "***", "header": "true"}'),
    ("OPTIONS (password 'PW', 'token' = 'PW')", "OPTIONS (password '***', 'token' = '***')"),
    # not secrets: ports, '@' in a path, e-mail addresses, expressions over a column named token
    ("hdfs://nn:8020/data/x@2024", "hdfs://nn:8020/data/x@2024"),
    ("http://host:8080/a@b", "http://host:8080/a@b"),
    ("ann@example.org", "ann@example.org"),
    ("CASE WHEN (token = x) THEN 1 END", "CASE WHEN (token = x) THEN 1 END"),
    ("monkey=1;keyspace=k", "monkey=1;keyspace=k"),
])
def test_redact_text_table(text, redacted):
    assert redact_text(text) == redacted
    assert "PW" not in redact_text(text) or "PW" not in text


def test_names_drop_user_info_and_options_drop_values():
    assert redact_url("file://bob:PW@localhost/tmp/x") == "file://localhost/tmp/x"
    assert redact_url("s3a://AKIA:ab/cd@bucket/x") == "s3a://bucket/x"
    opts = redact_options({"sas": "PW", "sig": "PW", "fs.azure.account.key.a.b": "PW", "fs.s3a.secret.key": "PW",
                           "connectionString": "PW", "credential": "PW", "dbtable": "t", "sep": ";",
                           "url": "jdbc:sqlserver://h;password=PW", "note": "Server=h;Password=PW"})
    assert "PW" not in str(opts)
    assert opts["dbtable"] == "t" and opts["sep"] == ";"
    assert opts["url"] == "jdbc:sqlserver://h;password=***" and opts["note"] == "Server=h;Password=***"
    assert not any(is_secret_key(k) for k in ("path", "header", "dbtable", "partitionColumn", "keyspace"))


def test_batches_redact_rows_on_entry_and_from_old_spool_files():
    b = Batch()
    b.add(row_of("capture_errors", ("2026-01-01 00:00:00", "r", "q", "walk", "cannot open s3a://u:PW@b/x")))
    assert b.rows["capture_errors"][0][4] == "cannot open s3a://***@b/x"
    old = '{"queries": [["q", "r", "save", null, "SELECT 1 -- jdbc:mysql://u:PW@h/d", "failed", ' \
          '"Password=PW", null, "2026-01-01 00:00:00", null]]}'
    assert "PW" not in str(Batch.from_json(old).rows["queries"])



def test_rows_are_redacted_every_time_short_or_long_repeated_or_not():
    """A text met again is redacted as the first time (remembered), and so is one too long to remember."""
    short = "x > 1 AND url = 'jdbc:mysql://u:PW@h/d'"
    long = "a = 1 AND " * 500 + "token=PW"
    assert len(long) > 4096
    for _ in range(3):
        for text in (short, long):
            b = Batch()
            b.add(row_of("column_lineage", ("q", "r", "t", "c", "s", "c", "filter", "indirect", text, False, None)))
            assert "PW" not in str(b.rows), text[-40:]
    b = Batch()
    b.add(row_of("column_lineage", ("q", "r", "t", "c", "s", "c", "filter", "indirect", "a = 'PW'", False, None)))
    assert b.rows["column_lineage"][0].expression == "a = 'PW'"  # nothing secret-looking: kept


@contextlib.contextmanager
def written(log: logging.Logger, formatter: logging.Formatter | None = None):
    """What ``log`` writes to a handler of its own with a standard formatter (or ``formatter``). Not
    caplog: PySpark code run by earlier tests may have put its JSON formatter on pytest's handler."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter or logging.Formatter("%(levelname)s %(name)s %(message)s"))
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def test_library_log_lines_are_redacted():
    log = logger("lineage_listener.test_secrets")
    with written(log) as out:
        log.warning("could not read %s: %s", "file://bob:PW@h/x", "Password=PW;")
        try:
            raise ValueError("boom at s3a://u:PW@b/x")
        except ValueError:
            log.exception("failed")
    text = out.getvalue()
    assert "PW" not in text
    assert "file://***@h/x" in text and "s3a://***@b/x" in text


def test_a_logger_made_while_pyspark_swapped_the_logger_class_stays_ours():
    """PySparkLogger.getLogger sets the global logger class for a moment (no lock): a logger of ours
    created then must not become PySpark's, whose JSON handler prints the raw exception."""
    pyspark_logger = pytest.importorskip("pyspark.logger")
    before = logging.getLoggerClass()
    logging.setLoggerClass(pyspark_logger.PySparkLogger)  # what another thread does inside getLogger
    try:
        log = logger("lineage_listener.test_secrets_swapped")
    finally:
        logging.setLoggerClass(before)
    assert type(log) is logging.Logger and not log.handlers
    with written(log) as plain, written(log, pyspark_logger.logger.JSONFormatter()) as as_json:
        try:
            raise ValueError("boom at s3a://u:PW@b/x")
        except ValueError:
            log.exception("failed")
    assert "PW" not in plain.getvalue() and "s3a://***@b/x" in plain.getvalue()
    assert "PW" not in as_json.getvalue() and '"msg": "failed"' in as_json.getvalue()  # reads exc_info: none
