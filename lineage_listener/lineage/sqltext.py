"""Build the ``expression`` text of edges as sqlglot trees, rendered as Spark SQL."""
from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

import sqlglot.expressions as exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.helper import name_sequence

#: Spark classes whose SQL function name is not their snake-cased class name.
FUNCTION_NAMES = {
    "Murmur3Hash": "hash", "XxHash64": "xxhash64", "Average": "avg", "Crc32": "crc32",
    "Sha1": "sha1", "Sha2": "sha2", "Md5": "md5", "StddevSamp": "stddev_samp",
    "StddevPop": "stddev_pop", "VarianceSamp": "var_samp", "VariancePop": "var_pop",
    "CollectList": "collect_list", "CollectSet": "collect_set", "RowNumber": "row_number",
    "DenseRank": "dense_rank", "NTile": "ntile", "PercentRank": "percent_rank",
    "CumeDist": "cume_dist", "Explode": "explode", "PosExplode": "posexplode",
    "GetJsonObject": "get_json_object", "UnscaledValue": "unscaled_value",
    "MakeDecimal": "make_decimal", "PythonUDF": "python_udf", "ScalaUDF": "udf",
    "NullIf": "nullif", "IfNull": "ifnull", "Nvl2": "nvl2", "Nvl": "nvl",
    # higher-order functions (their lambda is a LambdaFunction child)
    "ArrayTransform": "transform", "ArrayFilter": "filter", "ArrayExists": "exists",
    "ArrayForAll": "forall", "ArrayAggregate": "aggregate",
}

BINARY = {
    "Add": exp.Add, "Subtract": exp.Sub, "Multiply": exp.Mul, "Divide": exp.Div,
    "Remainder": exp.Mod, "EqualTo": exp.EQ, "EqualNullSafe": exp.NullSafeEQ,
    "GreaterThan": exp.GT, "GreaterThanOrEqual": exp.GTE, "LessThan": exp.LT,
    "LessThanOrEqual": exp.LTE, "And": exp.And, "Or": exp.Or,
    "BitwiseAnd": exp.BitwiseAnd, "BitwiseOr": exp.BitwiseOr, "BitwiseXor": exp.BitwiseXor,
    # datetime +/- interval: Spark's analyzed classes for ``ts + INTERVAL '1' HOUR`` and friends
    "TimeAdd": exp.Add, "TimestampAddInterval": exp.Add, "DateAddInterval": exp.Add,
    "DateAddYMInterval": exp.Add, "TimestampAddYMInterval": exp.Add,
    "Like": exp.Like, "RLike": exp.RegexpLike,
}

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def function_name(cls_name: str) -> str:
    """Spark SQL function name for an expression class.

    >>> function_name("ConcatWs"), function_name("Murmur3Hash"), function_name("MakeDTInterval")
    ('concat_ws', 'hash', 'make_dt_interval')
    """
    if cls_name in FUNCTION_NAMES:
        return FUNCTION_NAMES[cls_name]
    return _CAMEL.sub("_", cls_name).lower()


def column(name: str) -> exp.Expression:
    """A reference to the attribute named ``name``: one identifier, backticked when it holds a dot
    (```s.x``` is a column named ``s.x``; a struct field is a ``GetStructField`` of its column).

    >>> render(column("s.x")), render(column("order count ")), render(column("id"))
    ('`s.x`', '`order count `', 'id')
    """
    return exp.Column(this=exp.to_identifier(name))  # not exp.column: it deep-copies the identifier


#: Literal types Spark prints as bare text (``2024-01-01``): written as a cast of a string, as Spark
#: SQL reads them back (``DATE '2024-01-01'`` is ``CAST('2024-01-01' AS DATE)``).
_TEXT_TYPED = frozenset({"date", "timestamp", "timestamp_ntz"})


def literal(value: object, data_type: str | None) -> exp.Expression:
    """A literal of Spark's ``data_type``.

    >>> render(literal("2024-01-31", "date")), render(literal("x", "string")), render(literal(7, "int"))
    ("CAST('2024-01-31' AS DATE)", "'x'", '7')
    >>> render(literal("1706695200000000", "timestamp_ntz"))  # toJSON writes an NTZ value as micros
    "CAST('2024-01-31 10:00:00' AS TIMESTAMP_NTZ)"
    """
    if value is None:
        return exp.null()
    if data_type in _TEXT_TYPED:
        return cast(exp.Literal.string(_datetime_text(str(value), data_type)), data_type)
    if data_type in ("string",) or (data_type is None and not _is_number(str(value))):
        return exp.Literal.string(str(value))
    if data_type == "boolean":
        return exp.Boolean(this=str(value).lower() == "true")
    return exp.Literal.number(str(value))


