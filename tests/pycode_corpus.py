"""A corpus of PySpark code no one here wrote: the examples of PySpark's own docstrings and example
programs, each with the edges a person reads from it, written by hand.

Each function is copied as PySpark's documentation gives it (``cite`` says where: PySpark 4.x
sources, ``examples/src/main/python``). ``inputs`` name the function's input columns in the order
the plan gives them (a grouping key ``k.<name>``; the two sides of a cogroup ``l.`` and ``r.``),
``outputs`` its output columns; ``expected`` maps each output to the ``(input, transform)`` pairs
that are true of the code. ``tests/test_pycode_corpus.py`` reads each function from its pickled
command and counts how many readings are exact, narrowed but conservative, or a fallback
(docs/reference/semantics.md, "Python code").
"""
# ruff: noqa
from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator, Tuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import cloudpickle
from pyspark.sql import Row

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # as a job's or notebook's functions are


@dataclass(frozen=True)
class Case:
    cite: str
    kind: str
    fn: Any
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    expected: dict[str, set[tuple[str, str]]]
    frames: tuple[tuple[int, int], ...] = ()
    arrow: bool = False
    rdd: tuple[Any, ...] = ()  # an RDD pipeline: its steps, map functions in order


C, D, A = "copy", "derived", "aggregate"
CASES: list[Case] = []


def case(*args: Any, **kwargs: Any) -> None:
    CASES.append(Case(*args, **kwargs))


# -- DataFrame.mapInPandas (pyspark/sql/dataframe.py) ---------------------------------------

def filter_func(iterator):
    for pdf in iterator:
        yield pdf[pdf.id == 1]


case("DataFrame.mapInPandas: filter_func", "map", filter_func, ("id", "age"), ("id", "age"),
     {"id": {("id", C)}, "age": {("age", C)}})


def mean_age(iterator):
    for pdf in iterator:
        yield pdf.groupby("id").mean().reset_index()


case("DataFrame.mapInPandas: mean_age", "map", mean_age, ("id", "age"), ("id", "age"),
     {"id": {("id", C)}, "age": {("age", A)}})


def double_age(iterator):
    for pdf in iterator:
        pdf["double_age"] = pdf["age"] * 2
        yield pdf


case("DataFrame.mapInPandas: double_age", "map", double_age, ("id", "age"), ("id", "age", "double_age"),
     {"id": {("id", C)}, "age": {("age", C)}, "double_age": {("age", D)}})


# -- DataFrame.mapInArrow (pyspark/sql/dataframe.py) ----------------------------------------

def filter_func_arrow(iterator):
    for batch in iterator:
        yield batch.filter(pa.compute.field("id") == 1)


case("DataFrame.mapInArrow: filter_func", "map", filter_func_arrow, ("id", "age"), ("id", "age"),
     {"id": {("id", C)}, "age": {("age", C)}}, arrow=True)


# -- GroupedData.applyInPandas (pyspark/sql/pandas/group_ops.py) ----------------------------

def normalize(pdf):
    v = pdf.v
    return pdf.assign(v=(v - v.mean()) / v.std())


case("GroupedData.applyInPandas: normalize", "grouped", normalize, ("k.id", "id", "v"), ("id", "v"),
     {"id": {("id", C)}, "v": {("v", D), ("v", A)}}, ((1, 2),))


def mean_func(key, pdf):
    # key is a tuple of one numpy.int64, which is the value
    # of 'id' for the current group
    return pd.DataFrame([key + (pdf.v.mean(),)])


case("GroupedData.applyInPandas: mean_func", "grouped", mean_func, ("k.id", "id", "v"), ("id", "v"),
     {"id": {("k.id", C)}, "v": {("v", A)}}, ((1, 2),))


def sum_func(key, pdf):
    # key is a tuple of two numpy.int64s, which is the values
    # of 'id' and 'ceil(df.v / 2)' for the current group
    return pd.DataFrame([key + (pdf.v.sum(),)])


case("GroupedData.applyInPandas: sum_func", "grouped", sum_func, ("k.id", "k.ceil(v / 2)", "id", "v"),
     ("id", "ceil(v / 2)", "v"), {"id": {("k.id", C)}, "ceil(v / 2)": {("k.ceil(v / 2)", C)}, "v": {("v", A)}},
     ((2, 2),))


def filter_func_iter(
    batches: Iterator[pd.DataFrame]
) -> Iterator[pd.DataFrame]:
    for batch in batches:
        # Process and yield each batch independently
        filtered = batch[batch['v'] > 2.0]
        if not filtered.empty:
            yield filtered[['v']]


case("GroupedData.applyInPandas: filter_func (iterator)", "grouped_iter", filter_func_iter, ("k.id", "id", "v"),
     ("v",), {"v": {("v", C)}}, ((1, 2),))


