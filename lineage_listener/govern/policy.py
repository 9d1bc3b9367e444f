"""Policy files (YAML): rules over where labelled data goes and what a dataset keeps.

::

    masking_functions: [my_hash]             # optional: the user's own masking UDFs
    rules:
      - name: no-clear-pii-in-exports
        kind: forbid                          # label L (a copy, unmasked) must not reach datasets G
        label: pii                            # pii matches pii.email
        datasets: ["file:/**/exports/**"]
      - name: partner-emails-masked
        kind: require_masking                 # every path from L into G passes a masking edge
        label: pii.email
        datasets: ["spark_catalog.*.partner_*"]
      - name: pii-readers
        kind: readers                         # only these applications read columns labelled L
        label: pii
        applications: [retail_*]              # globs on application names
      - name: fact-keeps-its-sources
        kind: protect                         # columns of G keep their upstream columns
        datasets: ["spark_catalog.warehouse.fact_order_lines"]
        columns: [email, net_revenue_eur]     # optional (default: every column)
        days: 7                               # compared with the last 7 days (default 7)

A file is read whole before anything is checked: malformed YAML, an unknown rule kind or key,
a missing field, a bad label or glob is :class:`PolicyError`, one line naming the rule and the
problem.

>>> p = parse({"rules": [{"name": "r", "kind": "forbid", "label": "PII", "datasets": ["file:/**/x/**"]}]}, "p.yml")
>>> p.rules[0].label, p.rules[0].datasets
('pii', ('file:/**/x/**',))
>>> parse({"rules": [{"name": "r", "kind": "allow", "label": "pii"}]}, "p.yml")
Traceback (most recent call last):
...
lineage_listener.govern.policy.PolicyError: p.yml: rule 'r': unknown kind 'allow' (forbid, protect, readers, require_masking)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lineage_listener.govern.labelfile import ClassificationsError, read_yaml
from lineage_listener.govern.patterns import PatternError, check_label, glob_regex

#: Each kind's required and optional keys (beyond ``name`` and ``kind``).
KINDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "forbid": (frozenset({"label", "datasets"}), frozenset({"description"})),
    "require_masking": (frozenset({"label", "datasets"}), frozenset({"description"})),
    "readers": (frozenset({"label", "applications"}), frozenset({"datasets", "description"})),
    "protect": (frozenset({"datasets"}), frozenset({"columns", "days", "description"})),
}
DEFAULT_PROTECT_DAYS = 7


class PolicyError(ValueError):
    """A policy file that cannot be checked; one line naming the rule and the problem."""


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str
    label: str | None = None
    datasets: tuple[str, ...] = ()
    applications: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    days: int = DEFAULT_PROTECT_DAYS
    description: str | None = None


@dataclass(frozen=True)
class Policy:
    origin: str
    rules: tuple[Rule, ...]
    masking_functions: tuple[str, ...] = ()


def _names(value: Any, where: str, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise PolicyError(f"{where}: {what} must be a non-empty list of names")
    return tuple(v.strip() for v in value)


def _rule(raw: Any, i: int, origin: str) -> Rule:
    if not isinstance(raw, dict):
        raise PolicyError(f"{origin}: rule {i}: must be a mapping with name and kind")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise PolicyError(f"{origin}: rule {i}: needs a name")
    where = f"{origin}: rule {name!r}"
    kind = raw.get("kind")
    if kind not in KINDS:
        raise PolicyError(f"{where}: unknown kind {kind!r} ({', '.join(sorted(KINDS))})")
    required, optional = KINDS[kind]
    extra = set(raw) - required - optional - {"name", "kind"}
    if extra:
        raise PolicyError(f"{where}: unknown key {sorted(extra)[0]!r} for kind {kind} "
                          f"(takes {', '.join(sorted(required | optional))})")
    missing = required - set(raw)
    if missing:
        raise PolicyError(f"{where}: kind {kind} needs {sorted(missing)[0]}")
    fields: dict[str, Any] = {"name": name.strip(), "kind": kind}
    try:
        if "label" in raw:
            if not isinstance(raw["label"], str):
                raise PolicyError(f"{where}: label must be one label name")
            fields["label"] = check_label(raw["label"])
        if "datasets" in raw:
            fields["datasets"] = _names(raw["datasets"], where, "datasets")
            for glob in fields["datasets"]:
                glob_regex(glob)
    except PatternError as exc:
        raise PolicyError(f"{where}: {exc}") from None
    if "applications" in raw:
        fields["applications"] = _names(raw["applications"], where, "applications")
    if "columns" in raw:
        fields["columns"] = _names(raw["columns"], where, "columns")
    if "days" in raw:
        days = raw["days"]
        if not isinstance(days, int) or isinstance(days, bool) or days < 1:
            raise PolicyError(f"{where}: days must be a whole number of days, at least 1")
        fields["days"] = days
    if "description" in raw:
        fields["description"] = str(raw["description"])
    return Rule(**fields)


def parse(data: dict, origin: str) -> Policy:
    """A policy from a file's data, or :class:`PolicyError`."""
    unknown = set(data) - {"rules", "masking_functions"}
    if unknown:
        raise PolicyError(f"{origin}: unknown key {sorted(unknown)[0]!r} (expected rules, masking_functions)")
    rules = data.get("rules")
    if not isinstance(rules, list) or not rules:
        raise PolicyError(f"{origin}: rules must be a non-empty list")
    parsed = [_rule(r, i, origin) for i, r in enumerate(rules, 1)]
    seen: set[str] = set()
    for r in parsed:
        if r.name in seen:
            raise PolicyError(f"{origin}: rule {r.name!r}: the name is used twice")
        seen.add(r.name)
    functions = data.get("masking_functions") or []
    if not isinstance(functions, list) or not all(isinstance(f, str) and f.strip() for f in functions):
        raise PolicyError(f"{origin}: masking_functions must be a list of function names")
    return Policy(origin, tuple(parsed), tuple(f.strip().lower() for f in functions))


def load(path: str | Path) -> Policy:
    """Read the policy file at ``path``, or :class:`PolicyError`."""
    try:
        data = read_yaml(path, "policy file")
    except ClassificationsError as exc:
        raise PolicyError(str(exc)) from None
    return parse(data, str(path))
