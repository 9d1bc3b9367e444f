"""Spark's own SQL test files through capture: every problem capture has with them, one line each.

    .venv/bin/python bench/sql_corpus_probe.py DIR [--limit N] [--store PATH] [--show-rejected]
    .venv-spark35/bin/python bench/sql_corpus_probe.py DIR          # the same on PySpark 3.5

``DIR`` holds ``*.sql`` files (searched recursively) in the format of Spark's SQL tests
(``sql/core/src/test/resources/sql-tests/inputs`` in apache/spark; nothing of them is kept in
this repository: copy the files you want to probe into a folder of your own). ``--limit N`` probes
the first N files only. Statements are split the way Spark's ``SQLQueryTestSuite`` splits them: lines
starting with ``--`` are comments (``--SET``, ``--IMPORT``, ``--CONFIG_DIM`` directives included,
so they are ignored), a statement ends with a ``;`` at the end of a line, and a block between
``--QUERY-DELIMITER-START`` and ``--QUERY-DELIMITER-END`` is one statement.

One local[2] session runs every file in order with capture enabled in process
(``lineage_listener.enable``); each file starts without the temporary views, tables and session
settings the files before it left. A statement Spark rejects is expected (Spark's tests include
failing statements) and only counted; a query returning rows is collected. After each statement the
capture is flushed and the store is read. Problems, one line each (``file:line  category  detail``):

* ``lineage_error``: a query the capture could not walk (``queries.status``);
* ``capture_error:<stage>``: a ``capture_errors`` row of the statement's queries (walk, plan, listener);
* ``unknown_node``: a plan node class the walker has no handler for (handled by the fallback);
* ``exception``: a warning or error the capture logged (a Python exception in capture);
* ``not_captured``: a query that returned rows and left no ``queries`` row;
* ``extra_query``: a query that returned rows and left more than one ``queries`` row, or more
  than one per dataset it writes (a multi-insert is one row per write): Spark ran a part of it as
  a query of its own, and capture recorded that as a user's query;
* ``unknown_expression``: an expression class outside Spark's built-in functions without a rule
  (treated as derived from its inputs: suspicious);
* ``zero_edges``: a query captured with no edge although it reads a relation and returns columns
  (suspicious, not necessarily wrong: ``SELECT count(*) FROM t`` has none).

The summary counts problems by category; the exit status is 1 when there are any but ``zero_edges``.
"""
from __future__ import annotations

import argparse
import logging
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402

import lineage_listener  # noqa: E402
from lineage_listener.lineage import walker  # noqa: E402

#: The trait of logical plans Spark runs as commands (``spark.sql`` runs them before it returns).
COMMAND = "org.apache.spark.sql.catalyst.plans.logical.Command"
#: Leaves that read no data of their own (a ``SELECT`` without ``FROM``, a read of a CTE).
NO_DATA_LEAVES = ("OneRowRelation", "CTERelationRef", "UnionLoopRef")
#: Problem categories that are suspicious rather than wrong (they do not fail the run).
SUSPICIOUS = ("zero_edges", "unknown_expression")
#: What the walker logs (at INFO) for an expression class outside Spark's built-ins without a rule.
NO_RULE = "no specific rule for expression "


@dataclass
class Statement:
    file: str
    line: int
    text: str


@dataclass
class Report:
    statements: int = 0
    rejected: int = 0
    failed: int = 0
    collected: int = 0
    problems: list[tuple[Statement, str, str]] = field(default_factory=list)

    def add(self, statement: Statement, category: str, detail: str) -> None:
        self.problems.append((statement, category, detail))
        one_line = " ".join(statement.text.split())
        print(f"{statement.file}:{statement.line}  {category}  {detail}  | {one_line[:160]}", flush=True)


