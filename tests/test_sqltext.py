"""``sqltext.render`` (a reused generator, operators joined from their operands' text, columns
and literals memoised) gives exactly what sqlglot's own ``Expression.sql`` gives."""
from __future__ import annotations

import sqlglot.expressions as exp

from lineage_listener.lineage import sqltext
from lineage_listener.lineage.query import lineage
from lineage_listener.plan.tree import parse
from tests.fixtures.capture_plans import OUT, load


def spark_sql(e: exp.Expression) -> str:
    return e.sql(dialect="spark", normalize_functions="lower")


def test_same_text_as_sqlglot_on_every_fixture_expression(monkeypatch):
    seen: list[exp.Expression] = []
    real = sqltext.render

    def keep(e):
        if e is not None:
            seen.append(e)
        return real(e)
    monkeypatch.setattr(sqltext, "render", keep)
    fixtures = sorted(OUT.glob("*.json.gz"))
    for path in fixtures:
        fixture = load(path)
        lineage(parse(fixture["plan"]), fixture["leaves"], fixture["target"])
    assert len(fixtures) >= 15 and len(seen) > 100, (len(fixtures), len(seen))
    differ = [(real(e), spark_sql(e)) for e in seen if real(e) != spark_sql(e)]
    assert not differ, differ[:5]
    kinds = {type(n) for e in seen for n in e.walk()}
    assert {exp.Add, exp.Mul, exp.Paren, exp.Column, exp.Literal, exp.Cast, exp.Anonymous, exp.EQ,
            exp.And} <= kinds  # both paths covered


def test_same_text_as_sqlglot_on_odd_names_and_literals():
    names = ["id", "s.x", "order count ", "select", "Order", "a`b", "é", "_1", "1a", "from", "x y"]
    literals = [sqltext.literal(v, t) for v, t in [("it's", "string"), ("a\\b", "string"), ("-1", "int"),
                                                    ("1.5E10", "double"), (None, None), ("true", "boolean"),
                                                    ("", "string"), ("ü\n", "string"), ("2024-01-31", "date"),
                                                    ("2024-01-31 10:00:00", "timestamp"),
                                                    ("2024-01-31 10:00:00", "timestamp_ntz")]]
    trees: list[exp.Expression] = []
    for i, name in enumerate(names):
        col = sqltext.column(name)
        for j, lit in enumerate(literals):
            op = ("Add", "Subtract", "Multiply", "Divide", "Remainder", "EqualTo", "GreaterThan",
                  "LessThanOrEqual", "GreaterThanOrEqual", "LessThan")[(i + j) % 10]
            inner = sqltext.binary(op, col, lit)
            cond = sqltext.binary("And", sqltext.binary("EqualTo", col, lit),
                                  sqltext.binary("Or", inner, sqltext.binary("LessThan", lit, col)))
            trees += [col, lit, inner, sqltext.binary("Add", inner, sqltext.binary("Multiply", lit, col)),
                      sqltext.call("concat", [inner, col]), sqltext.cast(inner, "bigint"), cond,
                      sqltext.call("Coalesce_X", [cond, sqltext.call("max", [col]), lit]), sqltext.call("now", []),
                      exp.Not(this=sqltext.binary("Or", cond, cond)), sqltext.cast(col, "decimal(7,2)")]
            trees += [sqltext.cast(x, t) for x in (col, lit, inner) for t in
                      ("json", "array<int>", "struct<a:int>", "map<string,int>", "decimal(5,-2)", "string",
                       "varchar(10)", "char(3)", "timestamp", "interval day to second", "binary")]
    a, b, one, minus = (sqltext.column("a"), sqltext.column("select"), sqltext.literal(1, "int"),
                        sqltext.literal(-5, "int"))
    cond = sqltext.binary("GreaterThan", a, one)
    trees += [exp.Ordered(this=a, desc=desc, nulls_first=first)  # each sort order, each null placement
              for desc in (True, False, None) for first in (True, False, None)]
    trees += [exp.Between(this=a, low=one, high=sqltext.binary("Add", one, b)),
              exp.Between(this=a, low=one, high=b, symmetric=True),
              exp.In(this=a, expressions=[one, minus, sqltext.literal("x'y", "string")]),
              exp.Case(ifs=[exp.If(this=cond, true=a)]),
              exp.Case(ifs=[exp.If(this=cond, true=a), exp.If(this=exp.Not(this=cond), true=b)], default=exp.Null()),
              exp.Case(this=a, ifs=[exp.If(this=one, true=b)], default=minus),
              exp.Neg(this=minus), exp.Neg(this=a), exp.Not(this=exp.In(this=a, expressions=[b])),
              exp.Null(), exp.Star(), sqltext.binary("Divide", sqltext.binary("Divide", a, b), minus),
              sqltext.call("count", [exp.Star()])]
    ordered = [exp.Ordered(this=b, desc=True, nulls_first=False), exp.Ordered(this=one, nulls_first=True)]
    trees += [exp.Window(this=sqltext.call(f, args), partition_by=partition, order=order)  # as the walk makes them
              for f, args in (("sum", [a]), ("", []), ("rank", []))
              for partition in (None, [a], [a, sqltext.binary("Add", b, one)])
              for order in (None, exp.Order(expressions=ordered))]
    chain = sqltext.column("c0")
    for _ in range(150):  # deep: a withColumn chain
        chain = sqltext.binary("Add", chain, sqltext.literal(1, "int"))
    trees.append(chain)
    for e in trees:
        assert sqltext.render(e) == spark_sql(e), e
        assert sqltext.render(e) == spark_sql(e), "memoised columns and literals stay right"
