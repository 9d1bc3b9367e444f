"""Other producers' real events whose datasets carry a ``symlinks`` identifier of type ``TABLE`` in a
file system's namespace (the Spark agent names a session-catalog table without a metastore by its
warehouse: namespace ``file:/tmp/cll_test``, name ``default.tbl1``).

Such a table is named as capture names catalog tables (``spark_catalog.default.tbl1``), never
``file:/tmp/cll_test.default.tbl1``; an answer names its start as the question named it, and every
other dataset by its primary name. The events are those of OpenLineage's own tests (the Spark agent's
expected events, the compatibility tests' consumer scenarios); where they came from is in
``tests/fixtures/openlineage-producers/README.md``."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from lineage_listener.openlineage import ingest, naming
from lineage_listener.query.store import open_store

ROOT = Path(__file__).resolve().parents[1]
PRODUCERS = ROOT / "tests" / "fixtures" / "openlineage-producers"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _load(name: str) -> dict[str, dict]:
    return json.loads((PRODUCERS / name).read_text())


def _completed(ev: dict, n: int) -> dict:
    """An expected-event file made a whole RunEvent: what the agent's test matcher leaves out (run id,
    job name, event type and time; a dataset whose namespace the matcher does not fix) filled in or left out."""
    ev = json.loads(json.dumps(ev))
    ev.setdefault("eventType", "COMPLETE")
    ev.setdefault("eventTime", "2025-06-01T09:00:00Z")
    ev.setdefault("producer", "https://github.com/OpenLineage/OpenLineage/tree/1.0.0/integration/spark")
    ev.setdefault("schemaURL", "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent")
    ev.setdefault("run", {}).setdefault("runId", f"00000000-0000-4000-8000-{n:012d}")
    job = ev.setdefault("job", {})
    job.setdefault("namespace", "expected-events")
    job.setdefault("name", f"expected-{n}")
    for side in ("inputs", "outputs"):
        ev[side] = [d for d in ev.get(side) or [] if "namespace" in d and "name" in d]
    return ev


def _groups() -> dict[str, list[dict]]:
    """Events ingested together: each compatibility scenario (one application), each expected event."""
    out: dict[str, list[dict]] = {}
    for source, ev in _load("compatibility_tests.json").items():
        out.setdefault(source.split("/events/")[0], []).append(ev)
    for n, (source, ev) in enumerate(_load("spark_agent_expected.json").items()):
        out[source] = [_completed(ev, n)]
    return out


GROUPS = _groups()


def _datasets(ev: dict) -> list[dict]:
    return [*(ev.get("inputs") or []), *(ev.get("outputs") or [])]


def _warehouse_links(ev: dict) -> list[tuple[dict, dict]]:
    """(dataset, its TABLE symlink) pairs whose symlink namespace is a file system."""
    return [(d, link) for d in _datasets(ev)
            for link in ((d.get("facets") or {}).get("symlinks") or {}).get("identifiers") or []
            if (link.get("type") or "").upper() == "TABLE" and naming.is_filesystem(link["namespace"])]


def _names_sent(events: list[dict]) -> set[str]:
    """Every name the events give a dataset, as the naming spec reads it, and each table a symlink
    names (in a file system's namespace: a table of that warehouse, ``spark_catalog.db.t``)."""
    out = set()
    for ev in events:
        for d in _datasets(ev):
            out.add(naming.from_openlineage(d["namespace"], d["name"]))
            lineage = (d.get("facets") or {}).get("columnLineage") or {}
            for spec in (lineage.get("fields") or {}).values():
                out |= {naming.from_openlineage(f["namespace"], f["name"]) for f in spec["inputFields"]}
            for link in ((d.get("facets") or {}).get("symlinks") or {}).get("identifiers") or []:
                table = "spark_catalog." + link["name"] if naming.is_filesystem(link["namespace"]) else \
                    naming.from_openlineage(link["namespace"], link["name"])
                out.add(table)
    return out


def _questions(events: list[dict]) -> set[tuple[str, str, str]]:
    """(direction, dataset as sent, column) of every column the events' column lineage names."""
    out = set()
    for ev in events:
        for d in ev.get("outputs") or []:
            fields = ((d.get("facets") or {}).get("columnLineage") or {}).get("fields") or {}
            for column, spec in fields.items():
                # a column's own old value (a MERGE keeping it) is no step a walk takes
                inputs = [f for f in spec["inputFields"] if (f["namespace"], f["name"], f["field"]) !=
                          (d["namespace"], d["name"], column)]
                out |= {("upstream", naming.from_openlineage(d["namespace"], d["name"]), column)} if inputs else set()
                out |= {("downstream", naming.from_openlineage(f["namespace"], f["name"]), f["field"])
                        for f in inputs}
    return out


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the schema and nothing else: copied, it spares each group a store's creation."""
    store = tmp_path_factory.mktemp("empty") / "lineage.duckdb"
    assert ingest.ingest(str(store), io.StringIO("[]"))["written"]
    return store


def _ingested(empty: Path, tmp_path: Path, events: list[dict]) -> Path:
    store = tmp_path / "lineage.duckdb"
    shutil.copyfile(empty, store)
    assert ingest.ingest(str(store), io.StringIO(json.dumps(events)))["written"]
    return store


def test_the_fixtures_hold_every_event_of_the_shape():
    """The compatibility scenarios hold 42 events, 9 of them with a warehouse's TABLE symlink; the
    agent's expected events with one are 54 (each file is one event)."""
    compat = _load("compatibility_tests.json")
    assert len(compat) == 42 and sum(bool(_warehouse_links(ev)) for ev in compat.values()) == 9
    agent = _load("spark_agent_expected.json")
    assert len(agent) == 54 and all(_warehouse_links(ev) for ev in agent.values())


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_answers_name_their_start_as_asked_and_no_dataset_by_a_made_up_name(group, empty, tmp_path):
    events = GROUPS[group]
    store = _ingested(empty, tmp_path, events)
    sent = _names_sent(events)
    lineage = open_store(store)
    stored = {r[0] for r in lineage.sql("SELECT dataset FROM datasets").fetchall()}
    assert stored <= sent, f"made-up names: {sorted(stored - sent)}"
    for ev in events:
        for d, link in _warehouse_links(ev):
            path, table = naming.from_openlineage(d["namespace"], d["name"]), "spark_catalog." + link["name"]
            assert (table, "table", path) in set(lineage.sql(
                "SELECT dataset, kind, location FROM datasets WHERE dataset = ?", params=[table]).fetchall())
    questions = _questions(events)
    with lineage.session():
        for direction, asked, column in sorted(questions):
            g = getattr(lineage, direction)(asked, column)
            assert g.graph["start"] == (asked, column)
            assert g.number_of_edges() > 0, (direction, asked, column)
            assert {n[0] for n in g} <= sent | {asked}
    lineage.close()
    assert questions or not any(((d.get("facets") or {}).get("columnLineage"))
                                for ev in events for d in ev.get("outputs") or [])


def test_the_compatibility_events_answer_by_cli_and_rest_under_the_names_asked(empty, tmp_path):
    """The Spark job writing ``file:/tmp/cll_test/tbl1``: the CLI's and the REST route's answers start
    there, and name its sources by their tables' names, the names capture gives them."""
    pytest.importorskip("fastapi")
    from tests.server_helpers import TOKEN, Server

    store = _ingested(empty, tmp_path, GROUPS["consumer/scenarios/CLL"])
    done = subprocess.run([sys.executable, "-m", "lineage_listener", "upstream", "--store", str(store),
                           "file:/tmp/cll_test/tbl1", "ident", "--format", "json"], env=ENV, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    sources = {"spark_catalog.default.cll_source1", "spark_catalog.default.cll_source2"}
    assert cli["start"] == {"dataset": "file:/tmp/cll_test/tbl1", "column": "ident"}
    assert {n["dataset"] for n in cli["nodes"]} == {"file:/tmp/cll_test/tbl1"} | sources
    srv = Server(store).start()
    try:
        path = urllib.parse.quote("file:/tmp/cll_test/tbl1", safe="")
        req = urllib.request.Request(f"{srv.url}/v3/namespaces/default/datasets/{path}/columns/ident/lineage",
                                     headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(req, timeout=60) as answer:
            rest = json.load(answer)
    finally:
        srv.stop()
    assert rest["start"] == cli["start"]
    assert {n["dataset"] for n in rest["nodes"]} == {n["dataset"] for n in cli["nodes"]}