def split(path: Path, root: Path) -> list[Statement]:
    """The statements of one test file, each with the line it starts on.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); f = d / "a.sql"
    >>> _ = f.write_text("-- c\\nSELECT 1;\\nSELECT\\n 'x;y' ;\\n--SET a=b\\nSELECT 2")
    >>> [(s.line, s.text) for s in split(f, d)]
    [(2, 'SELECT 1'), (3, "SELECT\\n 'x;y'"), (6, 'SELECT 2')]
    """
    name = str(path.relative_to(root))
    out: list[Statement] = []
    current: list[str] = []
    start = 0
    block = False

    def finish() -> None:
        text = "\n".join(current).strip()
        if text.endswith(";"):
            text = text[:-1].rstrip()
        if text:
            out.append(Statement(name, start, text))
        current.clear()

    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("--QUERY-DELIMITER-START"):
            finish()
            block = True
            continue
        if stripped.startswith("--QUERY-DELIMITER-END"):
            finish()
            block = False
            continue
        if stripped.startswith("--") or (not current and not stripped):
            continue
        if not current:
            start = number
        current.append(line)
        if not block and re.search(r";\s*$", line):
            finish()
    finish()
    return out


class LogTap(logging.Handler):
    """Warnings and errors the capture logs, and the walker's unknown plan nodes."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING or record.getMessage().startswith(NO_RULE):
            self.records.append(record)

    def take(self) -> list[logging.LogRecord]:
        taken, self.records = self.records, []
        return taken


def leaves_of(df: Any) -> list[str]:
    """Class names of the leaves of a DataFrame's analyzed plan."""
    seq = df._jdf.queryExecution().analyzed().collectLeaves()
    return [seq.apply(i).nodeName() for i in range(seq.length())]


def reset(spark: Any) -> None:
    """Drop what a file left (temporary views, tables, views, databases, settings); a file may have
    left the session in a database it dropped, so first go back to ``default``."""
    spark.sql("USE spark_catalog.default")
    for table in spark.catalog.listTables():
        try:
            if table.isTemporary:
                spark.catalog.dropTempView(table.name)
            else:
                kind = "VIEW" if table.tableType == "VIEW" else "TABLE"
                spark.sql(f"DROP {kind} IF EXISTS `{table.database}`.`{table.name}`")
        except Exception:  # noqa: BLE001 - best effort between files
            pass
    for db in spark.catalog.listDatabases():
        if db.name != "default":
            spark.sql(f"DROP DATABASE IF EXISTS `{db.name}` CASCADE")
    spark.sql("USE default")
    spark.sql("RESET")


