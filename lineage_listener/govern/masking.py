"""Which edges mask their source column: Spark's built-in masking functions (flagged at capture,
``edges.masking``), and functions the user declares as masking (their own hashing UDFs), applied
to already-captured edges from each edge's expression text.

An edge masks through a declared function when every reference to its source column in the
expression lies inside a call of one of them:

>>> masks_by({"masking": False, "kind": "direct", "expression": "my_hash(email)"}, "email", {"my_hash"})
True
>>> masks_by({"masking": False, "kind": "direct", "expression": "concat(my_hash(email), email)"}, "email",
...          {"my_hash"})
False
>>> masks_by({"masking": True, "kind": "direct", "expression": "sha2(email, 256)"}, "email", set())
True
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from functools import lru_cache

import sqlglot
import sqlglot.expressions as exp

log = logging.getLogger(__name__)


def normalise(names: Iterable[str]) -> frozenset[str]:
    """Declared function names as expressions spell them: lower case, without spaces."""
    return frozenset(str(n).strip().lower() for n in names if str(n).strip())


def masks_by(record: Mapping, source_column: str, declared: Iterable[str]) -> bool:
    """Whether the edge ``record`` (its ``masking``, ``expression``) masks ``source_column``."""
    if record.get("masking"):
        return True
    names = declared if isinstance(declared, frozenset) else normalise(declared)
    expression = record.get("expression")
    if not names or not expression:
        return False
    return _wrapped(expression, source_column, names)


@lru_cache(maxsize=65536)
def _wrapped(expression: str, column: str, names: frozenset[str]) -> bool:
    lowered = expression.lower()
    if not any(n + "(" in lowered.replace(" (", "(") for n in names):
        return False
    try:
        tree = sqlglot.parse_one(expression, read="spark")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        log.debug("masking: cannot parse %r; not counted as masking", expression)
        return False
    refs = [c for c in tree.find_all(exp.Column) if c.name == column or c.sql(dialect="spark") == column]
    if not refs:  # the source column is not named (a count, a literal): only a call on it all masks
        return _call_name(tree) in names
    return all(any(_call_name(a) in names for a in _calls_above(ref)) for ref in refs)


def _calls_above(node: exp.Expression):
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.Func):
            yield parent
        parent = parent.parent


def _call_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return ""
