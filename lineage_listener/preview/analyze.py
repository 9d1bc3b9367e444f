"""The lineage of Spark SQL before it runs: each statement analyzed by Spark in a throwaway local
session, its plan read and walked exactly as capture reads and walks it.

Nothing the file asks for is run against real data. Each statement is parsed and analyzed
(``QueryExecution`` in ``SKIP`` mode: commands such as CTAS and INSERT are analyzed, never
executed); a query is walked as a read by the driver, a write as the write it would be. Only
statements that change the session's own catalog are run there, so the ones after them see
their effect: CREATE DATABASE/TABLE/VIEW (temporary or not), USE, SET, DROP, ALTER TABLE.
A CTAS defines its table, empty, once walked.

The datasets a statement reads are defined when Spark asks for them: a table the store knows
becomes an empty table of the throwaway warehouse with the recorded columns and types
(:mod:`~lineage_listener.preview.standins`); a path that does not exist here is stood in for
by a file in the throwaway folder, named back to the recorded path when the plan is walked:
empty with the recorded schema (parquet, orc), one line naming the recorded columns (csv,
json: Spark reads them as strings), else an empty folder (enough for a read that gives its
schema); a path that exists is read as Spark reads it. ``--schema``
statements (Spark DDL: CREATE TABLE, CREATE TEMPORARY VIEW ... USING ...) run first and
define what the store does not know. Edges name the datasets as capture names them
(``docs/reference/datasets.md``), so a preview and a capture of the same SQL agree edge for
edge.

>>> p = preview(open_store("lineage.duckdb"), "INSERT INTO shop.report SELECT id, sum(x) FROM shop.t GROUP BY id")  # doctest: +SKIP
>>> [(e.target_column, e.source_column, e.transform) for _, e in p.edges()]                                     # doctest: +SKIP
[('id', 'id', 'identity'), ('total', 'x', 'aggregate'), (None, 'id', 'group_by')]
"""
from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lineage_listener.capture.reading.queryreader import QueryReader
from lineage_listener.preview import session as local
from lineage_listener.govern.sides import DistinctEdge
from lineage_listener.preview.sqlfile import Statement, qualified, replace_path, statements
from lineage_listener.preview.standins import checked_schema, ddl_name, relocate, schema_json
from lineage_listener.lineage import column_path
from lineage_listener.lineage.query import lineage
from lineage_listener.redact import redact_row, redact_text
from lineage_listener.plan.classes import WRITE_COMMANDS
from lineage_listener.query.names import closest
from lineage_listener.query.store import LineageStore

log = logging.getLogger(__name__)

#: Analyzed commands a preview runs in its session: they change only that session's catalog or settings.
SESSION_COMMANDS = frozenset({
    "CreateDataSourceTableCommand", "CreateTableCommand", "CreateTable", "CreateTableLikeCommand",
    "CreateNamespace", "SetCatalogAndNamespace", "SetNamespaceCommand", "SetCatalogCommand", "SetCommand",
    "ResetCommand", "CreateViewCommand", "CreateTempViewUsing", "DropTable", "DropTableCommand", "DropNamespace",
    "AlterTableAddColumnsCommand", "AddColumns", "AlterTableRenameCommand", "RenameTable", "DropColumns",
    "RenameColumn", "AlterColumn", "AlterColumns", "CreateVariable", "SetVariable", "DropVariable",
})
#: Writes that create their target table (a CTAS): once walked, the table is defined, empty.
CREATES_TARGET = frozenset({"CreateDataSourceTableAsSelectCommand", "CreateHiveTableAsSelectCommand",
                            "OptimizedCreateHiveTableAsSelectCommand", "CreateTableAsSelect",
                            "ReplaceTableAsSelect"})
