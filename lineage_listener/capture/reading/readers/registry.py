"""Fact readers keyed by the Spark class they read, and the functions that dispatch to them.

Each family module (``catalog``, ``files``, ``dsv2``...) registers its readers here with
:func:`reads`, the way the walker registers node handlers: one reader per plan node name (a
source leaf, a write command, a stream source or sink), per ``BaseRelation`` class under a
``LogicalRelation``, and per table format for the version a read is pinned to. A name nobody
registered has no fact.

>>> @reads(TARGETS, "ExampleWrite")
... def example(cmd, current):
...     return {"paths": ["file:/x"]}
>>> target_of(None, "ExampleWrite")
{'paths': ['file:/x']}
>>> target_of(None, "UnknownCommand") is None
True
>>> del TARGETS["ExampleWrite"]
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from lineage_listener.lineage.datasets import RelationFact

#: The catalog and database names resolve unqualified identifiers against (or None).
Current = tuple[str, str] | None

#: Source leaf node name -> ``reader(leaf, current) -> fact``.
LEAVES: dict[str, Callable[[Any, Current], RelationFact]] = {}
#: ``BaseRelation`` class name under a ``LogicalRelation`` -> ``reader(relation, fact)`` adding to ``fact``.
RELATIONS: dict[str, Callable[[Any, RelationFact], None]] = {}
#: Write command node name -> ``reader(command, current) -> fact or None``.
TARGETS: dict[str, Callable[[Any, Current], RelationFact | None]] = {}
#: Table format -> ``reader(table, fact)`` adding the version a DataSource V2 read is pinned to.
VERSIONS: dict[str, Callable[[Any, RelationFact], None]] = {}
#: Stream source leaf node name -> ``reader(leaf, running leaf or None, scope) -> fact or None``.
STREAM_SOURCES: dict[str, Callable[[Any, Any, str | None], RelationFact | None]] = {}
#: Stream sink write node name -> ``reader(execution, root, query name) -> fact or None``.
STREAM_SINKS: dict[str, Callable[[Any, Any, str | None], RelationFact | None]] = {}

F = TypeVar("F", bound=Callable[..., Any])


def reads(registry: dict[str, Any], *names: str | Iterable[str]) -> Callable[[F], F]:
    """Register the decorated reader in ``registry`` under each name (or family of names)."""
    keys = [n for name in names for n in ([name] if isinstance(name, str) else sorted(name))]

    def register(reader: F) -> F:
        for key in keys:
            if key in registry:
                raise ValueError(f"two readers for {key}: {registry[key].__name__} and {reader.__name__}")
            registry[key] = reader
        return reader
    return register


def relation(leaf: Any, name: str, current: Current = None) -> RelationFact:
    """Facts of one source leaf plan node named ``name`` (empty when no reader knows it)."""
    reader = LEAVES.get(name)
    return reader(leaf, current) if reader is not None else {}


def target_of(cmd: Any, name: str, current: Current = None) -> RelationFact | None:
    """Facts of the target of the write command ``cmd`` named ``name``, or None if unknown."""
    reader = TARGETS.get(name)
    return reader(cmd, current) if reader is not None else None


def pinned_version(table: Any, fact: RelationFact) -> None:
    """Add the version a DataSource V2 read of ``table`` is pinned to, by the fact's format."""
    reader = VERSIONS.get(fact.get("format") or "")
    if reader is not None:
        reader(table, fact)
