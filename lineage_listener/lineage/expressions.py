"""Expression rules: what an expression's value flows from, keyed by Spark class.

Each rule takes the expression :class:`~lineage_listener.plan.tree.Node` and the
current :class:`~lineage_listener.lineage.walker.Walk` and returns an
:class:`~lineage_listener.lineage.model.Origin`: the value's flows (direct
sources with their transform), influences (conditional/window deciders) and SQL
text. A class without a rule is treated as a row-by-row function of its
children (``derived``), and logged once.
"""
from __future__ import annotations

from dataclasses import replace

import sqlglot.expressions as exp

from lineage_listener.lineage import column_path, sqltext
from lineage_listener.lineage.model import (Column, Flow, Influence, Origin, Transform, as_influences, combine,
                                            origin)
from lineage_listener.lineage.walker import DEFAULT, RULES, Walk, rule
from lineage_listener.plan.tree import Node

#: Functions whose output hides the input value: a path through them is ``masking``.
MASKING = {"Md5", "Sha1", "Sha2", "Crc32", "Murmur3Hash", "XxHash64", "Mask", "HiveHash",
           "Count", "ApproxCountDistinct", "HyperLogLogPlusPlus", "CountIf", "CountMinSketchAgg"}

#: Window functions whose value is a position in the window, not a value of any column.
RANKING = {"Rank", "DenseRank", "PercentRank", "CumeDist", "RowNumber", "NTile"}
#: Offset window functions copy one value from another row: ``derived``, not ``aggregate``.
OFFSET = {"Lag", "Lead", "NthValue"}


def evaluate(node: Node, walk: Walk) -> Origin:
    """The :class:`Origin` of an expression's value (the walk dispatches on its class)."""
    return walk.expression(node)


def children_of(node: Node, walk: Walk) -> list[Origin]:
    return [walk.expression(c) for c in node.children]


def sql_of(o: Origin) -> exp.Expression:
    return o.sql if o.sql is not None else exp.null()


# -- rules -------------------------------------------------------------------------


@rule("AttributeReference", "PrettyAttribute", "OuterReference", "OuterScopeReference")
def attribute(node: Node, walk: Walk) -> Origin:
    inner = node.children or node.trees("e")  # OuterReference holds its attribute in field ``e``
    if node.name.startswith("Outer") and inner:
        return evaluate(inner[0], walk)
    if node.expr_id in walk.grouping_ids:  # grouping_id(a, b) reads Spark's grouping-set bitmask
        return grouping_call("grouping_id", list(walk.grouping_ids[node.expr_id]), walk)
    return walk.lookup(node)


@rule("Alias", "KnownNotNull", "KnownFloatingPointNormalized", "PromotePrecision",
      "CheckOverflow", "NormalizeNaNAndZero", "Unevaluable", "AssertNotNull", "UpCast", "SQLScalarFunction",
      "TempResolvedColumn")
def passthrough(node: Node, walk: Walk) -> Origin:
    """Wrappers whose value is their child's (a SQL scalar function's child is its body, its
    arguments in place: docs/reference/semantics.md; a column of HAVING the analyzer resolved
    can stay wrapped in a ``TempResolvedColumn`` inside a rewritten function's arguments)."""
    return evaluate(node.children[0], walk) if node.children else Origin()


@rule("SortOrder")
def sort_order(node: Node, walk: Walk) -> Origin:
    """A sort key as written: ``amount DESC``; ``NULLS FIRST/LAST`` only where not Spark's default."""
    key = evaluate(node.children[0], walk) if node.children else Origin()
    desc = "Descending" in str(node.get("direction"))
    nulls_first = "NullsFirst" in str(node.get("nullOrdering") or ("" if desc else "NullsFirst"))
    if key.sql is None:
        return key
    return origin(key.flows, key.influences, exp.Ordered(this=key.sql, desc=desc or None, nulls_first=nulls_first))


