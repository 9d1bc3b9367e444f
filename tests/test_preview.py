"""``lineage-listener preview``: the CLI in subprocesses against a store captured from real Spark jobs.

The store knows a catalog table with nested and array columns, a CTAS of it, and a parquet path
that was read, then deleted (so the preview must stand in for it). Bad input is one line and
exit 2; a good file gives the edges, the diff against the captured lineage and its policy violations.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.server_helpers import ROOT

DB = "pv_shop"


@pytest.fixture(scope="module")
def shop(spark, tmp_path_factory):
    """A store of real captures: ``pv_shop.orders``, ``pv_shop.report`` (a CTAS) and a parquet path."""
    import lineage_listener

    out = tmp_path_factory.mktemp("preview")
    store, events, titles = out / "lineage.duckdb", out / "events", out / "titles"
    spark.range(3).selectExpr("id", "id * 10 AS x").write.parquet(str(events))
    spark.sql("SELECT * FROM VALUES ('a', 'Alpha') AS t(dept, title)").write.option("header", True).csv(str(titles))
    handle = lineage_listener.enable(spark, store=str(store))
    try:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
        spark.sql(f"CREATE TABLE {DB}.orders (id INT, customer STRING, email STRING, amount DECIMAL(9,2), "
                  "addr STRUCT<city: STRING, zip: STRING>, tags ARRAY<INT>) USING parquet")
        spark.sql(f"INSERT INTO {DB}.orders VALUES (1, 'ann', 'a@x.org', 12.50, named_struct('city', 'Oslo', "
                  "'zip', '0150'), array(1, 2))")
        spark.sql(f"CREATE TABLE {DB}.report USING parquet AS SELECT customer, sum(amount) AS total "
                  f"FROM {DB}.orders GROUP BY customer")
        spark.sql(f"SELECT id, x FROM parquet.`{events}`").collect()
        spark.read.option("header", True).csv(str(titles)).select("title").collect()
        assert handle.flush(60)
    finally:
        lineage_listener.disable(spark)
    for gone in (events, titles):  # gone where the preview runs: it stands in from the recorded schema
        shutil.rmtree(gone)
    return {"store": store, "events": events, "titles": titles, "out": out,
            "warehouse": Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lineage_listener", *args], capture_output=True, text=True,
                          timeout=900, cwd=ROOT)


def one_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stdout == ""
    return proc.stderr


def sql_file(tmp_path: Path, text: str, name: str = "job.sql") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_an_empty_file_a_policy_or_a_missing_file_fail_before_spark(shop, tmp_path):
    store = str(shop["store"])
    started = time.monotonic()
    assert "holds no SQL statement" in one_line(cli("preview", "--store", store, sql_file(tmp_path, "")))
    assert "holds no SQL statement" in one_line(
        cli("preview", "--store", store, sql_file(tmp_path, "-- only a comment\n/* and another */;\n")))
    good = sql_file(tmp_path, f"SELECT id FROM {DB}.orders", "good.sql")
    err = one_line(cli("preview", "--store", store, good, "--policy", sql_file(tmp_path, "rules: []", "p.yaml")))
    assert "p.yaml: rules must be a non-empty list" in err
    assert "cannot read SQL file" in one_line(cli("preview", "--store", store, str(tmp_path / "missing.sql")))
    assert "no store at" in one_line(cli("preview", "--store", str(tmp_path / "none.duckdb"), good))
    assert "--conf 'x': write it KEY=VALUE" in one_line(cli("preview", "--store", store, good, "--conf", "x"))
    assert time.monotonic() - started < 120, "none of these starts Spark"


def test_an_unknown_table_is_one_line_naming_the_closest(shop, tmp_path):
    err = one_line(cli("preview", "--store", str(shop["store"]),
                       sql_file(tmp_path, f"SELECT 1 AS one;\n\nSELECT customer FROM {DB}.ordrs")))
    assert f"statement 2 (line 3): unknown table spark_catalog.{DB}.ordrs" in err
    assert f"closest known: spark_catalog.{DB}.orders" in err and "--schema" in err


def test_bad_ddl_in_schema_is_one_line(shop, tmp_path):
    good = sql_file(tmp_path, f"SELECT id FROM {DB}.orders")
    err = one_line(cli("preview", "--store", str(shop["store"]), good, "--schema",
                       sql_file(tmp_path, "CREATE TABLE extra (a INT) USING parquet;\n"
                                          "CREATE TABLE broken (a INTEGR) USING parquet", "ddl.sql")))
    assert err.startswith("lineage-listener: --schema statement 2 (line 2)") and "INTEGR" in err


def test_preview_edges_diff_and_what_it_leaves_alone(shop, tmp_path):
    events, titles = shop["events"], shop["titles"]
    path = sql_file(tmp_path, f"""
        -- the report, refactored: a filter and another total
        INSERT OVERWRITE TABLE {DB}.report
        SELECT customer, sum(amount) * 100 AS total FROM {DB}.orders WHERE amount > 0 GROUP BY customer;
        CREATE TABLE {DB}.contacts USING parquet AS
        SELECT id, sha2(email, 256) AS email_hash, addr.city AS town, tags[0] AS first_tag FROM {DB}.orders;
        SELECT email_hash FROM {DB}.contacts;
        SELECT id, x FROM parquet.`{events}`;
        CREATE TEMPORARY VIEW big AS SELECT * FROM {DB}.orders WHERE amount > 10;
        SELECT upper(customer) AS who FROM big;
        ANALYZE TABLE {DB}.orders COMPUTE STATISTICS;
        CREATE TEMPORARY VIEW titles USING csv OPTIONS (path '{titles}', header 'true');
        SELECT upper(title) AS t FROM titles;
        SET spark.hadoop.fs.s3a.secret.key=s3cr3t-value;
        """)
    proc = cli("preview", "--store", str(shop["store"]), path, "--diff", "--format", "json", "--exit-code")
    assert proc.returncode == 1, proc.stderr  # --diff found changes
    assert proc.stderr == ""
    body = json.loads(proc.stdout)
    assert set(body) == {"edges", "diff", "violations", "statements", "defined", "seconds"}
    assert body["violations"] == []
    assert [(s["statement"], s["status"]) for s in body["statements"]] == [
        (1, "lineage"), (2, "lineage"), (3, "lineage"), (4, "lineage"), (5, "ran"), (6, "lineage"), (7, "skipped"),
        (8, "ran"), (9, "lineage"), (10, "ran")]
    assert "s3cr3t-value" not in proc.stdout  # the statements are echoed as capture stores SQL: redacted
    keys = {"target_dataset", "target_column", "source_dataset", "source_column", "transform", "kind",
            "expression", "masking", "statement", "write_mode"}
    assert all(set(e) == keys for e in body["edges"])
    edges = {(e["statement"], e["target_dataset"], e["target_column"], e["source_dataset"], e["source_column"],
              e["transform"], e["kind"], e["masking"]) for e in body["edges"]}
    orders, report, contacts = (f"spark_catalog.{DB}.{t}" for t in ("orders", "report", "contacts"))
    assert {(1, report, "total", orders, "amount", "aggregate", "direct", False),
            (1, report, None, orders, "amount", "filter", "indirect", False),
            (2, contacts, "email_hash", orders, "email", "derived", "direct", True),
            (2, contacts, "town", orders, "addr.city", "rename", "direct", False),
            (3, None, "email_hash", contacts, "email_hash", "identity", "direct", False),
            (4, None, "x", f"file:{events}", "x", "identity", "direct", False),
            (6, None, "who", orders, "customer", "derived", "direct", False),
            (9, None, "t", f"file:{titles}", "title", "derived", "direct", False)} <= edges
    assert {e[0] for e in edges if e[3] == orders and e[4] == "tags"} == {2}  # an array stood in as array<string>
    stood_in = {d["dataset"]: d for d in body["defined"]}
    assert stood_in[orders]["from"] == "store" and stood_in[f"file:{events}"]["as"] == "path"
    assert stood_in[contacts]["from"] == "statement"  # the CTAS's own table, for statement 3
    assert body["seconds"]["spark_start"] > 0 and body["seconds"]["total"] >= body["seconds"]["analysis"]
    d = body["diff"]
    assert set(d) == {"added", "removed", "changed", "labels", "old", "new"}
    [changed] = d["changed"]
    assert changed["target"] == {"dataset": report, "column": "total"} and changed["fields"] == ["expression"]
    assert [r["expression"] for r in changed["before"]] == ["sum(amount)"]
    [after] = [r["expression"] for r in changed["after"]]
    assert "sum(amount)" in after and "100" in after  # as Spark writes decimal arithmetic
    assert {(i["item"], i.get("dataset")) for i in d["added"] if i["item"] == "dataset"} == {("dataset", contacts)}
    assert any(i["item"] == "edge" and i["transform"] == "filter" and i["target"]["dataset"] == report
               for i in d["added"])
    assert d["removed"] == []
    # nothing ran against real data: the deleted path is still gone, no table was created here
    assert not events.exists() and not titles.exists()
    assert not (shop["warehouse"] / f"{DB}.db" / "contacts").exists()


def test_text_output_and_in_memory_data_named_after_the_application(shop, tmp_path):
    path = sql_file(tmp_path, f"SELECT c.customer, v.label FROM {DB}.orders c "
                              "JOIN VALUES ('ann', 'gold') AS v(customer, label) ON c.customer = v.customer")
    proc = cli("preview", "--store", str(shop["store"]), path, "--app", "nightly")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"Preview of {path}: 1 statements, 1 with lineage,")
    assert "Spark session" in lines[0]
    assert any(line.split()[:1] == ["1"] and "local:nightly/LocalRelation/" in line and "[label]" in line
               for line in lines), proc.stdout
    assert f"Inputs defined from the store's recorded schemas: spark_catalog.{DB}.orders" in proc.stdout


def test_a_policy_checks_the_previewed_lineage_before_it_runs(shop, tmp_path):
    """With ``--policy``, the previewed edges are checked as if captured now: a CTAS that would copy a
    labelled column in clear into a forbidden place is a violation (exit 1 with --exit-code), the
    same column hashed on its way is not."""
    store = tmp_path / "lineage.duckdb"
    shutil.copy(shop["store"], store)  # labels are written into the store: not into the module's one
    label = subprocess.run([sys.executable, "-m", "lineage_listener", "classify", "set", "--store", str(store),
                            f"spark_catalog.{DB}.orders", "email", "pii.email"], capture_output=True, text=True,
                           cwd=ROOT, timeout=300)
    assert label.returncode == 0, label.stderr
    policy = sql_file(tmp_path, "rules:\n  - name: no-clear-pii-in-exports\n    kind: forbid\n    label: pii\n"
                      f"    datasets: [\"spark_catalog.{DB}.export_*\"]\n", "policy.yaml")
    path = sql_file(tmp_path, f"""
        CREATE TABLE {DB}.export_clear USING parquet AS SELECT id, email FROM {DB}.orders;
        CREATE TABLE {DB}.export_hashed USING parquet AS SELECT id, sha2(email, 256) AS email FROM {DB}.orders;
        """)
    proc = cli("preview", "--store", str(store), path, "--policy", policy, "--format", "json", "--exit-code")
    assert proc.returncode == 1, proc.stderr
    found = json.loads(proc.stdout)["violations"]
    assert {(v["rule"], v["dataset"], v["column"]) for v in found} == {
        ("no-clear-pii-in-exports", f"spark_catalog.{DB}.export_clear", "email")}
    with_text = cli("preview", "--store", str(store), path, "--policy", policy)
    assert with_text.returncode == 0 and "FAIL no-clear-pii-in-exports (forbid pii): 1 violation" in with_text.stdout


def test_sql_text_masked_shows_no_literal_value(shop, tmp_path):
    path = sql_file(tmp_path, f"INSERT OVERWRITE TABLE {DB}.report SELECT customer, sum(amount) * 4242 AS total "
                              f"FROM {DB}.orders WHERE email <> 'secret@example.com' GROUP BY customer")
    proc = cli("preview", "--store", str(shop["store"]), path, "--sql-text", "masked", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "secret@example.com" not in proc.stdout and "4242" not in proc.stdout
    body = json.loads(proc.stdout)
    [statement] = body["statements"]
    assert statement["sql"].endswith("WHERE email <> ? GROUP BY customer")
    expressions = {e["expression"] for e in body["edges"]}
    assert "NOT email = ?" in expressions and any("* ?" in (x or "") for x in expressions), expressions
