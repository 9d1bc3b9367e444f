"""Graph mechanics of the query API on small stores built with SQL inserts."""
from __future__ import annotations

import json
from datetime import datetime

import pytest

from lineage_listener.cli import main as cli_main
from lineage_listener.query import open_store
from lineage_listener.query.reports import impact, provenance
from lineage_listener.timewindow import parse_time
from lineage_listener.store.batch import Batch
from lineage_listener.store.rows import row_of
from lineage_listener.store.connection import StoreError, open_writable
from lineage_listener.store.upsert import commit_batch

T = datetime(2025, 3, 1, 12, 0)


def edge(q, tds, tcol, sds, scol, transform="identity", kind="direct", expr=None, masking=False, at=T):
    return (q, q.split(":")[0], tds, tcol, sds, scol, transform, kind, expr or scol, masking, at)


def add_edges(con, rows) -> None:
    """``column_lineage`` rows through the store's write path (the view cannot take inserts)."""
    batch = Batch()
    for r in rows:
        batch.add(row_of("column_lineage", tuple(v.isoformat(sep=" ") if isinstance(v, datetime) else v for v in r)))
    commit_batch(con, batch)


@pytest.fixture()
def store_path(tmp_path):
    """raw csv -> orders (job 1, CTAS) -> by path -> clean (job 2) -> report (job 3), plus
    a masked copy, a filter key, a collect read, and a job overwriting its input."""
    path = tmp_path / "lineage.duckdb"
    con = open_writable(path)
    con.executemany("INSERT INTO runs (run_id, app_id, app_name, spark_version, spark_user, master, started_at, ended_at) VALUES (?, ?, ?, '4.3.0', 'me', 'local', ?, ?)", [
        ("app1", "app1", "ingest", T, T), ("app2", "app2", "clean", T, T), ("app3", "app3", "report", T, T),
        ("app4", "app4", "export", T, T)])
    con.executemany("INSERT INTO datasets VALUES (?, ?, 'parquet', ?, '{}', ?, ?)", [
        ("spark_catalog.shop.orders", "table", "file:/wh/shop.db/orders", T, T),
        ("spark_catalog.shop.clean", "table", "file:/wh/shop.db/clean", T, T),
        ("spark_catalog.shop.report", "table", "file:/wh/shop.db/report", T, T),
        ("file:/raw/orders.csv", "path", "file:/raw/orders.csv", T, T)])
    cols = {"file:/raw/orders.csv": ["id", "amount", "email"],
            "spark_catalog.shop.orders": ["id", "amount", "email"],
            "spark_catalog.shop.clean": ["id", "amount", "email_hash"],
            "spark_catalog.shop.report": ["total", "n"]}
    con.executemany("INSERT INTO dataset_columns (dataset, column_name, data_type, nullable, first_seen, last_seen) "
                    "VALUES (?, ?, 'string', true, ?, ?)",
                    [(d, c, T, T) for d, cs in cols.items() for c in cs])
    add_edges(con, [
        # job 1: CTAS from the csv
        edge("app1:1", "spark_catalog.shop.orders", "id", "file:/raw/orders.csv", "id"),
        edge("app1:1", "spark_catalog.shop.orders", "amount", "file:/raw/orders.csv", "amount",
             "derived", expr="cast(amount as double)"),
        edge("app1:1", "spark_catalog.shop.orders", "email", "file:/raw/orders.csv", "email"),
        # job 2 reads orders BY PATH (with a trailing slash), filters on amount, masks email
        edge("app2:1", "spark_catalog.shop.clean", "id", "file:/wh/shop.db/orders/", "id"),
        edge("app2:1", "spark_catalog.shop.clean", "amount", "file:/wh/shop.db/orders/", "amount"),
        edge("app2:1", "spark_catalog.shop.clean", "email_hash", "file:/wh/shop.db/orders/", "email",
             "derived", expr="sha2(email, 256)", masking=True),
        edge("app2:1", "spark_catalog.shop.clean", None, "file:/wh/shop.db/orders/", "amount",
             "filter", "indirect", expr="amount > 0"),
        # job 3 aggregates clean into report, on a later day
        edge("app3:1", "spark_catalog.shop.report", "total", "spark_catalog.shop.clean", "amount",
             "aggregate", expr="sum(amount) * 2", at=datetime(2025, 3, 5)),
        edge("app3:1", "spark_catalog.shop.report", "n", "spark_catalog.shop.clean", "id",
             "aggregate", expr="count(id)", masking=True, at=datetime(2025, 3, 5)),
        # job 3 overwrites its own input afterwards: a cycle clean.amount <- clean.amount
        edge("app3:2", "spark_catalog.shop.clean", "amount", "spark_catalog.shop.clean", "amount",
             at=datetime(2025, 3, 5)),
        # job 4 collects emails to the driver: an access record
        edge("app4:1", None, None, "spark_catalog.shop.orders", "email", at=datetime(2025, 3, 6)),
    ])
    con.close()
    return path