def _datetime_text(value: str, data_type: str) -> str:
    """A date or timestamp as text: Spark's JSON holds an NTZ timestamp as microseconds (the others formatted)."""
    if not value.lstrip("-").isdigit():
        return value
    from datetime import datetime, timedelta

    epoch = datetime(1970, 1, 1)
    if data_type == "date":
        return (epoch + timedelta(days=int(value))).date().isoformat()
    return (epoch + timedelta(microseconds=int(value))).isoformat(sep=" ")


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def call(name: str, args: Sequence[exp.Expression]) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def binary(cls_name: str, left: exp.Expression, right: exp.Expression) -> exp.Expression | None:
    builder = BINARY.get(cls_name)
    if builder is exp.Add and isinstance(right, exp.Neg) and isinstance(right.this, exp.Interval):
        builder, right = exp.Sub, right.this  # ts - INTERVAL is analyzed as ts + (-INTERVAL)
    return builder(this=wrap(left), expression=wrap(right)) if builder else None


def wrap(e: exp.Expression) -> exp.Expression:
    """Parenthesize an operator operand: ``(a + b) * 2``."""
    return exp.Paren(this=e) if isinstance(e, exp.Binary) else e


def cast(e: exp.Expression, data_type: str | None) -> exp.Expression:
    """``CAST(e AS data_type)``; ``cast(e)`` for a type sqlglot does not know.

    >>> render(cast(column("a"), "decimal(7,2)")), render(cast(column("a"), "no such type"))
    ('CAST(a AS DECIMAL(7, 2))', 'cast(a)')
    """
    to, type_sql = _data_type(data_type) if data_type and isinstance(data_type, str) else (None, None)
    if to is None:
        return call("cast", [e])
    node = exp.Cast(this=e, to=to.copy())  # a copy: a node has one parent
    if type_sql is not None:
        node.meta[_TYPE_SQL] = type_sql
    return node


#: Spark type text -> its parsed sqlglot type (None: sqlglot does not know it) and that type's
#: text in a ``CAST`` (None: rendered by the generator each time). Parsing builds a dialect and a
#: tokenizer each time; a plan casts to the same few types again and again.
_TYPES: dict[str, tuple[exp.DataType | None, str | None]] = {}
#: Key of a cast's type text in its ``meta`` (sqlglot's own place for such notes).
_TYPE_SQL = "lineage_type_sql"
#: Key of a tree's rendered text in its ``meta`` (:func:`render`).
_TEXT = "lineage_text"
_SIZE = "lineage_size"
#: :func:`size` counts no further (the walk only asks whether a tree is past ``MAX_SQL_SIZE``).
SIZE_LIMIT = 10_000
_PROBE = "CAST(x AS "


def _data_type(text: str) -> tuple[exp.DataType | None, str | None]:
    if text in _TYPES:
        return _TYPES[text]
    try:
        found: exp.DataType | None = exp.DataType.build(text, dialect="spark")
    except Exception:  # noqa: BLE001 - an exotic type sqlglot does not know: keep the text readable
        found = None
    type_sql = None
    # Spark's generator writes a cast to JSON or to a nested type (from/to_json) otherwise.
    if found is not None and not found.args.get("nested") and not found.is_type("json"):
        probe = _generate(exp.Cast(this=column("x"), to=found.copy()), _generator())
        if probe.startswith(_PROBE) and probe.endswith(")"):
            type_sql = probe[len(_PROBE):-1]
    if len(_TYPES) > _MEMO_MAX:
        _TYPES.clear()
    _TYPES[text] = (found, type_sql)
    return found, type_sql


def case(branches: Sequence[tuple[exp.Expression, exp.Expression]], default: exp.Expression | None) -> exp.Expression:
    node = exp.Case()
    for cond, value in branches:
        node = node.when(cond, value, copy=False)
    return node.else_(default, copy=False) if default is not None else node


#: sqlglot's base class of tree nodes (``Expr`` since sqlglot 26; ``Expression`` before).
_NODE = getattr(exp, "Expr", exp.Expression)


