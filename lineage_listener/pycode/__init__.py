"""Python code in a plan, read statically: UDFs, pandas and Arrow functions, UDTFs, RDD pipelines.

Spark's planner sees a Python function as one opaque call. This package reads the function
itself from the pickled command PySpark ships (``PythonFunction.command``), without running it
or importing the user's modules:

- :mod:`.pickled` unpickles the command symbolically (nothing is imported, nothing runs);
- :mod:`.source` finds and checks the function's source (its file, or a notebook cell);
- :mod:`.interp` follows the source, :mod:`.values` and :mod:`.frames` say what it knows of
  each value (pandas, Arrow, ``Row`` column by column);
- :mod:`.reading` puts it together: per output, the input columns it is computed from, or a
  conservative guess with the reason (docs/reference/semantics.md, "Python code").
"""
from __future__ import annotations

from lineage_listener.pycode.reading import EVAL_TYPES, Output, Reading, Shape, fallback, read

__all__ = ["EVAL_TYPES", "Output", "Reading", "Shape", "fallback", "read"]