#: Writes that define a view: once walked, the view is created in the session.
DEFINES_VIEW = frozenset({"CreateViewCommand", "AlterViewAsCommand"})
#: Writes into a folder: their target is the folder (capture names it from the nested write).
DIRECTORY_WRITES = frozenset({"InsertIntoDataSourceDirCommand", "InsertIntoHiveDirCommand"})
#: Formats a missing path can stand in for with an empty file of the recorded schema.
SCHEMA_FILE_FORMATS = frozenset({"parquet", "orc"})
#: Text formats whose stand-in is one line naming the recorded top-level columns (read as strings).
TEXT_FORMATS: dict[str, Callable[[list[str]], str]] = {
    "csv": lambda names: ",".join('"' + n.replace('"', '""') + '"' for n in names) + "\n",
    "json": lambda names: json.dumps(dict.fromkeys(names)) + "\n",
}
_COMMAND = "org.apache.spark.sql.catalyst.plans.logical.Command"
#: The walker's logger: what it notes about a plan goes into the statement's note instead.
WALKER_LOG = "lineage_listener.lineage.walker"
_MAX_DEFINES = 500


class PreviewError(ValueError):
    """The SQL cannot be previewed as given (unknown table, bad DDL, not Spark SQL...): one line."""


@dataclass(frozen=True)
class StatementLineage:
    """What a preview made of one statement.

    ``status``: ``lineage`` (analyzed and walked), ``ran`` (run in the session: it changes only
    the session's catalog or settings) or ``skipped`` (neither: e.g. CACHE TABLE, ANALYZE).
    """

    index: int
    line: int
    sql: str
    status: str
    command: str | None = None
    target: str | None = None
    edges: tuple[DistinctEdge, ...] = ()
    note: str | None = None
    write_mode: str | None = None   # what the write would do to its target's data (lineage/writes.py)

    def data(self) -> dict[str, Any]:
        sql = redact_text(self.sql)  # as capture stores SQL text: OPTIONS (password ...) and the like hidden
        return {"statement": self.index, "line": self.line, "status": self.status, "command": self.command,
                "target": self.target, "write_mode": self.write_mode, "edges": len(self.edges), "note": self.note,
                "sql": sql if len(sql) <= 200 else sql[:199] + "…"}


@dataclass(frozen=True)
class Preview:
    """The lineage of a file of statements; ``defined``: the datasets stood in from the store."""

    source: str
    statements: tuple[StatementLineage, ...]
    defined: tuple[dict[str, Any], ...] = ()
    seconds: Mapping[str, float] = field(default_factory=dict)

    def edges(self) -> list[tuple[int, DistinctEdge]]:
        """``(statement index, edge)`` of every statement, in file order."""
        return [(s.index, e) for s in self.statements for e in s.edges]

    def write_modes(self) -> dict[int, str | None]:
        """Each statement's write mode, by statement index."""
        return {s.index: s.write_mode for s in self.statements}


def edge_data(index: int, e: DistinctEdge, write_mode: str | None = None) -> dict[str, Any]:
    """An edge of a preview as JSON: the store's columns, the statement it comes from and what that
    statement's write does to its target (``write_mode``)."""
    return {"target_dataset": e.target_dataset, "target_column": e.target_column,
            "source_dataset": e.source_dataset, "source_column": e.source_column, "transform": e.transform,
            "kind": e.kind, "expression": e.expression, "masking": e.masking, "statement": index,
            "write_mode": write_mode}


def preview(store: LineageStore, sql: str, schema: str | None = None, app: str | None = None,
            conf: Mapping[str, str] | None = None, source: str = "the SQL") -> Preview:
    """The lineage of the statements of ``sql``, analyzed against ``store``'s recorded schemas.

    ``schema``: Spark DDL run first (CREATE TABLE / CREATE TEMPORARY VIEW ... USING / CREATE
    DATABASE), for tables the store does not know. ``app``: the application name the SQL will
    run under (in-memory data such as ``VALUES`` is named after it, as capture names it).
    ``conf``: Spark SQL settings of that application (``spark.sql.ansi.enabled``...).
    Raises :class:`PreviewError` for SQL that cannot be previewed, with the statement and line.
    """
    started = time.perf_counter()
    todo = statements(sql)
    if not todo:
        raise PreviewError(f"{source} holds no SQL statement")
    ddl = statements(schema) if schema is not None else []
    if schema is not None and not ddl:
        raise PreviewError("the --schema file holds no SQL statement")
    walker_log = logging.getLogger(WALKER_LOG)
    level = walker_log.level
    walker_log.setLevel(logging.ERROR)  # what a walk notes is in the statement's note, not on stderr
    try:
        return _preview(store, todo, ddl, app, conf, source, started)
    finally:
        walker_log.setLevel(level)