def size(e: exp.Expression) -> int:
    """Node count of an expression tree (what ``e.walk()`` counts), at most ``SIZE_LIMIT + 1``.

    The count is kept in the tree's ``meta``, as its text is (:func:`render`; the walk never
    changes a tree in place): the walk sizes each origin's tree as it makes it, from operands'
    trees sized before, and a kept count stands for its whole subtree, so a chain of ``n``
    operators is counted in ``n`` steps, not ``n**2 / 2``.

    >>> add = binary("Add", column("a"), literal(1, "int"))
    >>> product = binary("Multiply", add, add)  # (a + 1) * (a + 1)
    >>> size(add), size(product), len(list(product.walk()))
    (4, 11, 11)
    """
    meta = e._meta
    if meta is not None and _SIZE in meta:
        return meta[_SIZE]
    n = 0
    stack = [e]
    node_type = _NODE
    while stack and n <= SIZE_LIMIT:
        node = stack.pop()
        meta = node._meta
        if meta is not None and _SIZE in meta:
            n += meta[_SIZE]
            continue
        n += 1
        for v in node.args.values():
            if type(v) is list:
                stack.extend([x for x in v if isinstance(x, node_type)])
            elif isinstance(v, node_type):
                stack.append(v)
    n = min(n, SIZE_LIMIT + 1)
    e.meta[_SIZE] = n
    return n


_local = threading.local()


def render(e: exp.Expression | None) -> str | None:
    """``e`` as Spark SQL text: exactly what ``e.sql(dialect="spark", normalize_functions="lower")``
    gives (``tests/test_sqltext.py`` compares them), at a fraction of the cost.

    One sqlglot generator per thread is reused (building one per call was most of the cost of
    short expressions: a 1,000-column select renders 1,000). The operators the walk chains most
    (``+ - * /``, comparisons, ``AND``/``OR``, parentheses), function calls and the shapes the walk
    makes of sort keys, ``BETWEEN``, ``IN`` lists, ``CASE``, ``NOT``, negation and windows are
    joined here from their operands' text, and a column or literal
    is rendered once per thread (memo): a 300-step ``withColumn`` chain renders trees of ~400
    nodes 300 times. Anything else goes to the generator (on a copy: the generator may change
    what it renders, and origins share their trees).

    A tree's text is kept in its ``meta`` (the walk builds a tree once and never changes it in
    place; a copy keeps the text with the tree it copies): an origin whose text is asked again
    (an edge, an influence, a union branch), or whose tree is an operand of a joined operator
    rendered later, is rendered once.

    >>> left = binary("Add", column("a"), literal(1, "int"))
    >>> render(left), render(binary("GreaterThan", left, column("b")))
    ('a + 1', '(a + 1) > b')
    >>> left.meta[_TEXT]
    'a + 1'
    """
    if e is None:
        return None
    meta = e._meta
    if meta is not None and _TEXT in meta:
        return meta[_TEXT]
    gen = _generator()
    try:
        text = _text(e, gen, _local.memo)
    except RecursionError:  # a very deep tree: the generator's own (iterative) way
        text = _generate(e, gen)
    e.meta[_TEXT] = text
    return text


def _generator() -> Any:
    """This thread's Spark SQL generator (its memo of rendered columns and literals beside it)."""
    gen = getattr(_local, "generator", None)
    if gen is None:
        gen = _local.generator = Dialect.get_or_raise("spark").generator(normalize_functions="lower")
        _local.memo = {}
        # what :func:`_ordered` writes as the generator would (its rule for this dialect)
        _local.nulls_small = gen.dialect.NULL_ORDERING == "nulls_are_small" and gen.NULL_ORDERING_SUPPORTED is True
    return gen


def _generate(e: exp.Expression, gen: Any) -> str:
    gen._next_name = name_sequence("_t")  # the one counter it keeps across calls (unnamed aliases)
    return gen.generate(e, copy=True)


#: Operators whose text is ``left <op> right`` whatever surrounds them (sqlglot's ``binary``, and
#: ``connector_sql`` for AND / OR).
_JOINED = {exp.Add: " + ", exp.Sub: " - ", exp.Mul: " * ", exp.Div: " / ", exp.EQ: " = ", exp.NEQ: " <> ",
           exp.GT: " > ", exp.GTE: " >= ", exp.LT: " < ", exp.LTE: " <= ", exp.And: " AND ", exp.Or: " OR "}
_MEMO_MAX = 100_000