def transform_func(
    key: Tuple[Any, ...], batches: Iterator[pd.DataFrame]
) -> Iterator[pd.DataFrame]:
    for batch in batches:
        # Yield transformed results for each batch
        result = batch.assign(id=key[0], v_doubled=batch['v'] * 2)
        yield result[['id', 'v_doubled']]


case("GroupedData.applyInPandas: transform_func (iterator)", "grouped_iter", transform_func, ("k.id", "id", "v"),
     ("id", "v_doubled"), {"id": {("k.id", C)}, "v_doubled": {("v", D)}}, ((1, 2),))


# -- GroupedData.applyInArrow (pyspark/sql/pandas/group_ops.py) -----------------------------

def normalize_arrow(table):
    v = table.column("v")
    norm = pc.divide(pc.subtract(v, pc.mean(v)), pc.stddev(v, ddof=1))
    return table.set_column(1, "v", norm)


case("GroupedData.applyInArrow: normalize", "grouped", normalize_arrow, ("k.id", "id", "v"), ("id", "v"),
     {"id": {("id", C)}, "v": {("v", D), ("v", A)}}, ((1, 2),), arrow=True)


def sum_func_arrow_iter(
    batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    total = 0
    for batch in batches:
        total += pc.sum(batch.column("v")).as_py()
    yield pa.RecordBatch.from_pydict({"v": [total]})


case("GroupedData.applyInArrow: sum_func (iterator)", "grouped_iter", sum_func_arrow_iter, ("k.id", "id", "v"),
     ("v",), {"v": {("v", A)}}, ((1, 2),), arrow=True)


def mean_func_arrow(key, table):
    # key is a tuple of one pyarrow.Int64Scalar, which is the value
    # of 'id' for the current group
    mean = pc.mean(table.column("v"))
    return pa.Table.from_pydict({"id": [key[0].as_py()], "v": [mean.as_py()]})


case("GroupedData.applyInArrow: mean_func", "grouped", mean_func_arrow, ("k.id", "id", "v"), ("id", "v"),
     {"id": {("k.id", C)}, "v": {("v", A)}}, ((1, 2),), arrow=True)


def sum_func_arrow(key, table):
    # key is a tuple of two pyarrow.Int64Scalars, which is the values
    # of 'id' and 'ceil(df.v / 2)' for the current group
    sum = pc.sum(table.column("v"))
    return pa.Table.from_pydict({
        "id": [key[0].as_py()],
        "ceil(v / 2)": [key[1].as_py()],
        "v": [sum.as_py()]
    })


case("GroupedData.applyInArrow: sum_func", "grouped", sum_func_arrow, ("k.id", "k.ceil(v / 2)", "id", "v"),
     ("id", "ceil(v / 2)", "v"), {"id": {("k.id", C)}, "ceil(v / 2)": {("k.ceil(v / 2)", C)}, "v": {("v", A)}},
     ((2, 2),), arrow=True)


def sum_func_arrow_key_iter(
    key: Tuple[pa.Scalar, ...], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    total = 0
    for batch in batches:
        total += pc.sum(batch.column("v")).as_py()
    yield pa.RecordBatch.from_pydict({"id": [key[0].as_py()], "v": [total]})


case("GroupedData.applyInArrow: sum_func (key, iterator)", "grouped_iter", sum_func_arrow_key_iter,
     ("k.id", "id", "v"), ("id", "v"), {"id": {("k.id", C)}, "v": {("v", A)}}, ((1, 2),), arrow=True)


# -- PandasCogroupedOps.applyInPandas / applyInArrow (pyspark/sql/pandas/group_ops.py) ------
_COGROUP = ("k.id", "l.time", "l.id", "l.v1", "k.id", "r.time", "r.id", "r.v2")


def asof_join(l, r):
    return pd.merge_asof(l, r, on="time", by="id")


case("PandasCogroupedOps.applyInPandas: asof_join", "cogrouped", asof_join, _COGROUP, ("time", "id", "v1", "v2"),
     {"time": {("l.time", C)}, "id": {("l.id", C)}, "v1": {("l.v1", C)}, "v2": {("r.v2", C)}}, ((1, 3), (1, 3)))


def asof_join_key(k, l, r):
    if k == (1,):
        return pd.merge_asof(l, r, on="time", by="id")
    else:
        return pd.DataFrame(columns=['time', 'id', 'v1', 'v2'])


case("PandasCogroupedOps.applyInPandas: asof_join (key)", "cogrouped", asof_join_key, _COGROUP,
     ("time", "id", "v1", "v2"), {"time": {("l.time", C), ("k.id", D)}, "id": {("l.id", C), ("k.id", D)},
                                  "v1": {("l.v1", C), ("k.id", D)}, "v2": {("r.v2", C), ("k.id", D)}},
     ((1, 3), (1, 3)))
_COGROUP_ARROW = ("k.id", "l.id", "l.v1", "k.id", "r.id", "r.v2")


def summarize(l, r):
    return pa.Table.from_pydict({
        "left": [l.num_rows],
        "right": [r.num_rows]
    })


case("PandasCogroupedOps.applyInArrow: summarize", "cogrouped", summarize, _COGROUP_ARROW, ("left", "right"),
     {"left": set(), "right": set()}, ((1, 2), (1, 2)), arrow=True)


def summarize_key(key, l, r):
    return pa.Table.from_pydict({
        "key": [key[0].as_py()],
        "left": [l.num_rows],
        "right": [r.num_rows]
    })


case("PandasCogroupedOps.applyInArrow: summarize (key)", "cogrouped", summarize_key, _COGROUP_ARROW,
     ("key", "left", "right"), {"key": {("k.id", C)}, "left": set(), "right": set()}, ((1, 2), (1, 2)), arrow=True)


# -- pandas_udf (pyspark/sql/pandas/functions.py) --------------------------------------------

def slen(s: pd.Series) -> pd.Series:
    return s.str.len()


case("pandas_udf: slen", "scalar", slen, ("s",), (), {"value": {("s", D)}})


def func(s1: pd.Series, s2: pd.Series, s3: pd.DataFrame) -> pd.DataFrame:
    s3['col2'] = s1 + s2.str.len()
    return s3


case("pandas_udf: func (struct argument and result)", "scalar", func, ("long_col", "string_col", "struct_col"),
     ("col1", "col2"), {"col1": {("struct_col", C)}, "col2": {("long_col", D), ("string_col", D)}})


def to_upper_pandas(s: pd.Series) -> pd.Series:
    return s.str.upper()


case("pandas_udf: to_upper", "scalar", to_upper_pandas, ("name",), (), {"value": {("name", D)}})


def split_expand(s: pd.Series) -> pd.DataFrame:
    return s.str.split(expand=True)


case("pandas_udf: split_expand", "scalar", split_expand, ("name",), ("first", "last"),
     {"first": {("name", D)}, "last": {("name", D)}})


def calc_pandas(a: pd.Series, b: pd.Series) -> pd.Series:
    return a + 10 * b


case("pandas_udf: calc", "scalar", calc_pandas, ("a", "b"), (), {"value": {("a", D), ("b", D)}})


def plus_one(iterator: Iterator[pd.Series]) -> Iterator[pd.Series]:
    for s in iterator:
        yield s + 1


case("pandas_udf: plus_one (iterator)", "scalar_iter", plus_one, ("v",), (), {"value": {("v", D)}})


def multiply(iterator: Iterator[Tuple[pd.Series, pd.DataFrame]]) -> Iterator[pd.Series]:
    for s1, df in iterator:
        yield s1 * df.v


case("pandas_udf: multiply (iterator of tuples)", "scalar_iter", multiply, ("v", "struct(v)"), (),
     {"value": {("v", D), ("struct(v)", D)}})


def mean_udf(v: pd.Series) -> float:
    return v.mean()


case("pandas_udf: mean_udf (grouped aggregate)", "aggregate", mean_udf, ("v",), (), {"value": {("v", A)}})


def weighted_mean_udf(v: pd.Series, w: pd.Series) -> float:
    import numpy as np
    return np.average(v, weights=w)


case("pandas_udf: weighted_mean_udf", "aggregate", weighted_mean_udf, ("v", "w"), (),
     {"value": {("v", A), ("w", A)}})


def pandas_mean_iter(it: Iterator[pd.Series]) -> float:
    sum_val = 0.0
    cnt = 0
    for v in it:
        sum_val += v.sum()
        cnt += len(v)
    return sum_val / cnt


case("pandas_udf: pandas_mean_iter", "aggregate_iter", pandas_mean_iter, ("v",), (), {"value": {("v", A)}})


def pandas_weighted_mean_iter(it: Iterator[Tuple[pd.Series, pd.Series]]) -> float:
    weighted_sum = 0.0
    weight = 0.0
    for v, w in it:
        weighted_sum += np.dot(v, w)
        weight += w.sum()
    return weighted_sum / weight


case("pandas_udf: pandas_weighted_mean_iter", "aggregate_iter", pandas_weighted_mean_iter, ("v", "w"), (),
     {"value": {("v", A), ("w", A)}})


# -- udf (pyspark/sql/functions/builtin.py) -------------------------------------------------

case("udf: slen", "scalar", lambda s: len(s), ("s",), (), {"value": {("s", D)}})


def to_upper(s):
    if s is not None:
        return s.upper()


case("udf: to_upper", "scalar", to_upper, ("name",), (), {"value": {("name", D)}})


def add_one(x):
    if x is not None:
        return x + 1


case("udf: add_one", "scalar", add_one, ("age",), (), {"value": {("age", D)}})


def calc(a, b):
    return a + 10 * b


case("udf: calc", "scalar", calc, ("a", "b"), (), {"value": {("a", D), ("b", D)}})


def pa_calc(a: pa.Array, b: pa.Array) -> pa.Array:
    return pa.compute.add(a, pa.compute.multiply(b, 10))


case("udf: pa_calc (Arrow)", "scalar", pa_calc, ("a", "b"), (), {"value": {("a", D), ("b", D)}}, arrow=True)


def my_udf(x):
    return x + 1


case("udf: my_udf", "scalar", my_udf, ("x",), (), {"value": {("x", D)}})
case("udf: random_udf", "scalar", lambda: int(random.random() * 100), (), (), {"value": set()})


# -- udtf (pyspark/sql/functions/builtin.py) ------------------------------------------------

class TestUDTF:
    def eval(self, *args: Any):
        yield "hello", "world"


case("udtf: TestUDTF", "udtf", TestUDTF, (), ("c1", "c2"), {"c1": set(), "c2": set()})


class PlusOne:
    def eval(self, x: int):
        yield x, x + 1


case("udtf: PlusOne", "udtf", PlusOne, ("x",), ("c1", "c2"), {"c1": {("x", C)}, "c2": {("x", D)}})


class TestUDTFWithAnalyze:
    @staticmethod
    def analyze(a, b):
        return None

    def eval(self, a, b):
        yield a, b


case("udtf: TestUDTFWithAnalyze", "udtf", TestUDTFWithAnalyze, ("a", "b"), ("a", "b"),
     {"a": {("a", C)}, "b": {("b", C)}})


class TestUDTFWithKwargs:
    @staticmethod
    def analyze(a, b, **kwargs):
        return None

    def eval(self, a, b, **kwargs):
        yield a, b, kwargs["x"]


case("udtf: TestUDTFWithKwargs", "udtf", TestUDTFWithKwargs, ("a", "b", "x"), ("a", "b", "x"),
     {"a": {("a", C)}, "b": {("b", C)}, "x": {("x", C)}})


class PlusOneResult:
    def eval(self, a: int):
        yield a + 1,


case("udtf: PlusOne (one column)", "udtf", PlusOneResult, ("a",), ("r",), {"r": {("a", D)}})


# -- RDDs of DataFrame rows (pyspark/sql/session.py, pyspark/sql/context.py; the programs of
#    examples/src/main/python/sql/basic.py) ------------------------------------------------

case("SparkSession.createDataFrame: rdd.map(lambda x: tuple(x))", "rdd", None, ("id",), ("id",),
     {"id": {("id", C)}}, rdd=(lambda x: tuple(x),))
case("SQLContext: df.rdd.map(lambda x: (x.i, x.s, ...))", "rdd", None,
     ("i", "s", "d", "l", "b", "time", "row", "list"), ("_1", "_2", "_3", "_4", "_5", "_6", "_7", "_8"),
     {"_1": {("i", C)}, "_2": {("s", C)}, "_3": {("d", C)}, "_4": {("l", C)}, "_5": {("b", C)},
      "_6": {("time", C)}, "_7": {("row", C)}, "_8": {("list", C)}},
     rdd=(lambda x: (x.i, x.s, x.d, x.l, x.b, x.time, x.row.a, x.list),))
Person = Row("name", "age")
case("SQLContext.createDataFrame: rdd.map(lambda r: Person(*r))", "rdd", None, ("_1", "_2"), ("name", "age"),
     {"name": {("_1", C)}, "age": {("_2", C)}}, rdd=(lambda r: Person(*r),))
case("SQLContext.createDataFrame: rdd.map(lambda row: row[1])", "rdd", None, ("_1", "_2"), ("value",),
     {"value": {("_2", C)}}, rdd=(lambda row: row[1],))
case("sql/basic.py: parts.map(lambda p: Row(name=p[0], age=int(p[1])))", "rdd", None, ("value",), ("name", "age"),
     {"name": {("value", D)}, "age": {("value", D)}},
     rdd=(lambda l: l.split(","), lambda p: Row(name=p[0], age=int(p[1]))))
case("sql/basic.py: parts.map(lambda p: (p[0], p[1].strip()))", "rdd", None, ("value",), ("name", "age"),
     {"name": {("value", D)}, "age": {("value", D)}},
     rdd=(lambda l: l.split(","), lambda p: (p[0], p[1].strip())))
case("sql/basic.py: teenagers.rdd.map(lambda p: 'Name: ' + p.name)", "rdd", None, ("name", "age"), ("value",),
     {"value": {("name", D)}}, rdd=(lambda p: "Name: " + p.name,))
