"""Copies, influence, masking and time windows on the retail pipeline (``tests/retail.py``), asked
through the Python API, the CLI, the REST API and the HTML export: the same answer everywhere."""
from __future__ import annotations

import csv
import io
import json
import re
import urllib.parse
import urllib.request
from datetime import timedelta

import pytest

from lineage_listener.cli import main as cli_main
from lineage_listener.cli.lineage_format import COPY_MEANS, to_json
from lineage_listener.query import open_store, payload
from lineage_listener.query.reports import impact
from tests.server_helpers import Server

WH = "spark_catalog.warehouse"


def jsonable(value):
    """What a JSON answer holds (times as ISO text), to compare Python with the CLI and REST."""
    return json.loads(to_json(value))


def cli_json(capsys, *args) -> dict:
    assert cli_main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def get(url: str):
    with urllib.request.urlopen(url, timeout=120) as r:
        body = r.read().decode()
    return json.loads(body) if r.headers.get_content_type() == "application/json" else body


@pytest.fixture(scope="module")
def server(retail):
    srv = Server(retail.store, token=None).start()
    yield srv
    srv.stop()


def email(retail) -> tuple[str, str]:
    return retail.raw("customers.csv"), "email"


def listed(report: dict) -> tuple[dict, dict]:
    return ({(d["dataset"], d["column"]): d["masking"] for d in report["downstream"]},
            {(d["dataset"], d["column"]): d["via"] for d in report["influenced"]})


def test_the_raw_email_is_copied_three_times_in_clear_once_masked_and_influences_the_rest(retail):
    report = impact(open_store(retail.store), *email(retail))
    copies, influenced = listed(report)
    assert copies == {(f"{WH}.customers_clean", "email"): "unmasked",
                      (f"{WH}.fact_order_lines", "email"): "unmasked",
                      (retail.export("partner_top_customers.csv"), "email"): "unmasked",
                      (retail.export("customer_emails_hashed"), "email_sha256"): "masked"}
    # joined on email, grouped by email: influenced, never "unmasked"
    for col in ("ssn_sha256", "phone_masked", "customer_id", "newsletter"):
        assert influenced[(f"{WH}.customers_masked", col)] == ["join"]
    for col in ("age", "customer_id", "ltv_eur", "orders"):
        assert influenced[(f"{WH}.customer_ltv", col)] == ["group_by"]
    # the partner export sorts and filters on the lifetime value grouped by email
    assert {"filter", "sort", "group_by"} <= set(influenced[(retail.export("partner_top_customers.csv"), "name")])
    assert not copies.keys() & influenced.keys()
    assert report["downstream"][0]["masking"] == "unmasked"          # the leaks come first
    partner = next(d for d in report["downstream"] if d["dataset"].endswith("partner_top_customers.csv"))
    assert partner["applications"] == ["retail_exports"]
    assert report["window"] == {"since": None, "until": None, "outside": None}


def test_a_join_key_has_no_copies_and_a_joined_column_one(retail):
    """The consents are joined on email into customers_masked: the key is copied nowhere, the flag once."""
    store = open_store(retail.store)
    copies, influenced = listed(impact(store, retail.raw("consents.csv"), "email"))
    assert copies == {}
    assert influenced == {(f"{WH}.customers_masked", c): ["join"]
                          for c in ("customer_id", "newsletter", "phone_masked", "ssn_sha256")}
    copies, _ = listed(impact(store, retail.raw("consents.csv"), "newsletter"))
    assert copies == {(f"{WH}.customers_masked", "newsletter"): "unmasked"}