def _text(e: exp.Expression, gen: Any, memo: dict[Any, str]) -> str:
    meta = e._meta
    if meta is not None:
        kept = meta.get(_TEXT)
        if kept is not None:
            return kept
    t = type(e)
    if e.comments:
        return _generate(e, gen)
    args = e.args
    op = _JOINED.get(t)
    if op is not None and not args.get("operator") and len(args) == 2:
        return _text(args["this"], gen, memo) + op + _text(args["expression"], gen, memo)
    if t is exp.Paren and len(args) == 1:
        return "(" + _text(args["this"], gen, memo) + ")"
    if t is exp.Cast and len(args) == 2 and type(args["this"]) is not exp.Literal and meta:
        type_sql = meta.get(_TYPE_SQL)  # set by cast(): not to JSON or a nested type
        if type_sql is not None:
            return "CAST(" + _text(args["this"], gen, memo) + " AS " + type_sql + ")"
    shape = _SHAPES.get(t)
    if shape is not None:
        text = shape(args, gen, memo)
        if text is not None:
            return text
    if t is exp.Anonymous and len(args) == 2 and type(args["this"]) is str:  # sqlglot's ``func``
        return (args["this"].lower() + "("
                + ", ".join([_text(a, gen, memo) for a in args["expressions"] if a is not None and a is not True
                             and a is not False]) + ")")
    if t is exp.Column and len(args) == 1 and type(args["this"]) is exp.Identifier:
        ident = args["this"]
        key = (t, ident.this, bool(ident.args.get("quoted")), len(ident.args))
    elif t is exp.Literal and len(args) == 2:
        key = (t, args["this"], bool(args.get("is_string")))
    else:
        return _generate(e, gen)
    found = memo.get(key)
    if found is None:
        if len(memo) > _MEMO_MAX:
            memo.clear()
        found = memo[key] = _generate(e, gen)
    return found


# -- shapes joined here as the Spark generator joins them (``*_sql`` of sqlglot's generator); an
# argument they do not know, or a comment, leaves the node to the generator (None).

def _plain(node: Any) -> bool:
    return isinstance(node, _NODE) and not node.comments


def _ordered(args: dict[str, Any], gen: Any, memo: dict[Any, str]) -> str | None:
    """``ordered_sql`` where nulls sort low and ``NULLS FIRST/LAST`` is written (Spark)."""
    if not _local.nulls_small or args.get("with_fill") or not _plain(args.get("this")) or \
            not args.keys() <= {"this", "desc", "nulls_first", "with_fill"}:
        return None
    desc, nulls_first = args.get("desc"), args.get("nulls_first")
    order = " DESC" if desc else (" ASC" if desc is False else "")
    nulls = " NULLS FIRST" if nulls_first and desc else (" NULLS LAST" if not nulls_first and not desc else "")
    return _text(args["this"], gen, memo) + order + nulls


def _between(args: dict[str, Any], gen: Any, memo: dict[Any, str]) -> str | None:
    if args.get("symmetric") or not args.keys() <= {"this", "low", "high", "symmetric"} or \
            not all(_plain(args.get(k)) for k in ("this", "low", "high")):
        return None
    return (_text(args["this"], gen, memo) + " BETWEEN " + _text(args["low"], gen, memo) + " AND "
            + _text(args["high"], gen, memo))


def _in(args: dict[str, Any], gen: Any, memo: dict[Any, str]) -> str | None:
    values = args.get("expressions")
    if not args.keys() <= {"this", "expressions", "query", "unnest", "field", "is_global"} or \
            any(args.get(k) for k in ("query", "unnest", "field", "is_global")) or not _plain(args.get("this")) \
            or type(values) is not list or not values or not all(_plain(v) for v in values):
        return None
    return _text(args["this"], gen, memo) + " IN (" + ", ".join([_text(v, gen, memo) for v in values]) + ")"


def _case(args: dict[str, Any], gen: Any, memo: dict[Any, str]) -> str | None:
    ifs, default, operand = args.get("ifs"), args.get("default"), args.get("this")
    if not args.keys() <= {"this", "ifs", "default"} or type(ifs) is not list or \
            any(type(i) is not exp.If or not i.args.keys() <= {"this", "true"} or not _plain(i.args.get("this"))
                or not _plain(i.args.get("true")) for i in ifs) or \
            (default is not None and not _plain(default)) or (operand is not None and not _plain(operand)):
        return None
    parts = ["CASE " + _text(operand, gen, memo) if operand is not None else "CASE"]
    for i in ifs:
        parts += ["WHEN " + _text(i.args["this"], gen, memo), "THEN " + _text(i.args["true"], gen, memo)]
    if default is not None:
        parts.append("ELSE " + _text(default, gen, memo))
    parts.append("END")
    return " ".join(parts)


