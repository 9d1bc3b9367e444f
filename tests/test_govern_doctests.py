"""The docstring examples of :mod:`lineage_listener.govern` run (its package is not among pytest's
doctest paths)."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import lineage_listener.govern as govern

MODULES = sorted(m.name for m in pkgutil.iter_modules(govern.__path__, "lineage_listener.govern."))


@pytest.mark.parametrize("name", ["lineage_listener.govern", *MODULES])
def test_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} failing examples in {name}"