class Probe:
    def __init__(self, spark: Any, store: Path) -> None:
        self.spark = spark
        self.store = store
        self.handle = lineage_listener.enable(spark, store=str(store))
        self.seen: set[str] = set()
        self.tap = LogTap()
        logging.getLogger("lineage_listener").addHandler(self.tap)
        logging.getLogger(walker.__name__).setLevel(logging.INFO)  # its notes of expressions without a rule
        self.report = Report()

    def is_command(self, plan: Any) -> bool:
        """Whether an analyzed plan is a command (or the result of one)."""
        jvm = self.spark._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        command = jvm.java.lang.Class.forName(COMMAND, False, loader)
        return bool(command.isInstance(plan)) or plan.nodeName() == "CommandResult"

    def _read(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        if not self.store.exists():
            return []
        with duckdb.connect(str(self.store), read_only=True) as con:
            return con.execute(sql, params or []).fetchall()

    def settle(self) -> list[str]:
        """Flush the capture; the ids of the queries captured since the last call."""
        if not self.handle.flush(120):
            logging.warning("capture did not flush within 120 s")
        ids = [r[0] for r in self._read("SELECT query_id FROM queries")]
        new = [q for q in ids if q not in self.seen]
        self.seen.update(new)
        return new

    def run(self, statement: Statement) -> None:
        report = self.report
        report.statements += 1
        self.tap.take()  # the queries of the statements before were settled after each
        walker._logged.clear()  # the walker logs each unknown class once a process: once a statement here
        columns: list[str] = []
        leaves: list[str] = []
        collected = False
        try:
            df = self.spark.sql(statement.text)
            if not self.is_command(df._jdf.queryExecution().analyzed()):
                columns = list(df.columns)
                leaves = leaves_of(df)
                df.collect()
                collected = True
                report.collected += 1
        except Exception as exc:  # noqa: BLE001 - Spark's tests include statements Spark rejects
            kind = type(exc).__name__
            if kind in ("AnalysisException", "ParseException"):
                report.rejected += 1
            else:
                report.failed += 1
        new = self.settle()
        for record in self.tap.take():
            message = record.getMessage()
            if message.startswith("unknown plan node "):
                report.add(statement, "unknown_node", message.split()[3].rstrip(":"))
            elif message.startswith(NO_RULE):
                report.add(statement, "unknown_expression", message[len(NO_RULE):].split(":")[0])
            else:
                report.add(statement, "exception", message.splitlines()[0][:300])
        if not new:
            if collected:
                report.add(statement, "not_captured", "no queries row for a collected query")
            return
        rows = self._read("SELECT command, target_dataset FROM queries WHERE query_id IN (SELECT unnest(?))", [new])
        targets = {t for _, t in rows if t is not None}
        if collected and len(new) > max(1, len(targets)):  # a multi-insert: one row per write
            report.add(statement, "extra_query", f"{len(new)} queries rows: {', '.join(sorted(c for c, _ in rows))}")
        for query_id, status, error, command in self._read(
                "SELECT query_id, status, error, command FROM queries WHERE query_id IN (SELECT unnest(?))", [new]):
            if status == "lineage_error":
                report.add(statement, "lineage_error", f"{command}: {(error or '').splitlines()[-1][:300]}")
        for stage, error in self._read(
                "SELECT stage, error FROM capture_errors WHERE query_id IN (SELECT unnest(?))", [new]):
            report.add(statement, f"capture_error:{stage}", error.splitlines()[0][:300])
        if collected and columns and any(leaf not in NO_DATA_LEAVES for leaf in leaves):
            edges = self._read("SELECT count(*) FROM column_lineage WHERE query_id IN (SELECT unnest(?))", [new])
            if edges and edges[0][0] == 0:
                report.add(statement, "zero_edges", f"reads {','.join(sorted(set(leaves)))}")


def session(warehouse: Path) -> Any:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("sql-corpus-probe")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.warehouse.dir", str(warehouse / "warehouse"))
             .config("spark.driver.extraJavaOptions", "-Dderby.system.home=" + str(warehouse))
             .getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)  # PySpark's own note of each rejection
    return spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="probe the first N files only")
    parser.add_argument("--start", default=None, help="skip the files whose path (under DIR) sorts before this")
    parser.add_argument("--store", type=Path, default=None, help="the DuckDB store (default: a temporary file)")
    args = parser.parse_args(argv)
    files = sorted(p for p in args.dir.rglob("*.sql")
                   if args.start is None or str(p.relative_to(args.dir)) >= args.start)[:args.limit]
    tmp = Path(tempfile.mkdtemp(prefix="sql-corpus-probe-"))
    store = args.store or tmp / "lineage.duckdb"
    spark = session(tmp)
    import pyspark

    print(f"PySpark {pyspark.__version__}: {len(files)} files from {args.dir}, store {store}", flush=True)
    probe = Probe(spark, store)
    started = time.monotonic()
    for path in files:
        for statement in split(path, args.dir):
            probe.run(statement)
        reset(spark)
        probe.settle()
    probe.handle.disable()
    report = probe.report
    counts = Counter(category for _, category, _ in report.problems)
    statements_with = len({(s.file, s.line) for s, c, _ in report.problems if c not in SUSPICIOUS})
    print(f"\n{len(files)} files, {report.statements} statements ({report.collected} queries collected, "
          f"{report.rejected} rejected by Spark, {report.failed} failed running) in "
          f"{time.monotonic() - started:.0f} s")
    print(f"problems: {sum(counts.values())} ({statements_with} statements with a problem other than "
          f"{', '.join(SUSPICIOUS)})")
    for category, n in sorted(counts.items()):
        print(f"  {category}: {n}")
    spark.stop()
    return 1 if any(c not in SUSPICIOUS for c in counts) else 0


if __name__ == "__main__":
    sys.exit(main())
