"""The shape of what ingest reads from an OpenLineage event, checked against the spec's types.

Only the fields ingest uses are checked (a producer's other facets pass untouched), with
the types the OpenLineage JSON Schemas give them (``OpenLineage.json`` 2-0-2,
``ColumnLineageDatasetFacet`` 1-2-0, ``SchemaDatasetFacet``, ``ParentRunFacet``,
``ErrorMessageRunFacet``, ``SQLJobFacet``, ``SymlinksDatasetFacet``; ``JobEvent`` and
``DatasetEvent`` as well as ``RunEvent``). A mismatch is a :class:`BadEvent` naming its
JSON path, e.g. ``outputs[0].facets.columnLineage.fields: expected an object, got a string``.

>>> check({"run": {"runId": "r"}, "job": {"namespace": "n", "name": "j"},
...        "outputs": [{"namespace": "s3://b", "name": "k", "facets": {"columnLineage": {"fields": []}}}]})
Traceback (most recent call last):
...
lineage_listener.openlineage.validate.BadEvent: outputs[0].facets.columnLineage.fields: expected an object, got a list
>>> check({"job": {"namespace": "n", "name": "j"}, "eventTime": "2025-06-01T09:00:00Z"})  # a JobEvent
>>> check({"eventType": "START"})
Traceback (most recent call last):
...
lineage_listener.openlineage.validate.BadEvent: run: required (an OpenLineage RunEvent has run and job)
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

#: The spec's event types (``eventType`` is optional).
EVENT_TYPES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")

_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "true or false", int: "a number",
          float: "a number", type(None): "null"}


class BadEvent(ValueError):
    """An event whose shape the spec does not allow, at a JSON path."""


def _type(value: Any) -> str:
    return _NAMES.get(type(value), type(value).__name__)


def _want(value: Any, kind: type, path: str, optional: bool = True) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise BadEvent(f"{path}: expected {_NAMES[kind]}, got {_type(value)}")
    return value


def _key(obj: dict, key: str, kind: type, path: str, optional: bool = True) -> Any:
    where = f"{path}.{key}" if path else key
    if key not in obj and not optional:
        raise BadEvent(f"{where}: required")
    return _want(obj.get(key), kind, where, optional)


def check(ev: Any) -> None:
    """Raise :class:`BadEvent` if ``ev`` is not a RunEvent (or Dataset/JobEvent) ingest can read."""
    _want(ev, dict, "(the event)", optional=False)
    if "run" not in ev:
        if "job" in ev:  # a JobEvent: static lineage of a job
            _job(ev)
            _datasets(ev)
        elif "dataset" in ev:  # a DatasetEvent: one dataset's metadata
            _dataset(ev["dataset"], "dataset")
        else:
            raise BadEvent("run: required (an OpenLineage RunEvent has run and job)")
        return
    run = _key(ev, "run", dict, "", optional=False)
    _key(run, "runId", str, "run", optional=False)
    job = _job(ev)
    state = _key(ev, "eventType", str, "")
    if state is not None and state.upper() not in EVENT_TYPES:
        raise BadEvent(f"eventType: {state!r} is not one of {', '.join(EVENT_TYPES)}")
    when = _key(ev, "eventTime", str, "")
    if when:
        try:
            datetime.fromisoformat(when.replace("Z", "+00:00"))
        except ValueError:
            raise BadEvent(f"eventTime: {when!r} is not an ISO 8601 date-time") from None
    run_facets = _key(run, "facets", dict, "run") or {}
    for name in ("lineage_listener", "parent", "processing_engine", "errorMessage"):
        _key(run_facets, name, dict, "run.facets")
    parent = run_facets.get("parent") or {}
    if _key(parent, "run", dict, "run.facets.parent"):
        _key(parent["run"], "runId", str, "run.facets.parent.run", optional=False)
    if _key(parent, "job", dict, "run.facets.parent"):
        _key(parent["job"], "name", str, "run.facets.parent.job")
    _key(run_facets.get("errorMessage") or {}, "message", str, "run.facets.errorMessage")
    for key in ("queryId", "runId", "action", "command", "status"):
        _key(run_facets.get("lineage_listener") or {}, key, str, "run.facets.lineage_listener")
    _datasets(ev)


def _job(ev: dict) -> dict:
    job = _key(ev, "job", dict, "", optional=False)
    _key(job, "namespace", str, "job", optional=False)
    _key(job, "name", str, "job", optional=False)
    job_facets = _key(job, "facets", dict, "job") or {}
    if _key(job_facets, "sql", dict, "job.facets"):
        _key(job_facets["sql"], "query", str, "job.facets.sql")
    return job


def _datasets(ev: dict) -> None:
    for side in ("inputs", "outputs"):
        for i, ds in enumerate(_key(ev, side, list, "") or []):
            _dataset(ds, f"{side}[{i}]")


def _dataset(ds: Any, path: str) -> None:
    _want(ds, dict, path, optional=False)
    _key(ds, "namespace", str, path, optional=False)
    _key(ds, "name", str, path, optional=False)
    facets = _key(ds, "facets", dict, path) or {}
    where = f"{path}.facets"
    if _key(facets, "schema", dict, where):
        _fields(_key(facets["schema"], "fields", list, f"{where}.schema") or [], f"{where}.schema.fields")
    if _key(facets, "symlinks", dict, where):
        for i, link in enumerate(_key(facets["symlinks"], "identifiers", list, f"{where}.symlinks") or []):
            at = f"{where}.symlinks.identifiers[{i}]"
            _want(link, dict, at, optional=False)
            for key in ("namespace", "name"):
                _key(link, key, str, at, optional=False)
            _key(link, "type", str, at)
    lineage = _key(facets, "columnLineage", dict, where)
    if lineage is None:
        return
    where = f"{where}.columnLineage"
    for target, spec in (_key(lineage, "fields", dict, where) or {}).items():
        at = f"{where}.fields.{target}"
        _want(spec, dict, at, optional=False)
        _key(spec, "transformationDescription", str, at)
        _key(spec, "transformationType", str, at)
        _inputs(_key(spec, "inputFields", list, at, optional=False), f"{at}.inputFields")
    _inputs(_key(lineage, "dataset", list, where) or [], f"{where}.dataset")


def _fields(fields: list, path: str) -> None:
    """A schema facet's fields, nested struct fields (``fields``) included."""
    for i, f in enumerate(fields):
        at = f"{path}[{i}]"
        _want(f, dict, at, optional=False)
        _key(f, "name", str, at, optional=False)
        _key(f, "type", str, at)
        _fields(_key(f, "fields", list, at) or [], f"{at}.fields")


def _inputs(fields: list, path: str) -> None:
    for i, f in enumerate(fields):
        at = f"{path}[{i}]"
        _want(f, dict, at, optional=False)
        for key in ("namespace", "name", "field"):
            _key(f, key, str, at, optional=False)
        for j, t in enumerate(_key(f, "transformations", list, at) or []):
            where = f"{at}.transformations[{j}]"
            _want(t, dict, where, optional=False)
            _key(t, "type", str, where, optional=False)
            for key in ("subtype", "description"):
                _key(t, key, str, where)
            _key(t, "masking", bool, where)