def test_upstream_crosses_jobs_and_path_aliases(store_path):
    g = open_store(store_path).upstream("spark_catalog.shop.report", "total")
    raw = ("file:/raw/orders.csv", "amount")
    orders = ("spark_catalog.shop.orders", "amount")
    clean = ("spark_catalog.shop.clean", "amount")
    report = ("spark_catalog.shop.report", "total")
    # the path read of orders is folded into the table name, so the chain reaches the csv
    assert ("file:/wh/shop.db/orders", "amount") not in g
    assert g.has_edge(orders, clean) and g.has_edge(raw, orders) and g.has_edge(clean, report)
    assert g.edges[clean, report]["transform"] == "aggregate"
    assert g.edges[clean, report]["expression"] == "sum(amount) * 2"
    assert g.nodes[raw]["depth"] == 3
    # the filter key (null target_column) applies to clean.amount too: same source, two records
    assert {r["transform"] for r in g.edges[orders, clean]["records"]} == {"identity", "filter"}
    assert g.edges[orders, clean]["kind"] == "direct"          # direct preferred as the summary
    # the cycle clean.amount -> clean.amount is kept but terminates
    assert g.has_edge(clean, clean)


def test_depth_and_direct_only(store_path):
    store = open_store(store_path)
    g1 = store.upstream("spark_catalog.shop.report", "total", depth=1)
    assert set(g1.nodes) == {("spark_catalog.shop.report", "total"), ("spark_catalog.shop.clean", "amount")}
    g = store.upstream("spark_catalog.shop.clean", "id", direct_only=False)
    assert g.has_edge(("spark_catalog.shop.orders", "amount"), ("spark_catalog.shop.clean", "id"))
    g = store.upstream("spark_catalog.shop.clean", "id", direct_only=True)
    assert not g.has_edge(("spark_catalog.shop.orders", "amount"), ("spark_catalog.shop.clean", "id"))


def test_downstream_expands_dataset_level_edges_and_skips_reads(store_path):
    g = open_store(store_path).downstream("file:/wh/shop.db/orders", "amount")   # user gives the path
    assert g.graph["start"] == ("file:/wh/shop.db/orders", "amount")  # named as asked, found as the table
    # the filter on amount reaches every column of clean, then report
    for col in ("id", "amount", "email_hash"):
        assert g.has_edge(("file:/wh/shop.db/orders", "amount"), ("spark_catalog.shop.clean", col))
    assert ("spark_catalog.shop.report", "n") in g
    # the driver read is an access record, not a node
    g2 = open_store(store_path).downstream("spark_catalog.shop.orders", "email")
    assert all(n[0] is not None for n in g2.nodes)
    assert set(g2.nodes) == {("spark_catalog.shop.orders", "email"), ("spark_catalog.shop.clean", "email_hash")}


def test_time_window(store_path):
    store = open_store(store_path)
    g = store.upstream("spark_catalog.shop.report", "total", until="2025-03-04")
    assert g.number_of_edges() == 0            # job 3 ran on March 5th
    assert g.graph["window"]["outside"]["message"] == (   # when it was made, not only how many
        "1 capture of this column's upstream lineage, at 2025-03-05 00:00:00, all after 2025-03-04 23:59:59")
    g = store.upstream("spark_catalog.shop.report", "total", since="2025-03-05", until="2025-03-05")
    assert set(g.predecessors(("spark_catalog.shop.report", "total"))) == {("spark_catalog.shop.clean", "amount")}
    # the write into report.total lies in the window: the older hops upstream of it are kept, marked
    orders, clean = ("spark_catalog.shop.orders", "amount"), ("spark_catalog.shop.clean", "amount")
    assert g.has_edge(orders, clean) and g.edges[orders, clean]["before_window"]
    assert g.nodes[orders]["before_window"] and g.nodes[orders]["reach"] == "copy"
    assert not g.nodes[clean]["before_window"]   # job 3 also rewrote clean.amount on March 5th
    assert g.graph["window"]["outside"] is None
    assert parse_time("7d", now=datetime(2025, 3, 8)) == datetime(2025, 3, 1)
    with pytest.raises(ValueError):
        store.upstream("spark_catalog.shop.report", "total", since="2025-03-06", until="2025-03-01")