def test_cli_json_python_rest_and_html_data_agree(retail, server, capsys, tmp_path):
    ds, col = email(retail)
    store = str(retail.store)
    since = retail.times["retail_marts"].started.isoformat()
    for window in ([], ["--since", since]):
        py = jsonable(impact(open_store(retail.store), ds, col, since=since if window else None))
        cli = cli_json(capsys, "impact", "--store", store, ds, col, "--format", "json", *window)
        q = urllib.parse.urlencode({"dataset": ds, "column": col, **({"since": since} if window else {})})
        rest = get(f"{server.url}/api/impact?{q}")
        assert cli == py == rest
        rows = list(csv.DictReader(io.StringIO(get(f"{server.url}/api/impact.csv?{q}"))))
        assert [(r["dataset"], r["column"], r["reach"], r["masking"], r["via"]) for r in rows] == \
            [(d["dataset"], d["column"], "copy", d["masking"], "") for d in py["downstream"]] + \
            [(d["dataset"], d["column"], "influenced", "", "; ".join(d["via"])) for d in py["influenced"]]
        # the graph payload: CLI downstream JSON, REST column lineage, the HTML export's data
        graph = cli_json(capsys, "downstream", "--store", store, ds, col, "--format", "json", *window)
        lq = urllib.parse.urlencode({"direction": "forward", **({"start": since} if window else {})})
        api = get(f"{server.url}/v3/namespaces/default/datasets/{urllib.parse.quote(ds, safe='')}/columns/"
                  f"{col}/lineage?{lq}")
        out = tmp_path / "lineage.html"
        assert cli_main(["html", "--store", store, ds, col, "--direction", "forward", "-o", str(out), *window]) == 0
        html = json.loads(re.search(r"window\.LINEAGE_STATIC = (.*?);</script>", out.read_text(), re.S)
                          .group(1).replace("<\\/", "</"))
        for key in ("nodes", "edges", "window", "start"):
            assert graph[key] == api[key] == html[key], key
        # ... and it says what impact says: copies written in the window, with their masking
        nodes = {(n["dataset"], n["column"]): n for n in api["nodes"]}
        assert {k: n["masking"] for k, n in nodes.items() if n["reach"] == "copy" and not n["before_window"]} \
            == listed(py)[0]
        assert {k for k, n in nodes.items() if n["reach"] == "influenced" and not n["before_window"]} \
            == set(listed(py)[1])


def test_a_window_starting_after_the_ingest_keeps_what_later_jobs_copied(retail, server):
    """Job 1 wrote customers_clean.email before the window; jobs 2-4 copied it inside the window."""
    ds, col = email(retail)
    store = open_store(retail.store)
    since = retail.times["retail_fact"].started
    copies, influenced = listed(impact(store, ds, col, since=since))
    assert copies == {(f"{WH}.fact_order_lines", "email"): "unmasked",
                      (retail.export("partner_top_customers.csv"), "email"): "unmasked",
                      (retail.export("customer_emails_hashed"), "email_sha256"): "masked"}
    assert (f"{WH}.customers_masked", "ssn_sha256") in influenced
    g = store.downstream(ds, col, since=since)
    clean = (f"{WH}.customers_clean", "email")
    assert g.nodes[clean]["before_window"] and g.nodes[clean]["reach"] == "copy"
    assert g.edges[(ds, col), clean]["before_window"]
    # a window between marts and exports: only the exports were written in it
    since = retail.times["retail_exports"].started
    report = impact(store, ds, col, since=since)
    copies, influenced = listed(report)
    assert copies == {(retail.export("partner_top_customers.csv"), "email"): "unmasked",
                      (retail.export("customer_emails_hashed"), "email_sha256"): "masked"}
    assert all(d.startswith(retail.export("")) for d, _ in influenced)
    g = store.downstream(ds, col, since=since)
    assert g.nodes[(f"{WH}.customer_ltv", "customer_id")]["before_window"]
    assert (f"{WH}.customers_masked", "ssn_sha256") not in g     # written before, and copied nowhere since
    assert "all before" in report["window"]["outside"]["message"]
    q = urllib.parse.urlencode({"dataset": ds, "column": col, "since": since.isoformat()})
    assert listed(get(f"{server.url}/api/impact?{q}")) == (copies, influenced)