@rule("Literal")
def literal(node: Node, walk: Walk) -> Origin:
    dt = node.get("dataType")
    if isinstance(dt, str) and dt.startswith("interval") and node.get("value") is not None:
        return Origin(sql=sqltext.interval(node.get("value"), dt))  # micros or months as INTERVAL '14' DAY
    return Origin(sql=sqltext.literal(node.get("value"), dt if isinstance(dt, str) else None))


@rule("Cast", "AnsiCast", "TryCast")
def cast(node: Node, walk: Walk) -> Origin:
    column = grouping_column(node, walk)
    if column is not None:
        return grouping_call("grouping", [column], walk)
    child = evaluate(node.children[0], walk)
    dt = node.get("dataType")
    if node.children[0].name == "Literal" or (dt is not None and node.children[0].get("dataType") == dt):
        return child  # the analyzer's coercion of a constant, or a cast to the type it already has
    return combine([child], Transform.DERIVED, sqltext.cast(sql_of(child), dt if isinstance(dt, str) else None))


@rule(DEFAULT)
def derived_function(node: Node, walk: Walk) -> Origin:
    """Default: a row-by-row function of all children (operators, functions, UDFs)."""
    parts = children_of(node, walk)
    sql = None
    if len(parts) == 2:
        sql = sqltext.binary(node.name, sql_of(parts[0]), sql_of(parts[1]))
    if sql is None:
        name = node.get("name") if node.name in ("PythonUDF", "ScalaUDF") and isinstance(node.get("name"), str) \
            else sqltext.function_name(node.name)
        sql = sqltext.call(name or sqltext.function_name(node.name), [sql_of(p) for p in parts])
    return combine(parts, Transform.DERIVED, sql, masking=node.name in MASKING)


@rule("NamedLambdaVariable")
def lambda_variable(node: Node, walk: Walk) -> Origin:
    """``x`` in ``x -> x + 1``: an element of the function's own argument, which carries the flow."""
    return Origin(sql=sqltext.column(str(node.get("name") or "x")))


@rule("LambdaFunction")
def lambda_function(node: Node, walk: Walk) -> Origin:
    """``x -> x + id``: the body's columns flow (``id``); its variables are shown by name.

    >>> from lineage_listener.plan.tree import parse
    >>> x = '{"class": "e.NamedLambdaVariable", "num-children": 0, "name": "x"}'
    >>> Walk().expression(parse(f'[{{"class": "e.LambdaFunction", "num-children": 2}}, '
    ...     f'{{"class": "e.Add", "num-children": 2}}, {x}, {x}, {x}]')).text()
    'x -> x + x'
    """
    parts = children_of(node, walk)
    if not parts:
        return Origin()
    body, args = parts[0], [sql_of(p) for p in parts[1:]]
    return origin(body.flows, body.influences, exp.Lambda(this=sql_of(body), expressions=args))


@rule("Not")
def not_(node: Node, walk: Walk) -> Origin:
    child = evaluate(node.children[0], walk)
    return combine([child], Transform.DERIVED, exp.Not(this=sql_of(child)))


@rule("IsNull", "IsNotNull")
def is_null(node: Node, walk: Walk) -> Origin:
    child = evaluate(node.children[0], walk)
    sql = exp.Is(this=sql_of(child), expression=exp.null())
    return combine([child], Transform.DERIVED, exp.Not(this=sql) if node.name == "IsNotNull" else sql)


@rule("In", "InSet")
def in_list(node: Node, walk: Walk) -> Origin:
    parts = children_of(node, walk)
    sql = exp.In(this=sql_of(parts[0]), expressions=[sql_of(p) for p in parts[1:]]) if parts else None
    return combine(parts, Transform.DERIVED, sql)


