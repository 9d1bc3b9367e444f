"""The ``lineage-listener`` command: a thin skin over the Python API.

The sub-commands are a table (:data:`COMMANDS`): a name, the module of this package that
implements it, and its one-line help. ``--help`` lists them all from the table alone; a
command's module is imported only when that command runs, so one command never pays for
(or breaks on) the imports of another. Each module exposes ``register(parser)``, which
adds its options to its own parser and sets ``func`` (``args -> exit code``).

Every failure is one line on stderr and exit code 2, never a traceback (``-v`` adds the
traceback of an unexpected error); 1 is an answer, never a failure: a policy violated, a change
found, lineage not delivered (docs/reference/cli.md, "Exit codes").
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback
from typing import NoReturn

from lineage_listener.version import __version__

#: The sub-commands, in help order: name, module of ``lineage_listener.cli``, one-line help.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("sql", "sql", "run a SQL query against the store and print the result"),
    ("spark-conf", "spark_conf", "print the spark-submit arguments that turn capture on (zero code change)"),
    ("bridge-jar", "bridge_jar", "print the path of the JVM bridge jar (built on first use)"),
    ("upstream", "upstream", "columns a column was computed from, across jobs"),
    ("downstream", "downstream", "columns computed from a column, across jobs (impact)"),
    ("impact", "impact", "reads of a column in a time window, the columns holding a copy of it (masked or not), "
                         "and those it only influences"),
    ("provenance", "provenance", "origin columns of a column and the chain of operations"),
    ("doctor", "doctor", "check a store, ingest spooled lineage, report what waits and why"),
    ("prune", "prune", "drop per-run records older than --keep; edges keep their first and last capture time"),
    ("export", "export", "export lineage as OpenLineage events or DataHub proposals"),
    ("ingest", "ingest", "write lineage from OpenLineage events into the store"),
    ("serve", "serve", "serve the store: REST API, collector for remote jobs, web UI"),
    ("consume", "consume", "write lineage from a Kafka topic into the store (no HTTP)"),
    ("push", "push", "send lineage spooled while a lineage server was unreachable"),
    ("html", "html", "write a column's lineage graph as one self-contained HTML file"),
    ("classify", "classify", "labels (classifications) on columns: set, unset, list, load, why"),
    ("check", "check", "check a policy file over the store (exit 1 on a violation)"),
    ("diff", "diff", "what changed in the lineage: two runs of an application, two time windows, or two stores"),
    ("preview", "preview", "lineage of Spark SQL before it runs, analyzed against the store's recorded schemas"),
    ("audit", "audit", "who read what from a lineage server (serve --access), or was refused, and who changed "
                       "which label"),
)

#: Global options that take no value: what may stand before the command's name.
_GLOBAL_FLAGS = frozenset({"-v", "--verbose"})

#: Commands that read a store: they first try to write what waits in its spool, and say
#: on stderr when some still waits (their answer may miss it).
READ_COMMANDS = frozenset({"sql", "upstream", "downstream", "impact", "provenance", "html", "classify", "check",
                           "diff", "preview", "audit"})


#: Top-level modules of the optional extras -> the extra that installs them.
EXTRAS = {"openlineage": "openlineage", "jsonschema": "openlineage", "referencing": "openlineage",
          "datahub": "datahub", "fastapi": "server", "uvicorn": "server", "starlette": "server",
          "confluent_kafka": "kafka"}
#: Top-level modules of the package's own dependencies -> the distribution that installs them.
DEPENDENCIES = {"yaml": "PyYAML", "duckdb": "duckdb", "sqlglot": "sqlglot", "networkx": "networkx", "rich": "rich",
                "py4j": "py4j", "pyspark": "pyspark"}


def missing_extra(exc: ImportError) -> str | None:
    """The one-line fix when ``exc`` is a missing module of an optional extra or of a dependency, else None.

    >>> missing_extra(ModuleNotFoundError("no", name="fastapi"))
    "needs the server extra (module 'fastapi' is missing): pip install 'lineage-listener[server]'"
    >>> missing_extra(ModuleNotFoundError("no", name="yaml"))
    "needs PyYAML, a dependency of lineage-listener (module 'yaml' is missing): pip install 'PyYAML'"
    """
    module = (getattr(exc, "name", None) or "").partition(".")[0]
    extra = EXTRAS.get(module)
    if extra is not None:
        return f"needs the {extra} extra (module {module!r} is missing): pip install 'lineage-listener[{extra}]'"
    package = DEPENDENCIES.get(module)
    if package is not None:
        return (f"needs {package}, a dependency of lineage-listener (module {module!r} is missing): "
                f"pip install '{package}'")
    return None


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


def build_parser(command: str | None = None, every: bool = False) -> argparse.ArgumentParser:
    """The parser: every command listed, only ``command``'s options (its module imported), or all of
    them with ``every`` (the reference pages are generated from that)."""
    parser = _Parser(
        prog="lineage-listener",
        description="Column-level lineage for Apache Spark, captured into DuckDB.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    parser.add_argument("--version", action="version", version=f"lineage-listener {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, summary in COMMANDS:
        p = subparsers.add_parser(name, help=summary)
        if every or name == command:
            importlib.import_module(f"{__name__}.{module}").register(p)
    return parser


def command_of(argv: list[str]) -> str | None:
    """The sub-command ``argv`` names (its first word after the global flags), if any.

    >>> command_of(["-v", "upstream", "--store", "s"]), command_of(["--help"])
    ('upstream', None)
    """
    for word in argv:
        if word not in _GLOBAL_FLAGS:
            return word if not word.startswith("-") else None
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = command_of(argv)
    try:
        parser = build_parser(command)
    except ImportError as exc:  # the command's module needs what is not installed
        fix = missing_extra(exc)
        if fix is None:
            raise
        return _fail(f"{command}: {fix}", 2)
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
    except CliError as exc:
        return _fail(str(exc), 2)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): like any Unix tool, stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141
    except Exception as exc:  # noqa: BLE001 - the one place that turns any failure into one line
        if _raised(exc, "lineage_listener.store.connection", "StoreError"):
            return _fail(str(exc), 2)
        if _raised(exc, "duckdb", "Error"):
            return _fail(_store_problem(exc, getattr(args, "store", None)), 2)
        fix = missing_extra(exc) if isinstance(exc, ImportError) else None
        if fix:
            named = args.command + (f" {args.format}" if args.command in ("export", "ingest") else "")
            return _fail(f"{named}: {fix}", 2)
        if args.verbose:
            traceback.print_exc()
        return _fail(f"unexpected {type(exc).__name__}: {_first_line(str(exc))} (-v shows the traceback)", 2)


def _raised(exc: BaseException, module: str, name: str) -> bool:
    """Whether ``exc`` is a ``module.name``, without importing ``module``: a module never imported
    raised nothing."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(exc, getattr(loaded, name))


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
    import duckdb

    try:
        with duckdb.connect(store, read_only=True) as con:
            tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    except duckdb.Error:
        return None
    if tables & LINEAGE_TABLES:
        return None
    return f"store {store} has no lineage tables yet: capture has not written there (check --store)"


def _store_problem(exc: Exception, store: str | None) -> str:
    """What a DuckDB error from a lineage command says about the store."""
    import duckdb

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
