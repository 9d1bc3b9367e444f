"""Literal values out of Spark SQL text: every string, number, date, timestamp, interval and binary
literal becomes ``?``; comments are left out (they can hold anything), hints are kept masked.

The text is read with sqlglot's Spark tokenizer, so quotes and escapes are read as Spark reads
them (``'it\\'s'``, ``"..."``, raw ``r'...'``, ``X'1F'``); a typed literal is one ``?`` with its
keyword (``DATE '2024-01-01'``, ``TIMESTAMP_NTZ '...'``, ``INTERVAL '1' DAY``,
``INTERVAL 3 HOURS 2 MINUTES``), as is a number with its type suffix (``10L``, ``2.5BD``) and a run
of adjacent strings (Spark joins them). The size of a type (``DECIMAL(10, 2)``, ``VARCHAR(20)``)
is not a value and stays. What cannot be tokenized is never returned unmasked.

>>> mask("SELECT name FROM people WHERE email = 'alice@example.com' AND age > 30")
'SELECT name FROM people WHERE email = ? AND age > ?'
>>> mask("SELECT DATE '2024-01-01', INTERVAL '1' DAY, INTERVAL 3 HOURS 2 MINUTES, X'1F', 10L, r'a\\\\b'")
'SELECT ?, ?, ?, ?, ?, ?'
>>> mask("SELECT 'it\\\\'s', \\"dq\\" 'joined' FROM t -- by 'bob'")
'SELECT ?, ? FROM t'
>>> mask("CAST(amount AS DECIMAL(10, 2)) * 1.5")
'CAST(amount AS DECIMAL(10, 2)) * ?'
>>> mask("SELECT 'unterminated") is None
True
"""
from __future__ import annotations

from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

PLACEHOLDER = "?"

#: Token types that are literal values (those this sqlglot version has).
_LITERALS = frozenset(getattr(TokenType, name) for name in (
    "STRING", "NUMBER", "HEX_STRING", "RAW_STRING", "BIT_STRING", "BYTE_STRING", "NATIONAL_STRING",
    "NATIONAL_RAW_STRING", "UNICODE_STRING", "HEREDOC_STRING") if hasattr(TokenType, name))
