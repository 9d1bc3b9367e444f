"""Stand-ins for the datasets a previewed statement reads: empty tables and files with the schema
the store recorded, in a throwaway warehouse.

The store keeps each dataset's columns in schema order (``dataset_columns``: name, type,
nullable), struct fields flattened as paths (``address.city``). A schema is rebuilt from them:
structs from their fields, every other type from its name. Arrays and maps are recorded
without their element types: they stand in as ``array<string>`` and ``map<string,string>``
(a statement that needs more gives the table's DDL with ``--schema``).

>>> rows = [("id", "integer", False), ("address", "struct", True), ("address.city", "string", True),
...         ("tags", "array", True)]
>>> [(f["name"], f["type"] if isinstance(f["type"], str) else f["type"]["type"]) for f in schema_json(rows)["fields"]]
[('id', 'integer'), ('address', 'struct'), ('tags', 'array')]
>>> schema_json(rows)["fields"][1]["type"]["fields"][0]["name"]
'city'
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lineage_listener.lineage import column_path

#: Recorded type names whose element types the store does not keep: what stands in for them.
_LOSSY = {
    "array": {"type": "array", "elementType": "string", "containsNull": True},
    "map": {"type": "map", "keyType": "string", "valueType": "string", "valueContainsNull": True},
}


def _field(name: str, data_type: Any, nullable: bool | None) -> dict[str, Any]:
    return {"name": name, "type": data_type, "nullable": True if nullable is None else bool(nullable), "metadata": {}}


def schema_json(columns: Iterable[tuple[str, Any, bool | None]]) -> dict[str, Any]:
    """Spark's ``StructType`` JSON from ``(stored column name, type, nullable)`` rows in schema order.

    A type is a recorded name (``integer``, ``decimal(7,2)``, ``struct``...) or Spark's JSON of a
    data type (what a walk reports for a column it wrote): kept as it is, nested rows under it
    are then not needed.
    """
    top: list[dict[str, Any]] = []
    structs: dict[tuple[str, ...], list[dict[str, Any]]] = {(): top}
    for name, data_type, nullable in columns:
        path = tuple(column_path.split(name))
        parent = structs.get(path[:-1])
        if parent is None:  # a field of a struct given whole (its JSON), or of an unknown parent
            continue
        if isinstance(data_type, dict):
            parent.append(_field(path[-1], data_type, nullable))
        elif data_type == "struct":
            fields: list[dict[str, Any]] = []
            structs[path] = fields
            parent.append(_field(path[-1], {"type": "struct", "fields": fields}, nullable))
        else:
            parent.append(_field(path[-1], _LOSSY.get(str(data_type), data_type or "string"), nullable))
    return {"type": "struct", "fields": top}


def checked_schema(jvm: Any, schema: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """The JVM ``StructType`` of ``schema``; a field whose type Spark cannot read is a string
    (its name is returned, to say so)."""
    import json

    data_type = jvm.org.apache.spark.sql.types.DataType
    replaced: list[str] = []
    fields = []
    for f in schema["fields"]:
        try:
            data_type.fromJson(json.dumps(f["type"]))
            fields.append(f)
        except Exception:  # noqa: BLE001 - Py4JJavaError or a converted AnalysisException
            replaced.append(f["name"])
            fields.append({**f, "type": "string"})
    return data_type.fromJson(json.dumps({"type": "struct", "fields": fields})), replaced


def ddl_name(parts: Sequence[str]) -> str:
    """A multi-part name quoted for SQL.

    >>> ddl_name(["spark_catalog", "db", "my`t"])
    '`spark_catalog`.`db`.`my``t`'
    """
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def relocate(fact: Any, standins: Mapping[str, str]) -> Any:
    """A leaf's relation fact with each stand-in location (a key of ``standins``) named as the
    dataset it stands for.

    >>> relocate({"paths": ["file:/tmp/w/s1"], "options": {"path": "/tmp/w/s1/"}}, {"file:/tmp/w/s1": "file:/data/p"})
    {'paths': ['file:/data/p'], 'options': {'path': 'file:/data/p'}}
    """
    if isinstance(fact, dict):
        return {k: relocate(v, standins) for k, v in fact.items()}
    if isinstance(fact, list):
        return [relocate(v, standins) for v in fact]
    if isinstance(fact, str):
        for standin, original in standins.items():
            bare = standin.removeprefix("file:")
            for form in (standin, bare):
                if fact.rstrip("/") == form:
                    return original
                if fact.startswith(form + "/"):
                    return original + fact[len(form):]
    return fact
