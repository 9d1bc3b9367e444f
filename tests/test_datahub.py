"""DataHub export, read back through DataHub's own file source."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("datahub")

from datahub.ingestion.api.common import PipelineContext  # noqa: E402
from datahub.ingestion.source.file import FileSourceConfig, GenericFileSource  # noqa: E402
from datahub.metadata.schema_classes import SchemaMetadataClass, UpstreamLineageClass  # noqa: E402

from lineage_listener.datahub.urns import dataset_urn, field_urn  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def read_back(path: Path) -> dict[tuple[str, str], object]:
    source = GenericFileSource(PipelineContext(run_id="lineage-listener-test"), FileSourceConfig(path=str(path)))
    aspects = {}
    for wu in source.get_workunits():
        mcp = wu.metadata
        aspects[(mcp.entityUrn, type(mcp.aspect).__name__)] = mcp.aspect
    return aspects


def test_fine_grained_lineage_of_the_demo_email_hash(demo_store, tmp_path):
    out = tmp_path / "mcps.json"
    proc = subprocess.run([sys.executable, "-m", "lineage_listener", "export", "datahub", "--store", str(demo_store),
                           "--out", str(out)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    aspects = read_back(out)
    summary = dataset_urn("spark_catalog.sales.customer_summary")
    lineage = aspects[(summary, "UpstreamLineageClass")]
    assert isinstance(lineage, UpstreamLineageClass)
    customers = next(u.dataset for u in lineage.upstreams if u.dataset.endswith("customers.csv,PROD)"))
    email = [f for f in lineage.fineGrainedLineages if f.downstreams == [field_urn(summary, "email_hash")]]
    assert len(email) == 1
    assert email[0].upstreams == [field_urn(customers, "email")]
    assert email[0].downstreamType == "FIELD" and email[0].upstreamType == "FIELD_SET"
    assert email[0].transformOperation.startswith("derived: sha2(")
    joins = [f for f in lineage.fineGrainedLineages if f.transformOperation.startswith("join")]
    assert joins and all(f.downstreamType == "FIELD_SET" for f in joins)
    assert set(joins[0].downstreams) >= {field_urn(summary, c) for c in ("email_hash", "name", "total_spend")}
    schema = aspects[(summary, "SchemaMetadataClass")]
    assert isinstance(schema, SchemaMetadataClass)
    assert {f.fieldPath for f in schema.fields} == {"customer_id", "name", "email_hash", "total_spend"}
