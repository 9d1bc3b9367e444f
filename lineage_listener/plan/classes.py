"""Families of Spark plan classes, each listed once (walker, fact readers and writers share them)."""
from __future__ import annotations

#: DataSource V2 leaves (a ``DataSourceV2ScanRelation`` wraps the ``DataSourceV2Relation`` it scans).
V2_LEAVES = frozenset({"DataSourceV2Relation", "DataSourceV2ScanRelation"})

#: Leaves that read a data source the capture names from the JVM (tables, files, DSv2).
SOURCE_LEAVES = frozenset({"LogicalRelation", "HiveTableRelation"}) | V2_LEAVES

#: Every leaf the walker treats as a dataset (the source leaves plus in-memory and streaming ones).
LEAVES = tuple(sorted(SOURCE_LEAVES)) + (
    "LocalRelation", "Range", "LogicalRDD", "OneRowRelation", "InMemoryRelation", "StreamingRelation",
    "StreamingRelationV2", "StreamingDataSourceV2Relation", "ExternalRDD", "LogicalQueryStage",
    "ResolvedDataSourceScan", "StreamingExecutionRelation", "UnresolvedCatalogRelation")

#: Commands that write data somewhere; anything else with funcName "command" is DDL/utility.
WRITE_COMMANDS = frozenset({
    "InsertIntoHadoopFsRelationCommand", "InsertIntoHiveTable", "InsertIntoHiveDirCommand",
    "InsertIntoDataSourceCommand", "InsertIntoDataSourceDirCommand", "SaveIntoDataSourceCommand",
    "CreateDataSourceTableAsSelectCommand", "CreateHiveTableAsSelectCommand",
    "OptimizedCreateHiveTableAsSelectCommand", "SaveAsV1TableCommand", "CreateViewCommand",
    "AlterViewAsCommand", "AppendData", "OverwriteByExpression", "OverwritePartitionsDynamic",
    "CreateTableAsSelect", "ReplaceTableAsSelect", "ReplaceData", "WriteDelta", "MergeIntoTable",
    "MergeIntoCommand", "UpdateCommand", "DeleteCommand", "DeltaDynamicPartitionOverwriteCommand",
    "WriteToMicroBatchDataSource", "WriteToMicroBatchDataSourceV1",  # a stream's sink (capture/reading/streams.py)
})

#: The root of a multi-insert (``FROM t INSERT INTO a SELECT .. INSERT INTO b SELECT ..``) Spark 4
#: runs as one query: a ``Union`` of its write commands (``capture/multiwrite.py``).
MULTI_WRITE = "Union"

#: Writes whose target is the catalog table they carry (``table`` or ``tableDesc``): V1 and Hive.
CATALOG_TABLE_WRITES = frozenset({"CreateDataSourceTableAsSelectCommand", "CreateHiveTableAsSelectCommand",
                                  "OptimizedCreateHiveTableAsSelectCommand", "InsertIntoHiveTable",
                                  "SaveAsV1TableCommand"})

#: DataSource V2 writes into an existing table (their ``table`` is a ``DataSourceV2Relation``).
V2_WRITES = frozenset({"AppendData", "OverwriteByExpression", "OverwritePartitionsDynamic", "ReplaceData",
                       "WriteDelta", "DeltaDynamicPartitionOverwriteCommand"})

#: DataSource V2 commands that create (or replace) the table they write.
V2_CREATE_WRITES = frozenset({"CreateTableAsSelect", "ReplaceTableAsSelect"})

#: Delta's own MERGE / UPDATE / DELETE commands (their ``target`` plan holds the table).
DELTA_ROW_LEVEL_COMMANDS = frozenset({"MergeIntoCommand", "UpdateCommand", "DeleteCommand"})

#: Source leaves of a stream's analyzed plan: a V1 ``DataSource``, a V2 table or connector.
STREAM_SOURCES = frozenset({"StreamingRelation", "StreamingRelationV2"})

#: Row-level writes (MERGE / UPDATE / DELETE): the command itself is walked, not a query it carries
#: (:mod:`lineage_listener.lineage.rowlevel`). Delta's commands, then DataSource V2's.
ROW_LEVEL_COMMANDS = DELTA_ROW_LEVEL_COMMANDS | {"ReplaceData", "WriteDelta"}

