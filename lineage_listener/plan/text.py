"""Cheap existence tests on a plan's text, in either encoding the capture reads.

``toJSON`` writes a pre-order list of nodes; the compact reader (:mod:`~lineage_listener.plan.compact`)
writes the same fields, each distinct attribute once in a table. Both write a node's class as
``"class":"<package>.<Class>"`` and a name as ``"name":"<name>"`` (compact JSON, no spaces), so
"does some node of this class / some attribute or alias of this name occur" has the same answer
on both texts, at the cost of a substring search (no decoding, no walk).

>>> has_class('[{"class":"org.apache.spark.sql.execution.LogicalRDD","num-children":0}]', "LogicalRDD")
True
>>> has_name('{"v":1,"attrs":[{"class":"a.AttributeReference","name":"add"}],"plan":{"@t":[0]}}', "add")
True
>>> has_class('[{"class":"a.LogicalRDDX"}]', "LogicalRDD"), has_name('[{"name":"addx"}]', "add")
(False, False)
"""
from __future__ import annotations


def has_class(text: str, name: str) -> bool:
    """Whether a node of the Spark class named ``name`` (short name) occurs in the plan text."""
    return f'.{name}"' in text


def has_name(text: str, name: str) -> bool:
    """Whether an attribute, alias or other named node called ``name`` occurs in the plan text
    (``name`` as Spark writes it: plain names need no escaping)."""
    return f'"name":"{name}"' in text


__all__ = ["has_class", "has_name"]
