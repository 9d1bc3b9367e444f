"""Policies and labels judge the data as it is now: a write that replaces a dataset makes the edges
of earlier writes into it history; appends, MERGE / UPDATE / DELETE and partition overwrites keep
them (docs/reference/semantics.md, "Current state"). Each store is written through the store's
write path: ``raw.email`` (declared ``pii.email``) -> ``clean.email`` -> ``export.email``, one
query a day, each with its write mode."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from lineage_listener.govern import labelstore
from lineage_listener.govern.answers import column_labels
from lineage_listener.govern.checks import check_store
from lineage_listener.govern.policy import PolicyError, parse
from lineage_listener.query import open_store
from lineage_listener.store.rows import EdgeRow, QueryRow
from lineage_listener.store.writer import StoreWriter

ROOT = Path(__file__).resolve().parents[1]
RAW, CLEAN, EXPORT = "file:/data/raw/customers.csv", "spark_catalog.shop.clean", "file:/data/exports/partner.csv"
POLICY = parse({"rules": [{"name": "no-clear-pii-in-exports", "kind": "forbid", "label": "pii",
                           "datasets": ["file:/**/exports/**"]}]}, "policy.yml")

CLEAR = ("identity", False)
MASKED = ("derived", True)


def at(day: int) -> datetime:
    return datetime(2026, 3, 1) + timedelta(days=day - 1, hours=6)


def store_of(tmp_path: Path, writes: list[tuple[int, str, str, tuple[str, bool], str | None]]) -> Path:
    """One query per write ``(day, source, target, (transform, masking), write_mode)``, the column email."""
    batch = labelstore.set_batch([(RAW, "email", "pii.email", True)], "test")
    for day, source, target, (transform, masking), mode in writes:
        q, run = f"app-{day}-{target}:1", f"app-{day}"
        when = at(day).isoformat(sep=" ")
        batch.add(QueryRow(query_id=q, run_id=run, action="save", command="InsertIntoHadoopFsRelationCommand",
                           sql_text=None, status="succeeded", error=None, duration_ms=5, captured_at=when,
                           target_dataset=target, write_mode=mode))
        batch.add(EdgeRow(query_id=q, run_id=run, target_dataset=target, target_column="email", source_dataset=source,
                          source_column="email", transform=transform, kind="direct",
                          expression="sha2(email, 256)" if masking else "email", masking=masking, captured_at=when))
    path = tmp_path / "lineage.duckdb"
    assert StoreWriter(path).write(batch)
    return path


def export_violations(path: Path, **kwargs) -> list[tuple[str, str]]:
    report = check_store(open_store(path), POLICY, **kwargs)
    return [(v["dataset"], v["column"]) for v in report["violations"]]


def export_labels(path: Path, **kwargs) -> set[str]:
    answer = column_labels(open_store(path), EXPORT, "email", **kwargs)
    return {x["label"] for x in answer["columns"][0]["labels"]}


def test_the_fix_in_the_job_clears_the_check_and_the_past_stays_askable(tmp_path):
    """The export wrote the email in clear, then (overwriting) its sha2: it holds no clear email now."""
    path = store_of(tmp_path, [(1, RAW, CLEAN, CLEAR, "replace"), (2, CLEAN, EXPORT, CLEAR, "replace"),
                               (3, CLEAN, EXPORT, MASKED, "replace")])
    assert export_violations(path) == []
    assert export_labels(path) == set()
    assert export_violations(path, history=True) == [(EXPORT, "email")]
    assert export_violations(path, since=at(2).isoformat(), until=at(2).isoformat()) == [(EXPORT, "email")]
    assert export_labels(path, history=True) == {"pii.email"}
    # lineage questions answer over time, and mark what the replacing write made history
    g = open_store(path).upstream(EXPORT, "email")
    data = g.edges[(CLEAN, "email"), (EXPORT, "email")]
    assert {r["transform"] for r in data["records"]} == {"identity", "derived"}
    assert data["history"] is None and data["replaced"] == ["identity"]   # the sha2 edge is there now
    clear = open_store(path).upstream(EXPORT, "email", until=at(2).isoformat())
    assert clear.edges[(CLEAN, "email"), (EXPORT, "email")]["history"] is None   # as of day 2, still there


def test_a_replaced_edge_alone_is_marked_history(tmp_path):
    path = store_of(tmp_path, [(1, RAW, CLEAN, CLEAR, "replace"), (2, CLEAN, EXPORT, CLEAR, "replace"),
                               (3, RAW, EXPORT, MASKED, "replace")])
    g = open_store(path).upstream(EXPORT, "email")
    assert g.edges[(CLEAN, "email"), (EXPORT, "email")]["history"] == {"query_id": f"app-3-{EXPORT}:1",
                                                                       "captured_at": at(3)}
    assert g.edges[(RAW, "email"), (EXPORT, "email")]["history"] is None


@pytest.mark.parametrize("mode", ["append", "modify", "partitions", None])
def test_a_write_that_does_not_replace_keeps_the_clear_copy(tmp_path, mode):
    """An append (a MERGE, a partition overwrite, a write of unknown mode) adds to what is there: the
    clear rows written before are still in the export."""
    path = store_of(tmp_path, [(1, RAW, CLEAN, CLEAR, "replace"), (2, CLEAN, EXPORT, CLEAR, "replace"),
                               (3, CLEAN, EXPORT, MASKED, mode)])
    assert export_violations(path) == [(EXPORT, "email")]
    report = check_store(open_store(path), POLICY)
    notes = report["notes"]
    if mode == "partitions":
        assert len(notes) == 1 and notes[0].startswith(f"{EXPORT} was last written by an overwrite of some of "
                                                        f"its partitions") and "cannot tell" in notes[0]
    else:
        assert notes == []


def test_an_upstream_fix_clears_a_copy_only_once_it_is_copied_again(tmp_path):
    """clean was fixed (replaced by a masked copy) after the export copied it: the export still holds
    the clear email until it runs again."""
    before = [(1, RAW, CLEAN, CLEAR, "replace"), (2, CLEAN, EXPORT, CLEAR, "replace"), (3, RAW, CLEAN, MASKED, "replace")]
    assert export_violations(store_of(tmp_path / "a", before)) == [(EXPORT, "email")]
    rerun = before + [(4, CLEAN, EXPORT, CLEAR, "replace")]
    assert export_violations(store_of(tmp_path / "b", rerun)) == []
    assert export_labels(store_of(tmp_path / "c", rerun)) == set()


def test_the_violation_names_the_write_that_made_the_current_state(tmp_path):
    path = store_of(tmp_path, [(1, RAW, CLEAN, CLEAR, "replace"), (2, CLEAN, EXPORT, MASKED, "replace"),
                               (3, CLEAN, EXPORT, CLEAR, "replace"), (4, CLEAN, EXPORT, CLEAR, "append")])
    (v,) = check_store(open_store(path), POLICY)["violations"]
    assert v["written_by"]["query_id"] in {f"app-3-{EXPORT}:1", f"app-4-{EXPORT}:1"}
    assert v["hops"][-1]["captured_at"] >= at(3)   # never the masked write before the replace


def _policy(tmp_path: Path, rules: list[dict]) -> Path:
    path = tmp_path / "policy.json"   # JSON is YAML
    path.write_text(json.dumps({"rules": rules}))
    return path


def _check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lineage_listener", "check", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)


def test_a_pattern_or_label_that_matches_nothing_warns_and_the_rest_is_checked(tmp_path):
    store = store_of(tmp_path, [(1, RAW, CLEAN, CLEAR, "replace"), (2, CLEAN, EXPORT, CLEAR, "replace")])
    policy = _policy(tmp_path, [{"name": "exports", "kind": "forbid", "label": "pii",
                                 "datasets": ["file:/**/exports/**", "spark_catalog.*.exports_*"]},
                                {"name": "typo", "kind": "forbid", "label": "pij", "datasets": ["file:/**"]}])
    done = _check("--store", str(store), "--policy", str(policy), "--format", "json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert [(v["rule"], v["dataset"]) for v in report["violations"]] == [("exports", EXPORT)]
    warnings = done.stderr.strip().splitlines()
    assert warnings == [f"lineage-listener: warning: {line}" for line in report["warnings"]]
    assert any("'spark_catalog.*.exports_*' matches no dataset" in w for w in warnings)
    assert any("label 'pij' is declared on no column (closest known: pii" in w for w in warnings)
    strict = _check("--store", str(store), "--policy", str(policy), "--strict")
    assert strict.returncode == 2 and "matches no dataset" in strict.stderr and strict.stdout == ""
    with pytest.raises(PolicyError):
        check_store(open_store(store), parse(json.loads(policy.read_text()), "p"), strict=True)


def test_a_window_with_nothing_in_it_says_so(tmp_path):
    store = store_of(tmp_path, [(1, RAW, CLEAN, CLEAR, "replace"), (2, CLEAN, EXPORT, CLEAR, "replace")])
    policy = _policy(tmp_path, [{"name": "exports", "kind": "forbid", "label": "pii",
                                 "datasets": ["file:/**/exports/**"]}])
    done = _check("--store", str(store), "--policy", str(policy), "--since", "2099-01-01")
    assert done.returncode == 0, done.stderr
    assert ("note: the window (since 2099-01-01 00:00:00, a time still to come) is empty: nothing was captured "
            "in it; the store's 2 captures were made from 2026-03-01 06:00:00 to 2026-03-02 06:00:00") in done.stdout


def test_the_governance_page_fix_passes_its_two_rules_and_an_append_keeps_failing(retail, tmp_path):
    """docs/governance.md's pipeline, then its fix run as a real application (``retail_exports_fixed``:
    the partner export overwritten with ``sha2(email, 256)``; a second export written in clear, then
    masked rows appended to it)."""
    import shutil

    from tests.retail import run_pipeline

    store = tmp_path / "lineage.duckdb"
    shutil.copy(retail.store, store)
    raw, partner, eu = retail.raw("customers.csv"), retail.export("partner_top_customers.csv"), \
        retail.export("partner_eu.csv")
    assert ingest_labels(store, [(raw, "email", "pii.email", True), (raw, "name", "pii.name", True)])
    policy = _policy(tmp_path, [
        {"name": "no-clear-pii-in-exports", "kind": "forbid", "label": "pii", "datasets": ["file:/**/exports/**"]},
        {"name": "partner-emails-masked", "kind": "require_masking", "label": "pii.email",
         "datasets": ["file:/**/exports/partner_*.csv"]}])

    def found(*args: str) -> set[tuple[str, str, str]]:
        done = _check("--store", str(store), "--policy", str(policy), "--format", "json", *args)
        assert done.returncode in (0, 1), done.stderr
        report = json.loads(done.stdout)
        assert done.returncode == (1 if report["violations"] else 0)
        return {(v["rule"], v["dataset"], v["column"]) for v in report["violations"]}

    before = found()
    assert {("no-clear-pii-in-exports", partner, "email"), ("partner-emails-masked", partner, "email")} <= before
    assert watched(store, policy, tmp_path / "serve-before.log")[0] >= {(r, d, c) for r, d, c in before if d == partner}
    run_pipeline(retail.root, store, gap=0, jobs=("retail_exports_fixed",))
    with open_store(store).session() as s:
        assert s.sql("SELECT count(*) FROM queries WHERE target_dataset = ? AND write_mode = 'replace'",
                     params=[partner]).fetchall() == [(2,)]
        assert s.sql("SELECT list(write_mode ORDER BY captured_at) FROM queries WHERE target_dataset = ?",
                     params=[eu]).fetchall() == [(["replace", "append"],)]
    after = found()
    assert not {v for v in after if v[1] == partner and v[2] == "email"}, after
    assert {("no-clear-pii-in-exports", eu, "email"), ("partner-emails-masked", eu, "email")} <= after
    assert {("no-clear-pii-in-exports", partner, "email")} <= found("--history")
    # the server started again: its start-up check clears what the fix cleared, keeps the append's
    still, cleared = watched(store, policy, tmp_path / "serve-after.log")
    assert not {v for v in still if v[1] == partner and v[2] == "email"}, still
    assert {("no-clear-pii-in-exports", partner, "email"), ("partner-emails-masked", partner, "email")} <= cleared
    assert {("no-clear-pii-in-exports", eu, "email"), ("partner-emails-masked", eu, "email")} <= still
    g = open_store(store).upstream(partner, "email")
    (into,) = [d for u, v, d in g.edges(data=True) if v == (partner, "email") and u[1] == "email"]
    assert into["replaced"] == ["identity"] and into["history"] is None   # the clear copy is history, sha2 is not


def watched(store: Path, policy: Path, log: Path) -> tuple[set[tuple[str, str, str]], set[tuple[str, str, str]]]:
    """What ``serve --policy`` lists once its start-up check has run: the open violations and the resolved ones."""
    import time
    import urllib.request

    from tests.server_helpers import Server

    srv = Server(store, extra_args=["--policy", str(policy)], output=log).start()
    try:
        deadline = time.monotonic() + 120
        while True:
            with urllib.request.urlopen(f"{srv.url}/api/violations?resolved=true", timeout=30) as r:
                body = json.loads(r.read())
            if body["watch"]["last_check_at"] is not None or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert body["watch"]["last_check_at"] is not None, log.read_text()
        rows = [((v["rule"], v["dataset"], v["column"]), v.get("resolved_at")) for v in body["violations"]]
        return {k for k, done in rows if done is None}, {k for k, done in rows if done is not None}
    finally:
        srv.stop()


def ingest_labels(store: Path, labels: list[tuple[str, str, str, bool]]) -> bool:
    return StoreWriter(store).write(labelstore.set_batch(labels, "test"))


def test_the_governance_pages_pipeline_needs_no_pytest():
    """docs/governance.md runs ``tests.retail.run_pipeline`` from a shell: nothing it imports needs pytest."""
    code = ("import sys; sys.modules['pytest'] = None\n"
            "import tests.retail, tests.jobs; print(tests.jobs.capture_args.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "capture_args", done.stderr


def test_a_preview_judges_the_data_as_its_statements_would_leave_it(tmp_path):
    """Previewed edges are checked as if captured now: a statement that replaces the export with
    sha2 clears the clear copy the store holds; one that appends it does not."""
    from lineage_listener.govern.checks import check_edges

    path = store_of(tmp_path, [(1, RAW, CLEAN, CLEAR, "replace"), (2, CLEAN, EXPORT, CLEAR, "replace")])
    planned = {"target_dataset": EXPORT, "target_column": "email", "source_dataset": CLEAN, "source_column": "email",
               "transform": "derived", "kind": "direct", "expression": "sha2(email, 256)", "masking": True}
    for mode, violations in (("replace", []), ("append", [(EXPORT, "email")]), (None, [(EXPORT, "email")])):
        report = check_edges(open_store(path), POLICY, [{**planned, "write_mode": mode}])
        assert [(v["dataset"], v["column"]) for v in report["violations"]] == violations, mode
    report = check_edges(open_store(path), POLICY, [{**planned, "write_mode": "replace"}], history=True)
    assert [(v["dataset"], v["column"]) for v in report["violations"]] == [(EXPORT, "email")]
