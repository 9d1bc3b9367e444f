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
}

BINARY = {
    "Add": exp.Add, "Subtract": exp.Sub, "Multiply": exp.Mul, "Divide": exp.Div,
    "Remainder": exp.Mod, "EqualTo": exp.EQ, "EqualNullSafe": exp.NullSafeEQ,
    "GreaterThan": exp.GT, "GreaterThanOrEqual": exp.GTE, "LessThan": exp.LT,
    "LessThanOrEqual": exp.LTE, "And": exp.And, "Or": exp.Or,
    "BitwiseAnd": exp.BitwiseAnd, "BitwiseOr": exp.BitwiseOr, "BitwiseXor": exp.BitwiseXor,
}

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def function_name(cls_name: str) -> str:
    """Spark SQL function name for an expression class: ``ConcatWs`` -> ``concat_ws``."""
    if cls_name in FUNCTION_NAMES:
        return FUNCTION_NAMES[cls_name]
    return _CAMEL.sub("_", cls_name).lower()


def column(name: str) -> exp.Expression:
    """A reference to the attribute named ``name``: one identifier, backticked when it holds a dot
    (```s.x``` is a column named ``s.x``; a struct field is a ``GetStructField`` of its column)."""
    return exp.column(exp.to_identifier(name))


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
    return builder(this=_wrap(left), expression=_wrap(right)) if builder else None


def _wrap(e: exp.Expression) -> exp.Expression:
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
