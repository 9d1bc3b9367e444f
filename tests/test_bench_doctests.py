"""The docstring examples of the benchmark scripts run (``bench/`` is not among pytest's doctest
paths): the statistics a benchmark prints its verdicts with are checked like the package's code."""
from __future__ import annotations

import doctest
import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if ">>>" in p.read_text())


@pytest.mark.parametrize("script", SCRIPTS)
def test_examples(script, monkeypatch):
    spec = importlib.util.spec_from_file_location(f"bench_{script[:-3]}", BENCH / script)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up by name
    monkeypatch.setattr(sys, "path", list(sys.path))  # a script may put its checkout first
    spec.loader.exec_module(module)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, f"{result.failed} failing examples in {script}"