def _preview(store: LineageStore, todo: list[Statement], ddl: list[Statement], app: str | None,
             conf: Mapping[str, str] | None, source: str, started: float) -> Preview:
    with tempfile.TemporaryDirectory(prefix="lineage-preview-") as tmp:
        workdir = Path(tmp)
        with local.local_session(workdir, app or "lineage-preview", conf) as spark:
            up = time.perf_counter()
            ws = _Workspace(spark, store, workdir, app or "lineage-preview")
            for st in ddl:
                try:
                    done = ws.statement(st, schema_only=True)
                except PreviewError as exc:
                    raise PreviewError(f"--schema {exc}") from None
                if done.status != "ran":
                    raise PreviewError(f"--schema {st.where()} is not DDL ({done.command}): it may only "
                                       "create databases, tables and views")
            results = tuple(ws.statement(st) for st in todo)
            end = time.perf_counter()
    return Preview(source, results, tuple(ws.defined),
                   {"spark_start": round(up - started, 3), "analysis": round(end - up, 3),
                    "total": round(end - started, 3)})


class _Workspace:
    """The session, its stand-ins, and the store they are read from."""

    def __init__(self, spark: Any, store: LineageStore, workdir: Path, scope: str) -> None:
        self.spark = spark
        self.store = store
        self.workdir = workdir
        self.scope = scope
        self.jvm = spark._jvm
        self.state = spark._jsparkSession.sessionState()
        self.skip = getattr(getattr(self.jvm.org.apache.spark.sql.execution, "CommandExecutionMode$"),
                            "MODULE$").SKIP()
        self.standins: dict[str, str] = {}  # stand-in location -> the recorded path it stands for
        self.defined: list[dict[str, Any]] = []
        self.reader = QueryReader()

    # -- one statement ---------------------------------------------------------------------

    def statement(self, st: Statement, schema_only: bool = False) -> StatementLineage:
        qe, text = self._retry(st, st.text, self._analyze)
        plan = qe.analyzed()
        root = str(plan.nodeName())
        is_command = bool(self.jvm.java.lang.Class.forName(_COMMAND, False, plan.getClass().getClassLoader())
                          .isInstance(plan))
        if is_command and root not in WRITE_COMMANDS or schema_only and root in SESSION_COMMANDS:
            if root not in SESSION_COMMANDS:
                return StatementLineage(st.index, st.line, st.text, "skipped", root,
                                        note="no lineage, and not run: it would act outside the session")
            self._retry(st, text, self._run)
            return StatementLineage(st.index, st.line, st.text, "ran", root)
        if schema_only:
            return StatementLineage(st.index, st.line, st.text, "skipped", root)
        env = self.reader.read("command" if is_command else "collect", qe, None)
        if env is None:  # a temporary view: no dataset is written
            if root in SESSION_COMMANDS:
                self._retry(st, text, self._run)
                return StatementLineage(st.index, st.line, st.text, "ran", root)
            return StatementLineage(st.index, st.line, st.text, "skipped", root, note="no lineage")
        if env.plan is None:
            raise PreviewError(f"{st.where()}: its plan could not be read: {env.read_error}")
        leaves = {k: relocate(v, self.standins) for k, v in env.leaves.items()}
        target = relocate(env.target, self.standins) if env.target else self._directory(plan, root)
        result = lineage(env.plan.root, leaves, target, scope=self.scope)
        name = result.target.name if result.target is not None else None
        edges = tuple(dict.fromkeys(DistinctEdge(*redact_row((name, e.target_column, e.source.dataset, e.source.name,
                                                      e.transform.value, e.kind, e.expression, bool(e.masking))))
                                    for e in result.edges))
        if root in CREATES_TARGET and name is not None:
            self._define_written(name, result.columns)
        elif root in DEFINES_VIEW:
            self._retry(st, text, self._run)
        notes = [*result.problems]
        if result.fallbacks:
            notes.append("plan nodes without a handler, every output derived from every input: "
                         + ", ".join(sorted(result.fallbacks)))
        note = "; ".join(notes) or None
        return StatementLineage(st.index, st.line, st.text, "lineage", root, name, edges, note, result.write_mode)

    def _analyze(self, text: str) -> Any:
        qe = self.state.executePlan(self.state.sqlParser().parsePlan(text), self.skip)
        qe.analyzed()
        return qe

    def _run(self, text: str) -> None:
        self.spark.sql(text)

    def _retry(self, st: Statement, text: str, step: Callable[[str], Any]) -> tuple[Any, str]:
        """``step(text)``, defining each dataset Spark reports missing and trying again."""
        for _ in range(_MAX_DEFINES):
            try:
                return step(text), text
            except Exception as exc:  # noqa: BLE001 - Spark's errors arrive as PySpark exceptions
                condition, params, message = _problem(exc)
                if condition == "TABLE_OR_VIEW_NOT_FOUND" and params.get("relationName"):
                    self._define_table(st, params["relationName"])
                elif condition == "PATH_NOT_FOUND" and params.get("path"):
                    text = self._define_path(st, text, params["path"])
                elif condition == "SCHEMA_NOT_FOUND" and params.get("schemaName"):
                    self._define_database(st, params["schemaName"])
                elif condition is not None and condition.startswith("PARSE_"):
                    raise PreviewError(f"{st.where()} is not Spark SQL: {message}") from None
                else:
                    raise PreviewError(f"{st.where()}: Spark cannot analyze it: {message}") from None
        raise PreviewError(f"{st.where()} reads more than {_MAX_DEFINES} datasets")

    # -- stand-ins -------------------------------------------------------------------------

    def _parts(self, relation: str) -> list[str]:
        parts = column_path.split(relation)
        catalog = self.spark.catalog.currentCatalog()
        if len(parts) == 1:
            parts = [catalog, self.spark.catalog.currentDatabase(), parts[0]]
        elif len(parts) == 2:
            parts = [catalog, *parts]
        return parts

    def _columns(self, dataset: str) -> tuple[list[tuple[str, Any, Any]], str | None]:
        """The recorded columns of ``dataset`` in schema order, and its recorded format."""
        with self.store.connect() as con:
            rows = con.execute("""SELECT column_name, data_type, nullable FROM dataset_columns WHERE dataset = $d
                                  ORDER BY ordinal NULLS LAST, first_seen, column_name""", {"d": dataset}).fetchall()
            fmt = con.execute("SELECT format FROM datasets WHERE dataset = $d", {"d": dataset}).fetchone()
            if not rows:  # known from edges only (e.g. an OpenLineage event without a schema facet)
                rows = [(r[0], None, True) for r in con.execute(
                    """SELECT DISTINCT c FROM (SELECT target_column AS c FROM edges WHERE target_dataset = $d
                       UNION SELECT source_column FROM edges WHERE source_dataset = $d) WHERE c IS NOT NULL
                       ORDER BY c""", {"d": dataset}).fetchall()]
        return [tuple(r) for r in rows], fmt[0] if fmt else None

    def _unknown(self, st: Statement, what: str, name: str, fix: str) -> PreviewError:
        with self.store.connect() as con:
            known = [r[0] for r in con.execute("SELECT dataset FROM datasets").fetchall()]
        hint = closest(name, known)
        return PreviewError(f"{st.where()}: unknown {what} {name}: the store {self.store.path} does not know it"
                            + (f" (closest known: {', '.join(hint)})" if hint else "") + f"; {fix}")

    def _define_table(self, st: Statement, relation: str) -> None:
        parts = self._parts(relation)
        if any(d["dataset"] in (".".join(parts), ".".join(parts).lower()) for d in self.defined):
            raise PreviewError(f"{st.where()}: Spark still cannot find {relation} once defined from the store")
        if parts[0] != "spark_catalog":
            raise PreviewError(f"{st.where()}: table {'.'.join(parts)} is in catalog {parts[0]}: a preview defines "
                               "tables of the session catalog (spark_catalog) only")
        name = ".".join(parts)
        rows, _ = self._columns(name)
        if not rows and name != name.lower():
            name = name.lower()
            rows, _ = self._columns(name)
        if not rows:
            raise self._unknown(st, "table", name, "define it with --schema (CREATE TABLE ... or CREATE "
                                "TEMPORARY VIEW ... USING ...)")
        self._create_table(name.split(".", 2), rows, "store")

    def _create_table(self, parts: list[str], rows: list[tuple[str, Any, Any]], origin: str) -> None:
        jschema, replaced = checked_schema(self.jvm, schema_json(rows))
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {ddl_name(parts[:2])}")
        self.spark._jsparkSession.catalog().createTable(ddl_name(parts), "parquet", jschema,
                                                         self.jvm.java.util.HashMap())
        self.defined.append({"dataset": ".".join(parts), "as": "table", "from": origin, "columns": len(rows),
                             "columns_as_string": replaced})

    def _define_written(self, name: str, columns: Mapping[tuple[str, str], Any]) -> None:
        """The table a CTAS creates, empty, with the columns the walk says it writes."""
        parts = name.split(".", 2)
        if self.spark._jsparkSession.catalog().tableExists(ddl_name(parts)):
            return
        rows = [(col, a.data_type, a.nullable) for (ds, col), a in columns.items() if ds == name]
        self._create_table(parts, rows, "statement")

    def _define_database(self, st: Statement, schema: str) -> None:
        parts = column_path.split(schema)
        db = parts[-1]
        with self.store.connect() as con:
            known = con.execute("SELECT 1 FROM datasets WHERE dataset LIKE $p LIMIT 1",
                                {"p": f"spark_catalog.{db}.%"}).fetchone()
        if not known:
            raise self._unknown(st, "database", db, "create it in the file or in --schema (CREATE DATABASE ...)")
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {ddl_name([db])}")

    def _define_path(self, st: Statement, text: str, path: str) -> str:
        name = qualified(path)
        rows, fmt = self._columns(name)
        if not rows and fmt is None:
            raise self._unknown(st, "path", name, "it does not exist here either: run the preview where it does, "
                                "or read it through a table defined with --schema")
        standin = self.workdir / "paths" / f"p{len(self.standins) + 1}"
        replaced: list[str] = []
        if rows and (fmt or "parquet") in SCHEMA_FILE_FORMATS:
            jschema, replaced = checked_schema(self.jvm, schema_json(rows))
            empty = self.spark._jsparkSession.createDataFrame(self.jvm.java.util.ArrayList(), jschema)
            empty.write().format(fmt or "parquet").save(str(standin))
        else:  # a folder; a text format gets the recorded names (Spark infers them, as strings)
            standin.mkdir(parents=True)
            names = [column_path.split(r[0])[0] for r in rows if len(column_path.split(r[0])) == 1]
            if names and fmt in TEXT_FORMATS:
                (standin / f"part-00000.{fmt}").write_text(TEXT_FORMATS[fmt](names), encoding="utf-8")
                replaced = [n for n, t, _ in rows if n in names and t not in (None, "string")]
        self.standins[qualified(str(standin))] = name
        self.defined.append({"dataset": name, "as": "path", "from": "store", "columns": len(rows),
                             "columns_as_string": replaced})
        replaced_text = replace_path(text, path, str(standin))
        if replaced_text == text:
            raise PreviewError(f"{st.where()}: Spark reads the missing path {name}, which the statement does not "
                               "name (a table's location?): run the preview where it exists")
        return replaced_text

    def _directory(self, plan: Any, root: str) -> dict[str, Any] | None:
        """The folder an INSERT OVERWRITE DIRECTORY writes, as a relation fact."""
        if root not in DIRECTORY_WRITES:
            return None
        location = plan.storage().locationUri()
        if not location.isDefined():
            return None
        fmt = str(plan.provider()) if root == "InsertIntoDataSourceDirCommand" else "hive"
        return {"paths": [qualified(str(location.get().toString()))], "format": fmt}


def _problem(exc: BaseException) -> tuple[str | None, dict[str, str], str]:
    """Spark's error condition, its parameters and first line, from a PySpark exception."""
    condition = None
    for getter in ("getCondition", "getErrorClass"):
        fn = getattr(exc, getter, None)
        if fn is not None:
            try:
                condition = fn()
                break
            except Exception:  # noqa: BLE001
                continue
    try:
        params = dict(exc.getMessageParameters() or {})  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001
        params = {}
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return condition, params, redact_text(lines[0] if lines else type(exc).__name__)