@rule("AggregateExpression")
def aggregate(node: Node, walk: Walk) -> Origin:
    """An aggregate over many rows. ``FILTER (WHERE c)`` decides which rows count: ``c`` is
    ``conditional``, or the direct source when the value reads no column (``count(*) FILTER
    (WHERE amount > 10)``), as for CASE (see :func:`choice`)."""
    fn = node.children[0]
    if fn.name in RULES:  # an aggregate function with a rule of its own (PivotFirst)
        inner = evaluate(fn, walk)
        parts, sql, masking = [inner], sql_of(inner), False
    else:
        parts = children_of(fn, walk)
        name = sqltext.function_name(fn.name)
        args = [sql_of(p) for p in parts] or [exp.Star()]
        if fn.name == "Count" and all(p.sql is not None and isinstance(p.sql, exp.Literal) for p in parts):
            args = [exp.Star()]
        sql = sqltext.call(name, [exp.Distinct(expressions=args)] if node.get("isDistinct") else args)
        masking = fn.name in MASKING
    filters = [evaluate(extra, walk) for extra in node.children[1:]]
    if filters:
        sql = exp.Filter(this=sql, expression=exp.Where(this=sql_of(filters[0])))
    value = combine(parts, Transform.AGGREGATE, sql, masking=masking)
    if filters and not value.flows:
        return combine([value, *filters], Transform.AGGREGATE, sql, masking=masking)
    influences = set(value.influences)
    for f in filters:
        influences |= as_influences(f, Transform.CONDITIONAL)
    return origin(value.flows, influences, sql)


@rule("WindowExpression")
def window(node: Node, walk: Walk) -> Origin:
    fn, spec = node.children[0], node.children[1]
    if fn.name in RANKING:  # their children are the window's own ORDER BY keys: no value flows
        value = Origin(sql=sqltext.call(sqltext.function_name(fn.name), []))
    else:
        value = evaluate(fn, walk)
    if fn.name != "AggregateExpression" and fn.name not in RANKING | OFFSET:  # computed over the window's rows
        value = combine([value], Transform.AGGREGATE, value.sql, masking=fn.name in MASKING)
    keys = [evaluate(c, walk) for c in spec.children if c.name != "SpecifiedWindowFrame"
            and not c.name.endswith("Frame")]
    partition = [sql_of(k) for k in keys[: len(spec.get("partitionSpec") or ())]]
    order = [sql_of(k) for k in keys[len(partition):]]
    spec_sql = exp.Window(this=sql_of(value), partition_by=partition or None,
                          order=exp.Order(expressions=order) if order else None)
    text = sqltext.render(exp.Window(this=exp.Anonymous(this="", expressions=[]), partition_by=partition or None,
                                     order=exp.Order(expressions=order) if order else None))
    text = (text or "").replace("() OVER ", "OVER ", 1).strip()
    influences = set(value.influences)
    for k in keys:
        influences |= as_influences(k, Transform.WINDOW, text)
    return origin(value.flows, influences, spec_sql)


