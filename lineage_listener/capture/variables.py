"""SQL variables in capture: which session a query ran in, and each session's variables' lineage.

Spark keeps SQL variables per ``SparkSession`` (a SQL script's local ones per script); a
variable set from a query carries that query's lineage into the session's later statements
(:mod:`lineage_listener.lineage.variables`, ``docs/reference/semantics.md``). The reader
asks the JVM only for queries that declare, set, drop or read a variable: their session's
id, and the names a ``DECLARE`` or ``DROP`` names (the plan JSON writes them as null). The
recorder keeps the values (:class:`Sessions`), in the order the queries ran, on the capture
thread, so capture in process and the zero-code bridge worker carry them alike.

>>> from lineage_listener.lineage.model import Origin
>>> s = Sessions()
>>> s.apply("a", (("session.v", Origin()),))
>>> list(s.values("a")), dict(s.values("b"))
(['session.v'], {})
>>> s.apply("a", (("session.v", None),)); dict(s.values("a"))
{}
"""
from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lineage_listener import redact
from lineage_listener.capture.jvm import jvm_call_failed, opt
from lineage_listener.plan.classes import VARIABLE_COMMANDS, VARIABLE_REFERENCE
from lineage_listener.plan.text import has_class

if TYPE_CHECKING:  # pragma: no cover - the walk's modules load on the capture thread, not with the reader's
    from lineage_listener.lineage.model import Origin
    from lineage_listener.lineage.variables import Assignments

log = redact.logger(__name__)

#: Commands that declare or drop variables: no query of their own, no ``queries`` row.
DECLARATIONS = frozenset({"CreateVariable", "DropVariable"})
#: Sessions whose variables are kept (a Spark Connect server makes one per client): the oldest go.
MAX_SESSIONS = 1000


@dataclass(frozen=True)
class Scope:
    """What a query that touches SQL variables needs beside its plan: its session, and the keys of
    the variables a ``DECLARE`` / ``DROP VARIABLE`` names."""

    session: str
    declared: tuple[str, ...] = ()


def touches(root: str, plan_text: str | None) -> bool:
    """Whether a query declares, sets, drops or reads a SQL variable."""
    return root in VARIABLE_COMMANDS or (plan_text is not None and has_class(plan_text, VARIABLE_REFERENCE))


def scope(qe: Any, plan: Any, root: str) -> Scope | None:
    """The query's session and the variables its command names, read from the JVM (a few calls;
    None when they cannot be read: the query is captured without its variables)."""
    try:
        session = str(qe.sparkSession().sessionUUID())
        declared: tuple[str, ...] = ()
        if root in ("CreateVariable", "DropVariable"):
            declared = tuple(_declared(plan))
        return Scope(session, declared)
    except jvm_call_failed() as exc:
        log.debug("lineage-listener: could not read a query's SQL variables: %s", exc)
        return None


def _declared(plan: Any) -> list[str]:
    """Keys of the variables a ``CreateVariable`` / ``DropVariable`` names: its children are
    ``ResolvedIdentifier``s (catalog, identifier)."""
    from lineage_listener.lineage.variables import key  # only for these rare commands

    children = plan.children()
    out = []
    for i in range(children.size()):
        child = children.apply(i)
        out.append(key(str(child.catalog().getClass().getName()), str(child.identifier().name())))
    return out


#: ``EXECUTE IMMEDIATE ... USING ...``: Spark binds each argument's value, not its expression.
_IMMEDIATE_USING = re.compile(r"^\s*EXECUTE\s+IMMEDIATE\b.*\bUSING\b", re.IGNORECASE | re.DOTALL)


def binds_arguments(sql_text: str | None) -> bool:
    """Whether a statement is an ``EXECUTE IMMEDIATE`` with ``USING`` arguments.

    >>> binds_arguments("execute immediate 'SELECT ? + x FROM t' USING v"), binds_arguments("SELECT 1")
    (True, False)
    """
    return sql_text is not None and _IMMEDIATE_USING.match(sql_text) is not None


def bind(statement: str, positional: list[str], named: Mapping[str, str]) -> str | None:
    """``statement`` with each parameter marker (``?`` in order, ``:name``) replaced by its
    argument's SQL in parentheses; None when the markers and the arguments do not match.

    >>> bind("SELECT ? + x, ':p ?' FROM t WHERE y = ?", ["v", "(w + 1)"], {})
    "SELECT (v) + x, ':p ?' FROM t WHERE y = ((w + 1))"
    >>> bind("SELECT :p * x, x::int FROM t", [], {"p": "v"})
    'SELECT (v) * x, x::int FROM t'
    """
    from sqlglot.dialects.spark import Spark  # the walk's dependency, loaded on the capture thread

    try:
        tokens = Spark().tokenize(statement)
    except Exception:  # noqa: BLE001 - sqlglot's tokenizer errors: leave the plan as Spark bound it
        return None
    edits: list[tuple[int, int, str]] = []
    at = 0
    for i, token in enumerate(tokens):
        if token.token_type.name == "PLACEHOLDER" and token.text == "?":
            if at >= len(positional):
                return None
            edits.append((token.start, token.end, positional[at]))
            at += 1
        elif token.token_type.name == "COLON" and i + 1 < len(tokens) and tokens[i + 1].start == token.end + 1:
            name = tokens[i + 1].text
            if name in named:
                edits.append((token.start, tokens[i + 1].end, named[name]))
    if not edits or at != len(positional):
        return None
    for start, end, text in reversed(edits):
        statement = f"{statement[:start]}({text}){statement[end + 1:]}"
    return statement


def immediate_plan(qe: Any) -> Any | None:
    """The plan of an ``EXECUTE IMMEDIATE`` statement analyzed again with its ``USING`` arguments'
    expressions in place of their values, so the variables they read stay in the plan (Spark
    binds them as literals); None when it has no argument but literals, or cannot be re-read."""
    try:
        logical = qe.logical()
        if logical.nodeName() != "UnresolvedExecuteImmediate":
            return None
        args = logical.args()
        positional: list[str] = []
        named: dict[str, str] = {}
        literal = True
        for i in range(args.size()):
            arg = args.apply(i)
            value = arg.child() if arg.nodeName() == "Alias" else arg
            literal = literal and value.nodeName() == "Literal"
            if arg.nodeName() == "Alias":
                named[str(arg.name())] = str(value.sql())
            else:
                positional.append(str(arg.sql()))
        inner = opt(qe.analyzed().origin().sqlText())
        if literal or inner is None:
            return None
        text = bind(str(inner), positional, named)
        if text is None:
            return None
        state = qe.sparkSession().sessionState()
        return state.analyzer().execute(state.sqlParser().parsePlan(text))
    except jvm_call_failed() as exc:
        log.debug("lineage-listener: could not re-read an EXECUTE IMMEDIATE statement: %s", exc)
        return None


class Sessions:
    """The SQL variables of each session seen, by key, as the queries that set them left them."""

    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self._sessions: OrderedDict[str, dict[str, "Origin"]] = OrderedDict()
        self._max = max_sessions

    def values(self, session: str | None) -> Mapping[str, "Origin"]:
        """The variables of ``session`` that carry lineage (empty for an unknown session)."""
        return self._sessions.get(session, {}) if session is not None else {}

    def apply(self, session: str, assigns: "Assignments") -> None:
        """Set (or, for a value of None, forget) the variables a command assigned."""
        values = self._sessions.setdefault(session, {})
        self._sessions.move_to_end(session)
        for k, value in assigns:
            if value is None:
                values.pop(k, None)
            else:
                values[k] = value
        while len(self._sessions) > self._max:
            self._sessions.popitem(last=False)
