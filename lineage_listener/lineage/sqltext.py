"""Build the ``expression`` text of edges as sqlglot trees, rendered as Spark SQL."""
from __future__ import annotations

import re
from collections.abc import Sequence

import sqlglot.expressions as exp

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


def literal(value: object, data_type: str | None) -> exp.Expression:
    if value is None:
        return exp.null()
    if data_type in ("string",) or (data_type is None and not _is_number(str(value))):
        return exp.Literal.string(str(value))
    if data_type == "boolean":
        return exp.Boolean(this=str(value).lower() == "true")
    return exp.Literal.number(str(value))


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
    if not data_type or not isinstance(data_type, str):
        return call("cast", [e])
    try:
        return exp.Cast(this=e, to=exp.DataType.build(data_type, dialect="spark"))
    except Exception:  # noqa: BLE001 - an exotic type sqlglot does not know: keep the text readable
        return call("cast", [e])


def case(branches: Sequence[tuple[exp.Expression, exp.Expression]], default: exp.Expression | None) -> exp.Expression:
    node = exp.Case()
    for cond, value in branches:
        node = node.when(cond, value, copy=False)
    return node.else_(default, copy=False) if default is not None else node


def size(e: exp.Expression) -> int:
    """Node count of an expression tree (bounded walk)."""
    n = 0
    for _ in e.walk():
        n += 1
        if n > 10_000:
            break
    return n


def render(e: exp.Expression | None) -> str | None:
    return None if e is None else e.sql(dialect="spark", normalize_functions="lower")


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