def test_unknown_names_and_missing_store(store_path, tmp_path):
    store = open_store(store_path)
    with pytest.raises(StoreError, match="spark_catalog.shop.report"):
        store.upstream("spark_catalog.shop.reprot", "total")
    with pytest.raises(StoreError, match="total"):
        store.upstream("spark_catalog.shop.report", "totl")
    with pytest.raises(StoreError, match="no store"):
        open_store(tmp_path / "missing.duckdb")


def test_impact_reports_reads_masking_and_apps(store_path):
    r = impact(open_store(store_path), "spark_catalog.shop.orders", "email", since="2025-03-01", until="2025-03-31")
    reads = {(x["query_id"], x["target_dataset"]) for x in r["reads"]}
    assert ("app4:1", None) in reads and ("app2:1", "spark_catalog.shop.clean") in reads
    [hashed] = [d for d in r["downstream"] if d["column"] == "email_hash"]
    assert hashed["masking"] == "masked" and hashed["applications"] == ["clean"]
    r = impact(open_store(store_path), "spark_catalog.shop.orders", "amount")
    status = {(d["dataset"], d["column"]): d["masking"] for d in r["downstream"]}
    assert status[("spark_catalog.shop.report", "total")] == "unmasked"
    # report.n counts clean.id: amount reaches it only through job 2's filter, so it is influenced, not a copy
    assert ("spark_catalog.shop.report", "n") not in status
    via = {(d["dataset"], d["column"]): d["via"] for d in r["influenced"]}
    assert via[("spark_catalog.shop.report", "n")] == ["filter"]
    assert via[("spark_catalog.shop.clean", "email_hash")] == ["filter"]


def test_provenance_finds_origin_and_chain(store_path):
    p = provenance(open_store(store_path), "spark_catalog.shop.report", "total")
    assert [(o["dataset"], o["column"]) for o in p["origins"]] == [("file:/raw/orders.csv", "amount")]
    [path] = p["origins"][0]["paths"]
    assert [s["transform"] for s in path] == ["derived", "identity", "aggregate"]
    assert [s["app_name"] for s in path] == ["ingest", "clean", "report"]
    assert {r["app_name"] for r in p["runs"]} == {"ingest", "clean", "report"}


@pytest.mark.parametrize("fmt", ["table", "json", "dot", "mermaid"])
def test_cli_formats(store_path, capsys, fmt):
    rc = cli_main(["upstream", "--store", str(store_path), "spark_catalog.shop.report", "total", "--format", fmt])
    out = capsys.readouterr().out
    assert rc == 0
    if fmt == "json":
        data = json.loads(out)
        assert {"dataset": "file:/raw/orders.csv", "column": "amount"} in [e["source"] for e in data["edges"]]
    elif fmt == "table":
        assert "path 1:" in out and "sum(amount) * 2" in out and "file:/raw/orders.csv [amount]" in out
    elif fmt == "dot":
        assert out.startswith("digraph") and "->" in out
    else:
        assert out.startswith("flowchart LR") and "|aggregate|" in out


def test_cli_reports_and_errors(store_path, tmp_path, capsys):
    s = str(store_path)
    assert cli_main(["impact", "--store", s, "spark_catalog.shop.orders", "email", "--since", "2025-03-01",
                     "--until", "2025-03-31"]) == 0
    out = capsys.readouterr().out
    assert "driver (read only)" in out and "masked" in out
    assert cli_main(["provenance", "--store", s, "spark_catalog.shop.report", "total", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["origins"][0]["column"] == "amount"
    assert cli_main(["downstream", "--store", s, "spark_catalog.shop.orders", "emial"]) == 2
    assert "email" in capsys.readouterr().err
    assert cli_main(["upstream", "--store", str(tmp_path / "nope.duckdb"), "a", "b"]) == 2
    assert cli_main(["upstream", "--store", s, "spark_catalog.shop.report", "total", "--since", "soon"]) == 2


def test_cli_stops_quietly_when_its_reader_goes_away(store_path):
    """``lineage-listener sql ... | head -1``: the closed pipe ends the command without an error line.
    The answer is far larger than a pipe's buffer, so the command is still writing when the reader leaves."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "lineage_listener", "sql", "--store", str(store_path),
                             "SELECT range AS n FROM range(200000)"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().split() == [b"n"]
    proc.stdout.close()  # as `head -1` does after its line
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141 and err == "", err
