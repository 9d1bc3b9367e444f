"""Files read or written by path: ``HadoopFsRelation`` reads, ``InsertIntoHadoopFsRelationCommand``
writes, and the paths a stream's file source or sink prints."""
from __future__ import annotations

import re
from typing import Any

from lineage_listener.capture.jvm import jvm_call_failed, opt, private_field, scala_map, seq
from lineage_listener.capture.reading.readers import delta
from lineage_listener.capture.reading.readers.catalog import catalog_table
from lineage_listener.capture.reading.readers.registry import RELATIONS, TARGETS, Current, reads
from lineage_listener.lineage.datasets import RelationFact

#: ``FileSink[file:/x]``, ``FileStreamSource[file:/x]``, ``DeltaSink[s3a://b/t]``: a path in brackets.
_BRACKETED = re.compile(r"^\w+\[(?P<uri>[^\]\s,]+)\]$")


def qualify(path: str) -> str:
    """A path with its scheme (``file:`` when it has none).

    >>> qualify("/data/x"), qualify("s3a://b/x")
    ('file:/data/x', 's3a://b/x')
    """
    return path if ":" in path.split("/", 1)[0] else f"file:{path}"


def root_paths(index: Any) -> list[str]:
    """The qualified root paths of a ``FileIndex``."""
    return [qualify(str(p.toString())) for p in seq(index.rootPaths())]


@reads(RELATIONS, "HadoopFsRelation")
def hadoop_fs(rel: Any, fact: RelationFact) -> None:
    """Files read through a ``FileIndex`` (a Delta table's files read as Delta)."""
    fact["paths"] = root_paths(rel.location())
    try:
        fact["format"] = fact.get("format") or str(rel.fileFormat().shortName())
    except jvm_call_failed():
        fact["format"] = fact.get("format") or str(rel.fileFormat().toString()).lower()
    fact["options"] = scala_map(rel.options())
    delta.snapshot_read(rel, fact)


@reads(TARGETS, "InsertIntoHadoopFsRelationCommand")
def file_write(cmd: Any, current: Current) -> RelationFact:
    """Files written by path, or into the catalog table they belong to."""
    table = opt(cmd.catalogTable())
    fact = catalog_table(table, current) if table is not None else {}
    path = qualify(str(cmd.outputPath().toString()))
    fact.setdefault("location", path)
    if "table" not in fact:
        fact["paths"] = [path]
    try:
        fact["format"] = fact.get("format") or str(cmd.fileFormat().shortName())
    except jvm_call_failed():
        pass
    fact["options"] = scala_map(cmd.options())
    fact["mode"] = str(cmd.mode().toString())
    fact["partitions_only"] = partitions_only(cmd)
    return fact


def partitions_only(cmd: Any) -> bool:
    """Whether an overwrite replaces only some partitions: it names a static partition spec, or
    Spark overwrites the partitions it writes (a dynamic partition overwrite)."""
    try:
        return str(cmd.mode().toString()) == "Overwrite" and cmd.partitionColumns().size() > 0 and (
            bool(cmd.dynamicPartitionOverwrite()) or cmd.staticPartitions().size() > 0)
    except jvm_call_failed():
        return False


def bracketed(obj: Any) -> str | None:
    """The qualified path a stream's file source or sink prints in brackets, or None."""
    try:
        m = _BRACKETED.match(str(obj.toString()))
    except jvm_call_failed():
        return None
    return qualify(m.group("uri")) if m else None  # 3.5 prints a file sink's path as given


def sink_format(sink: Any) -> str | None:
    """The file format of a stream's file sink."""
    try:
        return str(sink.fileFormat().shortName())
    except jvm_call_failed():  # 3.5: a private field
        pass
    try:
        return str(private_field(sink, "fileFormat").shortName())
    except (*jvm_call_failed(), AttributeError):
        return None
