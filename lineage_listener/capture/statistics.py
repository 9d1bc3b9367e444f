"""What a query's write produced and how many rows it read, as Spark measured them while running it.

Spark keeps these counts in the executed physical plan's metrics: a write command's
``numOutputRows``, ``numOutputBytes`` and ``numFiles``; a file scan's ``numOutputRows``,
``filesSize`` and ``numFiles`` (rows after partition pruning and the source's own filters). The
bridge jar's plan reader reads them in the same JVM call as the plan (``Metrics.java``: no call of
its own); without it, the write's counts are read here by a few py4j calls per write, and the
reads' are not read. They become ``write_statistics`` and ``read_statistics`` rows
(``docs/reference/store.md``).

>>> stats = {"write": {"rows": 3, "bytes": 900, "files": 1}, "reads": [[7, 10, 2024, 2]]}
>>> leaves = {7: {"table": {"catalog": "spark_catalog", "database": "db", "table": "t"}}}
>>> [tuple(r) for r in rows("q1", "spark_catalog.db.u", stats, leaves)]
[('q1', 3, 900, 1), ('q1', 'spark_catalog.db.t', 10, 2024, 2)]
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lineage_listener import redact
from lineage_listener.capture.jvm import jvm_call_failed
from lineage_listener.store.rows import ReadStatisticsRow, WriteStatisticsRow

log = redact.logger(__name__)

#: Physical nodes whose metrics are the write's (``Metrics.java`` names the same).
WRITES = frozenset({"DataWritingCommandExec", "AppendDataExec", "AppendDataExecV1", "OverwriteByExpressionExec",
                    "OverwriteByExpressionExecV1", "OverwritePartitionsDynamicExec", "ReplaceDataExec",
                    "WriteDeltaExec", "CreateTableAsSelectExec", "AtomicCreateTableAsSelectExec",
                    "ReplaceTableAsSelectExec", "AtomicReplaceTableAsSelectExec"})
#: Write metric -> its statistic.
WRITE_METRICS = {"numOutputRows": "rows", "numOutputBytes": "bytes", "numFiles": "files"}


def of_write(qe: Any) -> dict[str, Any] | None:
    """The write's counts of ``qe`` by py4j calls (the plan reader reads them with the plan):
    ``{"write": {"rows", "bytes", "files"}}``, or None when its executed plan is no write Spark measured."""
    try:
        node = qe.executedPlan()
        if str(node.getClass().getSimpleName()) not in WRITES:
            return None
        metrics = node.metrics()
        write = {}
        for name, key in WRITE_METRICS.items():
            metric = metrics.get(name)
            value = metric.get().value() if metric is not None and metric.isDefined() else None
            write[key] = int(value) if value is not None else None
    except jvm_call_failed() as exc:
        log.debug("lineage-listener: could not read a write's metrics: %s", exc)
        return None
    return {"write": write} if write.get("rows") is not None else None


def rows(query_id: str, target: str | None, statistics: Mapping[str, Any] | None,
         leaves: Mapping[int, Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """The ``write_statistics`` row of a query that wrote ``target``, and its ``read_statistics``
    rows: each scanned leaf (by the key the plan reader gives it) named as the walk names it; a leaf
    naming several datasets (several root paths) says nothing of each, and is left out."""
    if not statistics:
        return []
    from lineage_listener.lineage.datasets import datasets_of  # the walk's naming, loaded with the recorder

    out: list[tuple[Any, ...]] = []
    write = statistics.get("write")
    if target is not None and isinstance(write, Mapping) and write.get("rows") is not None:
        out.append(WriteStatisticsRow(query_id=query_id, rows=_int(write.get("rows")), bytes=_int(write.get("bytes")),
                                      files=_int(write.get("files"))))
    read: dict[str, list[int | None]] = {}
    for key, count, size, files in statistics.get("reads") or ():
        fact = leaves.get(int(key))
        names = [d.name for d in datasets_of(fact)] if fact else []
        if len(names) != 1:
            continue
        total = read.setdefault(names[0], [0, None, None])
        total[0] = (total[0] or 0) + (_int(count) or 0)
        total[1] = _add(total[1], _int(size))
        total[2] = _add(total[2], _int(files))
    for dataset, (count, size, files) in read.items():
        out.append(ReadStatisticsRow(query_id=query_id, dataset=dataset, rows=count, bytes=size, files=files))
    return out


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _add(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b
