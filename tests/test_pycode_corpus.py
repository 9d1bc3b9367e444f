"""PySpark's own examples read from their pickled commands: how many readings are exact, narrowed
but conservative, or a fallback, and that none drops a source the code really uses.

The corpus and its hand-written edges: ``tests/pycode_corpus.py``. The counts are stated in
docs/reference/semantics.md ("Python code"), which this test holds to them.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from pyspark import cloudpickle

from lineage_listener import pycode
from lineage_listener.pycode.reading import Shape
from tests.pycode_corpus import CASES, Case

DOCS = Path(__file__).resolve().parent.parent / "docs" / "reference" / "semantics.md"


def payload(case: Case, spark) -> bytes:
    if case.kind != "rdd":
        return cloudpickle.dumps((case.fn, None))
    rdd = spark.sparkContext.emptyRDD()
    for step in case.rdd:
        rdd = rdd.map(step)
    return cloudpickle.dumps((rdd.func, None, None, None))  # as PySpark ships a pipeline


def judge(case: Case, reading: pycode.Reading) -> str:
    """``exact``, ``narrowed`` or ``fallback``; fails when a true source is missing."""
    outs = case.outputs or ("value",)
    got = {name: {(case.inputs[i], t) for i, t in o.flows} for name, o in zip(outs, reading.outputs)}
    for name, expected in case.expected.items():
        missing = {i for i, _ in expected} - {i for i, _ in got[name]}
        assert not missing, f"{case.cite}: {name} lost {missing} ({reading})"
    if reading.status == "fallback":
        return "fallback"
    exact = all(got[n] == case.expected[n] for n in outs) and not any(o.guess for o in reading.outputs)
    return "exact" if exact else "narrowed"


@pytest.fixture(scope="module")
def verdicts(spark) -> dict[str, str]:
    out = {}
    for case in CASES:
        names = tuple(label.split(".", 1)[1] if label[:2] in ("k.", "l.", "r.") else label for label in case.inputs)
        shape = Shape(case.kind, names, case.outputs, case.frames, case.arrow,
                      plain=case.kind == "rdd" and case.inputs == ("value",))
        out[case.cite] = judge(case, pycode.read(payload(case, spark), shape))
    return out


def test_no_reading_drops_a_source_and_the_docs_state_the_counts(verdicts):
    counts = Counter(verdicts.values())
    stated = re.search(r"(\d+) examples: (\d+) exact, (\d+) narrowed but conservative, (\d+) fallback",
                       DOCS.read_text())
    assert stated, "docs/reference/semantics.md states the corpus counts"
    assert tuple(int(g) for g in stated.groups()) == (len(verdicts), counts["exact"], counts["narrowed"],
                                                      counts["fallback"]), (counts, verdicts)