_STRINGS = _LITERALS - {TokenType.NUMBER}
#: Keywords that make the string after them a typed literal: ``DATE '2024-01-01'``.
_TYPED = frozenset(getattr(TokenType, name) for name in (
    "DATE", "TIME", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPLTZ", "TIMESTAMPNTZ", "DATETIME")
    if hasattr(TokenType, name))
#: Words of an interval literal after its values: ``INTERVAL '1-2' YEAR TO MONTH``.
_UNITS = frozenset(u + s for u in ("YEAR", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND",
                                   "MICROSECOND") for s in ("", "S")) | {"TO"}
_SIGNS = frozenset({TokenType.DASH, TokenType.PLUS})
#: Types whose size in parentheses is kept: ``DECIMAL(10, 2)``.
_SIZED = frozenset({"DECIMAL", "DEC", "NUMERIC", "VARCHAR", "CHAR", "CHARACTER", "NCHAR", "NVARCHAR"})

#: Texts up to this long are masked once and remembered (edges repeat their expressions).
_SHORT = 2048
_KNOWN_MAX = 4096
_known: dict[str, str | None] = {}


def mask(text: str) -> str | None:
    """``text`` (Spark SQL) with its literal values replaced by ``?`` and its comments left out;
    None when it cannot be tokenized (an unclosed quote or comment)."""
    if len(text) <= _SHORT:
        found = _known.get(text, _known)
        if found is not _known:
            return found  # type: ignore[return-value]
    try:
        tokens = Spark().tokenize(text)
    except TokenError:
        masked = None
    else:
        masked = _joined(text, tokens)
    if len(text) <= _SHORT:
        if len(_known) >= _KNOWN_MAX:
            _known.clear()
        _known[text] = masked
    return masked


def _joined(text: str, tokens: list[Token]) -> str:
    """The tokens' text again, each literal (with its keyword, units and suffix) as ``?``; what lies
    between tokens kept when it is blank, else (a comment) one blank."""
    out: list[str] = []
    end = -1  # last character written
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        if tok.start <= end:  # a number's type suffix: tokens of the same characters
            i += 1
            continue
        if out:
            gap = text[end + 1:tok.start]
            out.append(gap if not gap.strip() else ("\n" if "\n" in gap else " "))
        last = _literal_end(tokens, i)
        if last is None:
            raw = text[tok.start:tok.end + 1]
            if tok.token_type is TokenType.HINT and raw.startswith("/*+") and raw.endswith("*/"):
                raw = "/*+ " + (mask(raw[3:-2].strip()) or PLACEHOLDER) + " */"  # REPARTITION(10)
            out.append(raw)
            end = tok.end
            i += 1
            continue
        out.append(PLACEHOLDER)
        end = tokens[last].end
        i = last + 1
    return "".join(out)


def _literal_end(tokens: list[Token], i: int) -> int | None:
    """Index of the last token of the literal starting at ``tokens[i]`` (None: no literal starts there)."""
    tok = tokens[i]
    kind = tok.token_type
    if kind is TokenType.INTERVAL:
        return _interval_end(tokens, i)
    if kind in _TYPED:
        return i + 1 if i + 1 < len(tokens) and tokens[i + 1].token_type in _STRINGS else None
    if kind not in _LITERALS or (kind is TokenType.NUMBER and _type_size(tokens, i)):
        return None
    last = i
    while kind in _STRINGS and last + 1 < len(tokens) and tokens[last + 1].token_type in _STRINGS:
        last += 1  # 'a' 'b' is one string to Spark
    return last


def _interval_end(tokens: list[Token], i: int) -> int | None:
    """``INTERVAL`` followed by values (signed) and their units; None when no value follows."""
    last, j, n = None, i + 1, len(tokens)
    while j < n:
        kind = tokens[j].token_type
        if kind in _SIGNS and j + 1 < n and tokens[j + 1].token_type in _LITERALS:
            j += 1
            continue
        if kind in _LITERALS or (last is not None and tokens[j].text.upper() in _UNITS):
            last = j
            j += 1
            continue
        break
    return last


def _type_size(tokens: list[Token], i: int) -> bool:
    """True when the number at ``i`` is a type's size: ``DECIMAL(10, 2)``."""
    j = i - 1
    if j >= 1 and tokens[j].token_type is TokenType.COMMA and tokens[j - 1].token_type is TokenType.NUMBER:
        j -= 2
    return j >= 1 and tokens[j].token_type is TokenType.L_PAREN and tokens[j - 1].text.upper() in _SIZED


def mask_message(text: str) -> str:
    """An error message with literal values out, as :func:`mask` does for SQL; a line that cannot
    be tokenized (an apostrophe in prose) is kept only up to its first quote, masked.

    >>> mask_message("[CAST_INVALID_INPUT] The value 'alice@example.com' of the type \\"STRING\\" cannot be cast")
    '[CAST_INVALID_INPUT] The value ? of the type ? cannot be cast'
    >>> mask_message("Error at 42: can't read 'x'")
    'Error at ?: can ?'
    """
    masked = mask(text)
    if masked is not None:
        return masked
    lines = []
    for line in text.splitlines():
        done = mask(line)
        if done is None:
            cut = min((at for at in (line.find(q) for q in "'\"`") if at >= 0), default=len(line))
            done = (mask(line[:cut]) or "").rstrip() + " " + PLACEHOLDER
        lines.append(done)
    return "\n".join(lines)


def without_statement(text: str) -> str:
    """An error message without the statement text Spark appends to it (``== SQL ... ==`` and what
    follows).

    >>> without_statement("[DIVIDE_BY_ZERO] Division by zero.\\n== SQL (line 1, position 8) ==\\nSELECT 1/0\\n       ^^^")
    '[DIVIDE_BY_ZERO] Division by zero.'
    """
    at = text.find("== SQL")
    return text if at < 0 else text[:at].rstrip()
