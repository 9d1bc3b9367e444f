"""The ``lineage-listener`` command: a thin skin over the Python API.

Each sub-command lives in its own module exposing ``register(subparsers)``,
which adds its parser and sets ``func`` (``args -> exit code``).

Every failure is one line on stderr and a non-zero exit, never a traceback
(``-v`` adds the traceback of an unexpected error): 2 for a bad argument or an
unknown name, 1 for a store that cannot answer (missing, corrupt, no lineage
tables yet, another version's schema) or anything unexpected.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback
from typing import NoReturn

import duckdb

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
    "doctor",
    "prune",
    "export",
    "ingest",
    "serve",
    "consume",
    "push",
    "html",
    "classify",
    "check",
    "diff",
    "preview",
)

#: Commands that read a store: they first try to write what waits in its spool, and say
#: on stderr when some still waits (their answer may miss it).
READ_COMMANDS = frozenset({"sql", "upstream", "downstream", "impact", "provenance", "html", "classify", "check",
                           "diff", "preview"})


#: Top-level modules of the optional extras -> the extra that installs them.
EXTRAS = {"openlineage": "openlineage", "jsonschema": "openlineage", "referencing": "openlineage",
          "datahub": "datahub", "fastapi": "server", "uvicorn": "server", "starlette": "server",
          "confluent_kafka": "kafka"}


def missing_extra(exc: ImportError) -> str | None:
    """The one-line fix when ``exc`` is a missing module of an optional extra, else None."""
    module = (getattr(exc, "name", None) or "").partition(".")[0]
    extra = EXTRAS.get(module)
    if extra is None:
        return None
    return f"needs the {extra} extra (module {module!r} is missing): pip install 'lineage-listener[{extra}]'"


class _Parser(argparse.ArgumentParser):
    """Bad arguments are one line too (argparse would print the usage first).

    No abbreviations (in every sub-command, whose parsers are of this class too): a
    prefix such as ``--token`` for ``--token-env`` would silently mean something else.
    """

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
        if args.command in READ_COMMANDS and getattr(args, "store", None):
            _write_waiting_spool(args.store)
        return int(args.func(args) or 0)
    except (CliError, StoreError) as exc:
        return _fail(str(exc), 2)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): like any Unix tool, stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141
    except duckdb.Error as exc:
        return _fail(_store_problem(exc, getattr(args, "store", None)), 1)
    except Exception as exc:  # noqa: BLE001 - the one place that turns any failure into one line
        fix = missing_extra(exc) if isinstance(exc, ImportError) else None
        if fix:
            command = " ".join(filter(None, [args.command, getattr(args, "format", None)]))
            return _fail(f"{command}: {fix}", 2)
        if args.verbose:
            traceback.print_exc()
        return _fail(f"unexpected {type(exc).__name__}: {_first_line(str(exc))} (-v shows the traceback)", 1)


def _write_waiting_spool(store: str) -> None:
    """Ingest spooled lineage of ``store`` (waiting 1 s at most); one stderr line if some still waits."""
    from pathlib import Path

    from lineage_listener.store import spool
    from lineage_listener.store.batch import Batch
    from lineage_listener.store.writer import StoreWriter

    path = Path(store).expanduser().absolute()
    if not spool.pending(path) or not path.exists():
        return
    StoreWriter(path, lock_timeout=1.0).write(Batch())
    left = spool.pending(path)
    if left:
        print(f"lineage-listener: note: {len(left)} spooled batches of captured lineage are not in this store yet, "
              f"so this answer may miss them (run `lineage-listener doctor --store {store}`)", file=sys.stderr)


def _first_line(text: str) -> str:
    """The first non-empty line, plus DuckDB's "Did you mean" hint when it gives one."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    hint = next((line for line in lines[1:] if line.startswith("Did you mean")), None)
    return " ".join(filter(None, [lines[0] if lines else "", hint]))


def _fail(message: str, code: int) -> int:
    print(f"lineage-listener: {_first_line(message)}", file=sys.stderr)
    return code


#: The tables every lineage store has (docs/reference/store.md).
LINEAGE_TABLES = frozenset({"runs", "queries", "datasets", "dataset_columns", "column_lineage"})


def no_lineage_tables(store: str) -> str | None:
    """The one-line reason when ``store`` is a DuckDB file without any lineage table, else None."""
    try:
        with duckdb.connect(store, read_only=True) as con:
            tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    except duckdb.Error:
        return None
    if tables & LINEAGE_TABLES:
        return None
    return f"store {store} has no lineage tables yet: capture has not written there (check --store)"


def _store_problem(exc: duckdb.Error, store: str | None) -> str:
    """What a DuckDB error from a lineage command says about the store."""
    where = f"store {store}" if store else "the store"
    if isinstance(exc, (duckdb.CatalogException, duckdb.BinderException)) and store:
        return no_lineage_tables(store) or (
            f"{where} has tables of another lineage-listener version ({_first_line(str(exc))}); "
            f"let a capture of this version open it, or check --store")
    return f"{where}: {type(exc).__name__}: {_first_line(str(exc))}"


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 2, no traceback."""


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
