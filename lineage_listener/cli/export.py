"""``lineage-listener export openlineage ...``: the store's lineage in a standard format."""
from __future__ import annotations

import argparse
import sys

from lineage_listener.cli import CliError
from lineage_listener.cli.progress import progress_bar
from lineage_listener.timewindow import parse_time


def register(p: argparse.ArgumentParser) -> None:
    formats = p.add_subparsers(dest="format", metavar="FORMAT", required=True)
    ol = formats.add_parser("openlineage", help="one OpenLineage RunEvent per captured query (NDJSON or HTTP)")
    ol.add_argument("--store", required=True, help="path of the DuckDB store")
    ol.add_argument("--since", help="only queries captured at or after this time (ISO date/time or 7d, 24h...)")
    ol.add_argument("--until", help="only queries captured up to this time")
    where = ol.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="write newline-delimited JSON to this file ('-': stdout)")
    where.add_argument("--url", help="POST to this OpenLineage endpoint, e.g. http://marquez:5000/api/v1/lineage")
    ol.add_argument("--token-env", default="LINEAGE_OPENLINEAGE_TOKEN",
                    help="environment variable holding the endpoint's bearer token (default %(default)s)")
    ol.add_argument("--tls-ca", metavar="FILE",
                    help="CA certificates (PEM) an https endpoint's certificate is checked against, for a private "
                         "CA (default: the system's CAs)")
    ol.add_argument("--job-namespace", default="spark", help="OpenLineage job namespace (default %(default)s)")
    ol.add_argument("--table-namespace",
                    help="namespace for catalog tables (default: the catalog name, spark_catalog), "
                         "e.g. hive://metastore:9083")
    ol.add_argument("--no-start", action="store_true", help="only COMPLETE/FAIL events, no START")
    ol.add_argument("--resend", action="store_true", help="also send queries this endpoint already received")
    ol.set_defaults(func=run)
    dh = formats.add_parser("datahub", help="DataHub MetadataChangeProposals: upstreamLineage with fine-grained "
                                            "lineage, schemaMetadata (needs lineage-listener[datahub])")
    dh.add_argument("--store", required=True, help="path of the DuckDB store")
    dh.add_argument("--out", required=True, help="the MCP file to write (load it with `datahub ingest` "
                                                 "and a file source, or `datahub put`)")
    dh.add_argument("--platform", help="one DataHub platform for every dataset (default: from each name: "
                                       "file, s3, hdfs, hive, postgres, ...)")
    dh.add_argument("--env", default="PROD", help="DataHub environment (default %(default)s)")
    dh.add_argument("--since", help="only edges captured at or after this time")
    dh.add_argument("--until", help="only edges captured up to this time")
    dh.set_defaults(func=run_datahub)
    tb = formats.add_parser("tables", help="the store's public tables as Parquet partitioned by capture day "
                                           "(column_lineage, queries, runs, datasets, streams)")
    tb.add_argument("--store", required=True, help="path of the DuckDB store")
    tb.add_argument("out", help="folder to write (<out>/<table>/capture_day=YYYY-MM-DD/; each table's folder "
                                "is replaced)")
    tb.set_defaults(func=run_tables)


def run_tables(args: argparse.Namespace) -> int:
    from lineage_listener.store.tables import export_tables

    for t in export_tables(args.store, args.out):
        print(f"{t.table}: {t.rows} rows to {t.path}" + (f" ({t.undated} without any time left out)"
                                                        if t.undated else ""), file=sys.stderr)
    return 0


def run_datahub(args: argparse.Namespace) -> int:
    try:
        from lineage_listener.datahub.export import DataHubOptions, export
    except ImportError as exc:
        raise CliError(f"DataHub support is not installed ({exc}): pip install 'lineage-listener[datahub]'") from None
    n = export(args.store, args.out, DataHubOptions(env=args.env, platform=args.platform,
                                                    since=parse_time(args.since),
                                                    until=parse_time(args.until, end=True)))
    print(f"wrote {n} metadata change proposals to {args.out}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    from lineage_listener.openlineage.events import ExportOptions
    from lineage_listener.openlineage.export import export

    options = ExportOptions(since=parse_time(args.since), until=parse_time(args.until, end=True),
                            job_namespace=args.job_namespace, table_namespace=args.table_namespace,
                            start_events=not args.no_start)
    try:
        with progress_bar("exporting queries") as tick:
            result = export(args.store, out=args.out, url=args.url, options=options, token_env=args.token_env,
                            resend=args.resend, progress=tick, tls_ca=args.tls_ca)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    where = args.out if args.out else args.url
    already = f" ({result.skipped} queries already there)" if result.skipped else ""
    if result.failed:  # said once: what got through, what did not and why
        print(f"lineage-listener: {result.delivered} of {result.delivered + result.undelivered} queries delivered to "
              f"{where} ({result.events} events){already}; {result.undelivered} not delivered "
              f"({result.reasons[0]}): the next export to this endpoint sends them", file=sys.stderr)
        return 1
    print(f"exported {result.events} events of {result.queries} queries to {where}{already}", file=sys.stderr)
    return 0
