"""MetadataChangeProposals for DataHub from the store's edges, written to a JSON file.

Per target dataset: ``upstreamLineage`` (dataset upstreams, and ``fineGrainedLineages``:
direct edges FIELD_SET -> FIELD grouped by target column, transform and expression,
``transformOperation`` = ``<transform>: <expression>``; per-column indirect edges the
same with their indirect type; dataset-wide indirect edges FIELD_SET -> FIELD_SET over
every column of the target) and ``schemaMetadata`` for every dataset with known columns, each
field with its labels (declared, or propagated along copies: docs/reference/semantics.md) as
``globalTags`` (``urn:li:tag:pii.email``).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from datahub.emitter.mce_builder import make_data_platform_urn, make_tag_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.sink.file import write_metadata_file
from datahub.metadata.schema_classes import (
    BooleanTypeClass, DatasetLineageTypeClass, DateTypeClass, FineGrainedLineageClass,
    FineGrainedLineageDownstreamTypeClass, FineGrainedLineageUpstreamTypeClass, GlobalTagsClass, NullTypeClass,
    NumberTypeClass, OtherSchemaClass, SchemaFieldClass, SchemaFieldDataTypeClass, SchemaMetadataClass,
    StringTypeClass, TagAssociationClass, TimeTypeClass, UpstreamClass, UpstreamLineageClass)

from lineage_listener.datahub.urns import dataset_urn, field_urn, platform_and_name
from lineage_listener.govern.answers import dataset_labels
from lineage_listener.store.connection import open_readonly
from lineage_listener.timewindow import window_sql


@dataclass(frozen=True)
class DataHubOptions:
    env: str = "PROD"
    platform: str | None = None  # force one platform for every dataset (e.g. "spark")
    since: datetime | None = None
    until: datetime | None = None


def _type(spark_type: str | None) -> object:
    t = (spark_type or "").lower()
    if t in ("boolean",):
        return BooleanTypeClass()
    if any(t.startswith(p) for p in ("int", "bigint", "smallint", "tinyint", "double", "float", "decimal", "long")):
        return NumberTypeClass()
    if t.startswith("date"):
        return DateTypeClass()
    if t.startswith("timestamp"):
        return TimeTypeClass()
    if t.startswith("string") or t.startswith("varchar") or t.startswith("char"):
        return StringTypeClass()
    return NullTypeClass()


def proposals(store: str | Path, options: DataHubOptions = DataHubOptions()) -> list[MetadataChangeProposalWrapper]:
    """The MCPs for the store's lineage (edges of failed queries left out)."""
    within, params = window_sql("e.captured_at", options.since, options.until)
    where = ["q.status <> 'failed'", "e.target_dataset IS NOT NULL", within]
    con = open_readonly(store)
    try:
        edges = con.execute(
            f"""SELECT DISTINCT e.target_dataset, e.target_column, e.source_dataset, e.source_column, e.transform,
                       e.kind, coalesce(e.expression, '') FROM column_lineage e JOIN queries q USING (query_id)
                WHERE {' AND '.join(where)} ORDER BY ALL""", params).fetchall()
        involved = sorted({r[0] for r in edges} | {r[2] for r in edges})
        columns: dict[str, list[tuple[str, str | None, bool | None]]] = defaultdict(list)
        for ds, col, dtype, nullable in con.execute(
                "SELECT dataset, column_name, data_type, nullable FROM dataset_columns "
                "WHERE dataset IN (SELECT unnest(?)) ORDER BY dataset, ordinal NULLS LAST, column_name", [involved]).fetchall():
            columns[ds].append((col, dtype, nullable))
        tags: dict[tuple[str, str], list[str]] = defaultdict(list)
        for ds, rows in dataset_labels(con, involved).items():
            for col, label, value, _ in rows:
                if value:
                    tags[(ds, col)].append(label)
    finally:
        con.close()

    def urn(ds: str) -> str:
        return dataset_urn(ds, options.env, options.platform)

    by_target: dict[str, list[tuple]] = defaultdict(list)
    for row in edges:
        by_target[row[0]].append(row)
    out: list[MetadataChangeProposalWrapper] = []
    for target, rows in sorted(by_target.items()):
        target_urn = urn(target)
        target_columns = sorted({c for c, _, _ in columns.get(target, [])} | {r[1] for r in rows if r[1]})
        groups: dict[tuple, list[str]] = defaultdict(list)
        for _, tcol, sds, scol, transform, kind, expr in rows:
            groups[(tcol, transform, kind, expr)].append(field_urn(urn(sds), scol))
        fine = []
        for (tcol, transform, kind, expr), ups in sorted(groups.items(), key=lambda g: (g[0][0] is None, g[0])):
            wide = tcol is None
            fine.append(FineGrainedLineageClass(
                upstreamType=FineGrainedLineageUpstreamTypeClass.FIELD_SET, upstreams=sorted(set(ups)),
                downstreamType=(FineGrainedLineageDownstreamTypeClass.FIELD_SET if wide
                                else FineGrainedLineageDownstreamTypeClass.FIELD),
                downstreams=[field_urn(target_urn, c) for c in (target_columns if wide else [tcol])],
                transformOperation=f"{transform}: {expr}" if expr else transform, confidenceScore=1.0))
        upstreams = [UpstreamClass(dataset=u, type=DatasetLineageTypeClass.TRANSFORMED)
                     for u in sorted({urn(r[2]) for r in rows})]
        out.append(MetadataChangeProposalWrapper(entityUrn=target_urn, aspect=UpstreamLineageClass(
            upstreams=upstreams, fineGrainedLineages=fine)))
    for ds in involved:
        if columns.get(ds):
            platform = options.platform or platform_and_name(ds)[0]
            out.append(MetadataChangeProposalWrapper(entityUrn=urn(ds), aspect=SchemaMetadataClass(
                schemaName=platform_and_name(ds)[1], platform=make_data_platform_urn(platform), version=0, hash="",
                platformSchema=OtherSchemaClass(rawSchema=""),
                fields=[SchemaFieldClass(fieldPath=c, type=SchemaFieldDataTypeClass(type=_type(t)),
                                         nativeDataType=t or "unknown", nullable=bool(n) if n is not None else True,
                                         globalTags=GlobalTagsClass(tags=[TagAssociationClass(tag=make_tag_urn(x))
                                                                          for x in sorted(set(tags[(ds, c)]))])
                                         if tags.get((ds, c)) else None)
                        for c, t, n in columns[ds]])))
    return out


def export(store: str | Path, out: str | Path, options: DataHubOptions = DataHubOptions()) -> int:
    """Write the MCPs to ``out`` (DataHub's file format); the number written."""
    mcps = proposals(store, options)
    write_metadata_file(Path(out), mcps)
    return len(mcps)