#: Commands whose plans are fields, not children (Delta's): where the capture finds their leaves.
NESTED_PLAN_FIELDS: dict[str, tuple[str, ...]] = {
    "MergeIntoCommand": ("target", "source"), "UpdateCommand": ("target",), "DeleteCommand": ("target",),
}

#: Format-internal work (never user lineage): actions table formats name themselves, the
#: folder of Delta's transaction log, and columns only Delta's own plans carry.
FORMAT_INTERNAL_ACTIONS = ("deltaTransactionalWrite", "Cache Delta Table State", "Delta:", "delta.")
DELTA_LOG_DIR = "/_delta_log"
#: Delta's log-replay leaves (actions, AddFile rows), VACUUM's file listing (SerializableFileStatus)
#: and its touched-file bookkeeping columns.
DELTA_ACTION_COLUMNS = (frozenset({"add", "remove", "metaData", "protocol"}),
                        frozenset({"path", "partitionValues", "size", "modificationTime", "dataChange"}),
                        frozenset({"path", "length", "isDir", "modificationTime"}))
DELTA_INTERNAL_COLUMNS = frozenset({"_file_name_", "_row_id_", "_source_row_present_", "_target_row_present_",
                                    "_row_dropped_"})
#: The expression Delta's touched-file search reads (``input_file_name()``).
INPUT_FILE_NAME = "InputFileName"
#: The leaf holding a stream's micro-batch in a ``foreachBatch`` function's plans.
MICRO_BATCH_LEAF = "LogicalRDD"

#: Commands that declare, set or drop SQL variables (``DECLARE VARIABLE``, ``SET VAR``, ``DROP TEMPORARY
#: VARIABLE``): no write, but a value the session's later statements may read.
VARIABLE_COMMANDS = frozenset({"CreateVariable", "SetVariable", "DropVariable"})
#: The expression naming a SQL variable in a plan.
VARIABLE_REFERENCE = "VariableReference"

#: Commands that wrap a nested write of the same logical operation (they fire after it).
WRAPPER_COMMANDS = frozenset({
    "CreateDataSourceTableAsSelectCommand", "CreateHiveTableAsSelectCommand",
    "OptimizedCreateHiveTableAsSelectCommand", "SaveAsV1TableCommand", "CreateTableAsSelect",
    "ReplaceTableAsSelect", "InsertIntoDataSourceDirCommand",
})

#: The grouping-set bitmask column an ``Expand`` adds for GROUPING SETS / ROLLUP / CUBE.
GROUPING_ID = "spark_grouping_id"

#: Fields of plan nodes that hold the expressions the walk reads: a null there (``toJSON``
#: writes null for a ``Seq`` it cannot convert, such as a Scala ``Vector`` of rows) loses
#: lineage, so the capture reads it from the JVM object and the walk records it.
EXPRESSION_FIELDS: dict[str, tuple[str, ...]] = {
    "Project": ("projectList",),
    "Filter": ("condition",),
    "Sort": ("order",),
    "Aggregate": ("groupingExpressions", "aggregateExpressions"),
    "Window": ("windowExpressions", "partitionSpec", "orderSpec"),
    "Generate": ("generator", "generatorOutput"),
    "Expand": ("projections", "output"),
    "Deduplicate": ("keys",),
    "CTERelationRef": ("output",),
}

#: Marker field the capture adds to a plan node whose listed fields it read from the JVM.
READ_FROM_JVM = "lineage-listener:read-from-jvm"

#: Roots of a streaming query's plan: the sink write over the stream's query (its child).
STREAM_SINK_WRITES = frozenset({"WriteToMicroBatchDataSource", "WriteToMicroBatchDataSourceV1"})

#: Stateful streaming operators running user code per group (their outputs derive from what they read).
STATEFUL_USER_OPERATORS = ("FlatMapGroupsWithState", "FlatMapGroupsInPandasWithState", "TransformWithState",
                           "TransformWithStateInPandas", "TransformWithStateInPySpark")
