"""Fact readers: what the capture reads from live JVM objects about datasets, one module per family.

The plan JSON leaves out what lineage needs most (a path-based ``LogicalRelation`` serialises
``"relation": null``, write commands leave out their output path), so these readers ask the JVM,
a few py4j calls per leaf or target, and return a
:class:`~lineage_listener.lineage.datasets.RelationFact` (its keys are listed there, once).

Readers are registered by the Spark class they read (:mod:`.registry`), batch and streaming
alike, one home per kind of relation:

========================  ==============================================================
module                    reads
========================  ==============================================================
:mod:`.catalog`           catalog tables (Hive leaves, CTAS and Hive inserts), views
:mod:`.v1`                ``LogicalRelation`` (by its ``BaseRelation``), V1 saves and inserts
:mod:`.files`             ``HadoopFsRelation``, file writes, a stream's file source and sink paths
:mod:`.jdbc`              ``JDBCRelation``, JDBC saves
:mod:`.kafka`             ``KafkaRelation``, Kafka saves, ``kafka://`` names
:mod:`.dsv2`              ``DataSourceV2Relation`` / ``ScanRelation``, V2 writes, CTAS / RTAS
:mod:`.delta`             Delta reads' versions and labels, Delta MERGE / UPDATE / DELETE
:mod:`.iceberg`           the snapshot an Iceberg read is pinned to
:mod:`.streaming`         ``StreamingRelation`` / ``V2`` sources, micro-batch sinks
========================  ==============================================================

These Python readers are the reference. The bridge jar's ``Facts`` (``jvm_bridge/``) reads the
common leaves and targets (catalog tables, files by path) inside the plan reader's one JVM call,
to the same rules, and leaves every other kind to these readers; ``tests/test_plan_reader.py``
checks both give the same facts on the same plans.

A failed JVM call (:func:`~lineage_listener.capture.jvm.jvm_call_failed`) means no fact: the
readers catch it where a fact is optional, and the callers
(:func:`lineage_listener.capture.reading.facts.resolve`, :func:`.streaming.source_facts`) skip a leaf
that cannot be read with one debug line; the query is captured without that name.
"""
from __future__ import annotations

from lineage_listener.capture.reading.readers import (catalog, delta, dsv2, files, iceberg, jdbc,  # noqa: F401 - registers
                                              kafka, streaming, v1)
from lineage_listener.capture.reading.readers.registry import relation, target_of

__all__ = ["relation", "target_of"]