@rule("CaseWhen")
def case_when(node: Node, walk: Walk) -> Origin:
    parts = children_of(node, walk)
    pairs = [(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
    default = parts[-1] if len(parts) % 2 else None
    values = [v for _, v in pairs] + ([default] if default else [])
    sql = sqltext.case([(sql_of(c), sql_of(v)) for c, v in pairs], sql_of(default) if default else None)
    return choice(values, [c for c, _ in pairs], sql)


def choice(values: list[Origin], conditions: list[Origin], sql: exp.Expression,
           text: str | None = None) -> Origin:
    """A value picked by conditions: values are ``derived``, conditions ``conditional``.

    When no value reads a column (``CASE WHEN x = 1 THEN 'a' ELSE 'b' END``), the
    value is computed from the conditions alone: they are its direct sources.
    """
    out = combine(values, Transform.DERIVED, sql)
    if not out.flows:
        return combine([out, *conditions], Transform.DERIVED, sql)
    influences = set(out.influences)
    for cond in conditions:
        influences |= as_influences(cond, Transform.CONDITIONAL, text)
    return origin(out.flows, influences, sql)


@rule("If")
def if_(node: Node, walk: Walk) -> Origin:
    cond, yes, no = children_of(node, walk)
    return choice([yes, no], [cond], sqltext.call("if", [sql_of(cond), sql_of(yes), sql_of(no)]))


@rule("PivotFirst")
def pivot_first(node: Node, walk: Walk) -> Origin:
    """``PIVOT (sum(v) FOR k IN ('a' AS a, ...))``: ``v`` is the value, ``k`` only picks the
    output column it lands in (``conditional``, as in Spark's other pivot form, ``if(k <=> 'a', v, null)``)."""
    parts = children_of(node, walk)
    if len(parts) < 2:
        return derived_function(node, walk)
    pivot, value = parts[0], parts[1]
    return choice([value], [pivot], sqltext.call("pivot_first", [sql_of(pivot), sql_of(value)]))


@rule("Nvl2")
def nvl2(node: Node, walk: Walk) -> Origin:
    """``nvl2(a, b, c)``: ``a`` decides the branch, ``b`` and ``c`` are the values."""
    args = [evaluate(t, walk) for key in ("expr1", "expr2", "expr3") for t in node.trees(key)]
    if len(args) != 3:  # only the replacement ``if(a IS NOT NULL, b, c)`` was written
        return evaluate(node.children[0], walk) if node.children else Origin()
    sql = sqltext.call("nvl2", [sql_of(a) for a in args])
    return choice(args[1:], args[:1], sql, sqltext.render(sql))


@rule("Coalesce", "Nvl", "IfNull", "NullIf")
def null_choice(node: Node, walk: Walk) -> Origin:
    """COALESCE/NVL/NULLIF: values are derived; every argument decides which one wins."""
    if node.name in ("NullIf", "Nvl", "IfNull") and node.trees("left"):
        args = [evaluate(t, walk) for key in ("left", "right") for t in node.trees(key)]
        values = args[:1] if node.name == "NullIf" else args
    else:
        args = children_of(node, walk)
        values = args
    sql = sqltext.call(sqltext.function_name(node.name), [sql_of(a) for a in args])
    out = combine(values, Transform.DERIVED, sql)
    influences = set(out.influences)
    for a in args:
        influences |= as_influences(a, Transform.CONDITIONAL, sqltext.render(sql))
    return origin(out.flows, influences, sql)


@rule("CreateNamedStruct")
def named_struct(node: Node, walk: Walk) -> Origin:
    """``struct(a AS x)`` / ``named_struct('x', a)``: the struct is derived from every value,
    and each field keeps its own origin, so a written struct ``s`` gets ``s.x <- a`` too.

    >>> from lineage_listener.plan.tree import parse
    >>> o = Walk().expression(parse('[{"class": "e.CreateNamedStruct", "num-children": 2}, '
    ...     '{"class": "e.Literal", "num-children": 0, "value": "x", "dataType": "string"}, '
    ...     '{"class": "e.Literal", "num-children": 0, "value": "1", "dataType": "integer"}]'))
    >>> [(name, value.text()) for name, value in o.fields]
    [('x', '1')]
    """
    parts = children_of(node, walk)  # once: nested structs would otherwise be walked 2^depth times
    whole = combine(parts, Transform.DERIVED, sqltext.call("named_struct", [sql_of(p) for p in parts]))
    fields = []
    for name, value in zip(node.children[0::2], parts[1::2]):
        text = name.get("value") if name.name == "Literal" else None
        if not isinstance(text, str):  # a field name computed at run time: the struct as a whole only
            return whole
        fields.append((text, value))
    return replace(whole, fields=tuple(fields))


@rule("GetStructField")
def struct_field(node: Node, walk: Walk) -> Origin:
    """``address.city``: a copy of a struct column's field is a copy of ``address.city``;
    a field of a struct built in the same query is that field's own value."""
    child = evaluate(node.children[0], walk)
    name = node.get("name") or _field_name(node) or str(node.get("ordinal"))
    built = dict(child.fields)
    if name in built:
        return built[name]
    sql = exp.Dot(this=sql_of(child), expression=exp.to_identifier(name))
    flows = {Flow(Column(f.source.dataset, column_path.child(f.source.name, name)), f.transform, f.masking,
                  guess=f.guess) if f.transform in (Transform.COPY,) else f for f in child.flows}
    return origin(flows, child.influences, sql)


def _struct_field(node: Node) -> dict | None:
    """The struct field a ``GetStructField`` reads (name, type), from its child's struct type:
    ``s.*`` expands to ``GetStructField``s that carry only the ordinal."""
    child = node.children[0] if node.children else None
    parent = child.get("dataType") if child is not None else None
    if parent is None and child is not None and child.name == "GetStructField":
        parent = (_struct_field(child) or {}).get("type")
    fields = parent.get("fields") if isinstance(parent, dict) else None
    ordinal = node.get("ordinal")
    if isinstance(fields, list) and isinstance(ordinal, int) and ordinal < len(fields):
        return fields[ordinal]
    return None


def _field_name(node: Node) -> str | None:
    return (_struct_field(node) or {}).get("name")


@rule("ScalarSubquery", "LateralSubquery")
def scalar_subquery(node: Node, walk: Walk) -> Origin:
    """The value of a scalar subquery: its single output column, computed inside it."""
    sub = walk.subquery(node)
    if sub is None:
        return Origin()
    outputs, influences = sub
    value = outputs[0] if outputs else Origin()
    sql = exp.Subquery(this=subquery_select(value))
    out = combine([value], Transform.COPY, sql)
    return origin(out.flows, set(out.influences) | {Influence(i.source, Transform.CONDITIONAL, i.expression)
                                                     for i in influences}, sql)


@rule("ListQuery", "Exists", "InSubquery")
def predicate_subquery(node: Node, walk: Walk) -> Origin:
    """IN / EXISTS subqueries: every column they read decides which rows pass."""
    parts: list[Origin] = [evaluate(c, walk) for c in node.children]
    for t in node.trees("values"):
        parts.append(evaluate(t, walk))
    flows: set[Flow] = set()
    influences: set[Influence] = set()
    for p in parts:
        flows |= p.flows
        influences |= p.influences
    sub = walk.subquery(node)
    outputs: list[Origin] = []
    if sub is not None:
        outputs, inner = sub
        for o in outputs:
            flows |= o.flows
            influences |= o.influences
        influences |= set(inner)
    select = subquery_select(*outputs) if sub is not None else exp.select(exp.Star())
    if node.name == "Exists":
        sql: exp.Expression = exp.Exists(this=select)
    elif node.name == "ListQuery":
        sql = exp.Subquery(this=select)
    else:
        sql = exp.In(this=sql_of(parts[0]) if parts else exp.null(), query=exp.Subquery(this=select))
        if len(parts) > 1 and isinstance(parts[1].sql, exp.Subquery):
            sql = exp.In(this=sql_of(parts[0]), query=parts[1].sql)
    return combine([Origin(frozenset(flows), frozenset(influences))], Transform.DERIVED, sql)


def subquery_select(*outputs: Origin) -> exp.Select:
    """``SELECT <outputs> FROM <datasets they read>``: a readable stand-in for a subquery."""
    datasets = sorted({f.source.dataset for o in outputs for f in o.flows}
                      | {i.source.dataset for o in outputs for i in o.influences})
    select = exp.select(*[sql_of(o) for o in outputs] or [exp.Literal.number(1)])
    return select.from_(exp.Var(this=datasets[0]), copy=False) if datasets else select


# -- Spark's internal forms, shown as a person writes them ------------------------------


@rule("Between")
def between(node: Node, walk: Walk) -> Origin:
    """``x BETWEEN a AND b`` (Spark 4 replaces it by ``With(x >= a AND x <= b)`` over a common ``x``)."""
    parts = [evaluate(t, walk) for key in ("input", "lower", "upper") for t in node.trees(key)]
    if len(parts) != 3:
        return evaluate(node.children[0], walk) if node.children else Origin()
    return combine(parts, Transform.DERIVED, exp.Between(this=sql_of(parts[0]), low=sql_of(parts[1]),
                                                         high=sql_of(parts[2])))


@rule("With")
def with_(node: Node, walk: Walk) -> Origin:
    """``With(child, defs)``: ``child`` reads each common expression of ``defs`` by reference."""
    defs = [evaluate(d, walk) for d in node.children[1:]]
    walk.common.append(defs)
    try:
        return evaluate(node.children[0], walk) if node.children else Origin()
    finally:
        walk.common.pop()


@rule("CommonExpressionRef")
def common_ref(node: Node, walk: Walk) -> Origin:
    """The common expression a ``With`` defines (JSON drops the ids: one def, or the one of its type)."""
    defs = walk.common[-1] if walk.common else []
    if len(defs) == 1:
        return defs[0]
    return combine(defs, Transform.COPY, None) if defs else Origin()


@rule("ExtractANSIIntervalDays", "ExtractANSIIntervalMonths", "CommonExpressionDef")
def inner_value(node: Node, walk: Walk) -> Origin:
    """Wrappers the analyzer adds around a value the user wrote (``d + INTERVAL '14' DAY``)."""
    return evaluate(node.children[0], walk) if node.children else Origin()


@rule("DateAdd", "DateSub")
def date_add(node: Node, walk: Walk) -> Origin:
    """``d + INTERVAL '14' DAY`` is analyzed as ``date_add(d, extract_ansi_interval_days(...))``,
    ``d - INTERVAL ...`` with a ``-`` around either of them."""
    days = node.children[1] if len(node.children) == 2 else None
    inner = days.children[0] if days is not None and days.name == "UnaryMinus" and days.children else days
    if inner is None or inner.name != "ExtractANSIIntervalDays":
        return derived_function(node, walk)
    start, amount = children_of(node, walk)
    value = sql_of(amount)
    subtract = node.name == "DateSub"
    while isinstance(value, exp.Neg):
        subtract, value = not subtract, value.this
    op = exp.Sub if subtract else exp.Add
    return combine([start, amount], Transform.DERIVED, op(this=sql_of(start), expression=value))


@rule("UnaryMinus")
def unary_minus(node: Node, walk: Walk) -> Origin:
    child = evaluate(node.children[0], walk)
    return combine([child], Transform.DERIVED, exp.Neg(this=sqltext.wrap(sql_of(child))))


def grouping_column(node: Node, walk: Walk) -> Node | None:
    """The column of ``grouping(col)``, which Spark lowers to
    ``CAST((shift_right(spark_grouping_id, n) & 1) AS TINYINT)``; None for any other cast."""
    inner = node.children[0] if node.children else None
    if inner is None or inner.name != "BitwiseAnd" or len(inner.children) != 2:
        return None
    shift, one = inner.children
    if shift.name != "ShiftRight" or one.name != "Literal" or str(one.get("value")) != "1":
        return None
    gid, bit = shift.children if len(shift.children) == 2 else (None, None)
    columns = walk.grouping_ids.get(gid.expr_id) if gid is not None else None
    if columns is None or bit is None or bit.name != "Literal":
        return None
    index = len(columns) - 1 - int(str(bit.get("value")))  # bit 0 is the last grouping column
    return columns[index] if 0 <= index < len(columns) else None


def grouping_call(name: str, columns: list[Node], walk: Walk) -> Origin:
    """``grouping(col)`` / ``grouping_id(a, b)``: computed from which grouping columns a row rolls up."""
    parts = [evaluate(c, walk) for c in columns]
    return combine(parts, Transform.DERIVED, sqltext.call(name, [sql_of(p) for p in parts]))
