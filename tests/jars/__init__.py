"""Jar sets fetched from Maven Central at test set-up (``make jars``), never at run time.

>>> jar_dir("no-such-set").name
'no-such-set'
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "jars"


def jar_dir(name: str) -> Path:
    """The folder ``make jars`` fills for the set ``name``."""
    return CACHE / name


def jar_paths(name: str) -> list[Path]:
    """The jars of a fetched set, sorted; empty when the set was not fetched."""
    folder = jar_dir(name)
    if not (folder / ".fetched").exists():
        return []
    return sorted(folder.glob("*.jar"))


def jar_set(name: str) -> list[Path]:
    """The jars of set ``name``, or skip the calling test saying how to fetch them."""
    import pytest

    jars = jar_paths(name)
    if not jars:
        pytest.skip(f"jar set {name!r} not fetched: run `make jars` (needs mvn and Maven Central)")
    return jars