def test_upstream_in_a_window_shows_the_sources_of_kept_paths(retail, capsys):
    partner = (retail.export("partner_top_customers.csv"), "email")
    store = open_store(retail.store)
    g = store.upstream(*partner, since=retail.times["retail_exports"].started)
    assert g.nodes[(retail.raw("customers.csv"), "email")]["reach"] == "copy"
    clean = g.nodes[(f"{WH}.customers_clean", "email")]
    assert clean["reach"] == "copy" and clean["before_window"]
    assert g.nodes[(f"{WH}.fact_order_lines", "email")]["reach"] == "influenced"   # grouped by, then joined on
    assert g.nodes[(retail.raw("orders.csv"), "customer_id")]["reach"] == "influenced"
    # the partner export was written by the last job: a window ending before it has nothing, and says so
    until = retail.times["retail_marts"].ended
    g = store.upstream(*partner, until=until)
    assert g.number_of_edges() == 0
    assert g.graph["window"]["outside"]["message"].endswith(f"all after {until:%Y-%m-%d %H:%M:%S}")
    # the lifetime value was written by job 3: a window from job 4 on has no write into it
    since = retail.times["retail_exports"].started
    assert cli_main(["upstream", "--store", str(retail.store), f"{WH}.customer_ltv", "ltv_eur",
                     "--since", since.isoformat()]) == 0
    out = capsys.readouterr().out
    assert "comes from no captured column" in out and f"all before {since:%Y-%m-%d %H:%M:%S}" in out


def test_a_window_that_leaves_nothing_says_what_is_outside(retail, capsys, tmp_path):
    ds, col = email(retail)
    last = retail.times["retail_exports"].ended
    report = impact(open_store(retail.store), ds, col, since=last + timedelta(seconds=1))
    assert report["downstream"] == [] and report["influenced"] == []
    outside = report["window"]["outside"]
    assert outside["captures"] >= 12 and outside["last"] < last
    assert outside["message"].startswith(f"{outside['captures']} captures of this column's downstream lineage, "
                                         "from ") and ", all before " in outside["message"]  # when they were made
    assert cli_main(["impact", "--store", str(retail.store), ds, col, "--since", "1s"]) == 0
    text = capsys.readouterr().out
    assert COPY_MEANS in text and "Copies: 0" in text and "captures of this column's downstream lineage" in text
    assert cli_main(["downstream", "--store", str(retail.store), ds, col, "--since", "1s"]) == 0
    text = capsys.readouterr().out
    assert "feeds no captured column" in text and "all before" in text
    assert cli_main(["html", "--store", str(retail.store), ds, col, "--direction", "forward", "--since", "1s",
                     "-o", str(tmp_path / "empty.html")]) == 0
    assert "1 columns, 0 edges; outside the window: " in capsys.readouterr().err
    data = payload.column_lineage(open_store(retail.store), ds, col, "both", since=last + timedelta(seconds=1))
    assert data["window"]["outside"]["message"].startswith(f"{data['window']['outside']['captures']} captures "
                                                           "of this column's lineage, from ")
    assert ", all before " in data["window"]["outside"]["message"]


def test_the_impact_text_lists_copies_and_influenced_columns_apart(retail, capsys):
    assert cli_main(["impact", "--store", str(retail.store), *email(retail)]) == 0
    text = capsys.readouterr().out
    copies = text[text.index("Copies: 4 (3 unmasked, 0 partly masked, 1 masked on every path)"):
                  text.index("Influenced by it, not copies: 12")]
    rows = [line.split() for line in copies.splitlines()[3:-2]]
    assert [(r[1].rsplit("/", 1)[-1], r[2], r[3]) for r in rows] == [
        ("spark_catalog.warehouse.customers_clean", "email", "unmasked"),
        ("partner_top_customers.csv", "email", "unmasked"),
        ("spark_catalog.warehouse.fact_order_lines", "email", "unmasked"),
        ("customer_emails_hashed", "email_sha256", "masked")]
    influenced = text[text.index("Influenced by it, not copies"):]
    assert re.search(r"customers_masked\s+ssn_sha256\s+join\s", influenced)
