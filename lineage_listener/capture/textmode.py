"""What capture keeps of SQL text: ``spark.lineage.sqlText`` (``docs/reference/conf.md``).

- ``full`` (the default): statement text, edge expressions and error messages as Spark gave them;
- ``masked``: every literal value replaced by ``?`` (:mod:`~lineage_listener.lineage.literals`);
- ``none``: no statement text at all; expressions and errors masked as in ``masked``, errors
  without the statement Spark appends to them.

Applied to each batch of rows as it is made, before it is written, spooled or sent anywhere (a
store, a lineage server, Kafka, an OpenLineage endpoint): the texts are those of ``queries``
(``sql_text``, ``error``), ``column_lineage`` (``expression``) and ``capture_errors`` (``error``).

>>> from lineage_listener.store.batch import Batch
>>> from lineage_listener.store.rows import QueryRow
>>> b = Batch(); b.add(QueryRow("q", "r", "collect", "Project", "SELECT * FROM t WHERE id = 42", "succeeded",
...                            None, 1, None, None))
>>> masker(MASKED)(b).rows["queries"][0].sql_text, masker(NONE)(b).rows["queries"][0].sql_text
('SELECT * FROM t WHERE id = ?', None)
>>> masker(FULL) is None
True
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from lineage_listener import redact

if TYPE_CHECKING:  # pragma: no cover - the row modules load on the capture thread
    from lineage_listener.store.batch import Batch

log = redact.logger(__name__)

CONF = "spark.lineage.sqlText"
#: The bridge passes ``spark.lineage.sqlText`` to its worker in this variable.
ENV = "LINEAGE_SQL_TEXT"
FULL, MASKED, NONE = "full", "masked", "none"
MODES = (FULL, MASKED, NONE)


def parse(value: str | None) -> str:
    """A mode from its name (any case, blanks around it); None is ``full``; another name raises ValueError.

    >>> parse(" Masked "), parse(None)
    ('masked', 'full')
    """
    if value is None:
        return FULL
    mode = str(value).strip().lower()
    if mode not in MODES:
        raise ValueError(f"{CONF} must be one of {', '.join(MODES)}, not {value!r}")
    return mode


def from_conf(value: str | None) -> str:
    """The mode a conf key or environment variable names; a name that is none of them keeps the
    least (``none``), with one log line: whoever set it did not want the full text.

    >>> from_conf("mask")
    'none'
    """
    try:
        return parse(value)
    except ValueError as exc:
        log.error("lineage-listener: %s; storing no SQL text (%s=none)", exc, CONF)
        return NONE


class Keep(NamedTuple):
    """What a mode makes of each kind of text (None in, None out)."""

    statement: Callable[[str | None], str | None]
    message: Callable[[str | None], str | None]  # an error message
    expression: Callable[[str | None], str | None]  # an edge's expression


def keep(mode: str) -> Keep:
    """The functions that keep of each kind of text what ``mode`` allows (``masked`` or ``none``).
    A text that cannot be masked is not kept (None): never kept as it was.

    >>> k = keep(NONE)
    >>> k.statement("SELECT 1"), k.expression("a + 1"), k.message("[X] 'v' bad\\n== SQL ==\\nSELECT 'v'")
    (None, 'a + ?', '[X] ? bad')
    """
    from lineage_listener.lineage import literals

    with_statement = mode == MASKED

    def statement(text: str | None) -> str | None:
        return _safely(literals.mask, text) if text and with_statement else None

    def message(text: str | None) -> str | None:
        if not text:
            return text
        return _safely(literals.mask_message, text if with_statement else literals.without_statement(text))

    def expression(text: str | None) -> str | None:
        return _safely(literals.mask, text) if text else text

    return Keep(statement, message, expression)


def _safely(fn: Callable[[str], str | None], text: str) -> str | None:
    try:
        return fn(text)
    except Exception:  # noqa: BLE001 - a masking bug must not stop capture, nor let the text through
        log.warning("lineage-listener: could not mask literal values in a text; it is not kept", exc_info=True)
        return None


def masker(mode: str) -> Callable[["Batch"], "Batch"] | None:
    """The function that makes a batch's rows keep only what ``mode`` allows (None for ``full``:
    nothing to do, and the tokenizer is never imported)."""
    if mode == FULL:
        return None
    k = keep(mode)

    def rows(batch: "Batch") -> "Batch":
        found = batch.rows
        found["queries"] = [r._replace(sql_text=k.statement(r.sql_text), error=k.message(r.error))
                            for r in found["queries"]]
        found["column_lineage"] = [r._replace(expression=k.expression(r.expression)) if r.expression else r
                                   for r in found["column_lineage"]]
        found["capture_errors"] = [r._replace(error=k.message(r.error)) if r.error else r
                                   for r in found["capture_errors"]]
        return batch

    return rows
