"""The ``lineage-listener`` command: a thin skin over the Python API.

Each sub-command lives in its own module exposing ``register(subparsers)``,
which adds its parser and sets ``func`` (``args -> exit code``).
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

from lineage_listener.store.connection import StoreError

#: Modules of ``lineage_listener.cli`` that provide sub-commands, in help order.
COMMAND_MODULES = (
    "sql",
    "spark_conf",
    "bridge_jar",
    "upstream",
    "downstream",
    "impact",
    "provenance",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lineage-listener",
        description="Column-level lineage for Apache Spark, captured into DuckDB.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (CliError, StoreError) as exc:
        print(f"lineage-listener: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 2, no traceback."""


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