def _window(args: dict[str, Any], gen: Any, memo: dict[Any, str]) -> str | None:
    """``window_sql`` of a window as the walk writes one: ``PARTITION BY`` and ``ORDER BY``, no frame."""
    partition, order = args.get("partition_by"), args.get("order")
    if not args.keys() <= {"this", "partition_by", "order"} or not _plain(args.get("this")):
        return None
    parts = []
    if partition:
        if type(partition) is not list or not all(_plain(p) for p in partition):
            return None
        parts.append("PARTITION BY " + ", ".join([_text(p, gen, memo) for p in partition]))
    if order is not None:
        if type(order) is not exp.Order or order.comments or order.args.keys() != {"expressions"}:
            return None
        keys = order.args["expressions"]
        if type(keys) is not list or not keys or not all(_plain(k) for k in keys):
            return None
        parts.append("ORDER BY " + ", ".join([_text(k, gen, memo) for k in keys]))
    return _text(args["this"], gen, memo) + " OVER (" + " ".join(parts) + ")"


def _not(args: dict[str, Any], gen: Any, memo: dict[Any, str]) -> str | None:
    return "NOT " + _text(args["this"], gen, memo) if args.keys() == {"this"} and _plain(args["this"]) else None


def _neg(args: dict[str, Any], gen: Any, memo: dict[Any, str]) -> str | None:
    if args.keys() != {"this"} or not _plain(args["this"]):
        return None
    text = _text(args["this"], gen, memo)
    return ("- " if text[:1] == "-" else "-") + text  # "- -5", never the comment "--5"


def _null(args: dict[str, Any], gen: Any, memo: dict[Any, str]) -> str | None:
    return "NULL" if not args else None


def _star(args: dict[str, Any], gen: Any, memo: dict[Any, str]) -> str | None:
    return "*" if not any(args.values()) else None


_SHAPES = {exp.Ordered: _ordered, exp.Between: _between, exp.In: _in, exp.Case: _case, exp.Not: _not,
           exp.Neg: _neg, exp.Null: _null, exp.Star: _star, exp.Window: _window}


_DAY_TIME_UNITS = ("DAY", "HOUR", "MINUTE", "SECOND")
_MICROS = {"DAY": 86_400_000_000, "HOUR": 3_600_000_000, "MINUTE": 60_000_000, "SECOND": 1_000_000}


def interval(value: object, data_type: str) -> exp.Expression:
    """An ANSI interval literal as a person writes it; Spark's JSON holds micros or months.

    >>> render(interval("1209600000000", "interval day"))
    "INTERVAL '14' DAY"
    >>> render(interval("-93784500000", "interval day to second"))
    "INTERVAL '-1 02:03:04.500000' DAY TO SECOND"
    >>> render(interval("27", "interval year to month"))
    "INTERVAL '2-3' YEAR TO MONTH"
    >>> render(interval("3", "interval month"))
    "INTERVAL '3' MONTH"
    """
    fields = data_type.upper().split()[1:]  # "interval day to second" -> ["DAY", "TO", "SECOND"]
    start, end = fields[0] if fields else "", fields[-1] if fields else ""
    try:
        number = int(str(value))
    except ValueError:  # a legacy CalendarInterval prints its own text ("14 days")
        return exp.Interval(this=exp.Literal.string(str(value)))
    sign, number = ("-" if number < 0 else ""), abs(number)
    unit = start if start == end else f"{start} TO {end}"
    if start in ("YEAR", "MONTH"):
        text = f"{number // 12}-{number % 12}" if start != end else str(number // 12 if start == "YEAR" else number)
        return exp.Interval(this=exp.Literal.string(sign + text), unit=exp.Var(this=unit))
    if start not in _DAY_TIME_UNITS or end not in _DAY_TIME_UNITS:
        return exp.Interval(this=exp.Literal.string(sign + str(number)), unit=exp.Var(this="MICROSECOND"))
    used = _DAY_TIME_UNITS[_DAY_TIME_UNITS.index(start):_DAY_TIME_UNITS.index(end) + 1]
    text, rest = "", number
    for i, field in enumerate(used):
        amount, rest = divmod(rest, _MICROS[field]) if field != end else (rest, 0)
        if field == "SECOND":
            part = f"{amount / 1e6:.6f}" if (amount % 1_000_000 or len(used) > 1) else str(amount // 1_000_000)
        else:
            part = str(amount // _MICROS[field] if field == end else amount)
        if i:
            text += (" " if used[i - 1] == "DAY" else ":") + part.zfill(9 if field == "SECOND" else 2)
        else:
            text = part
    return exp.Interval(this=exp.Literal.string(sign + text), unit=exp.Var(this=unit))
