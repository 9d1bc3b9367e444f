"""Policy checks on lineage: the seam ``preview --policy FILE`` calls.

A policy says what lineage may not do (a labelled column copied unmasked into a dataset
outside its zone...); a check of a preview's edges against it returns the violations.
Policies are not part of this version: asking for a check says so in one line, and a
preview without ``--policy`` reports no violations.

>>> violations([], load_policy(None))
[]
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


class PoliciesUnavailable(ValueError):
    """Policy checks were asked for, and this version has none."""


def load_policy(path: str | Path | None) -> Any:
    """The policy in file ``path`` (None: no policy), read before any work is done, so that a bad
    policy file fails fast; raises :class:`PoliciesUnavailable` for a path in this version."""
    if path is None:
        return None
    raise PoliciesUnavailable(f"policies are not available in this version of lineage-listener "
                              f"(--policy {path} cannot be checked)")


def violations(edges: Sequence[dict[str, Any]], policy: Any) -> list[dict[str, Any]]:
    """Violations of ``policy`` (from :func:`load_policy`) by ``edges`` (a preview's edge dicts, each
    with ``target_dataset``, ``target_column``, ``source_dataset``, ``source_column``, ``transform``,
    ``kind``, ``expression``, ``masking``); [] without a policy."""
    return []
