"""The ``>>>`` examples of these modules run as tests. Add a module once its examples are real
(the issue-11 rule: doctests either run or go)."""

import doctest
import importlib

import pytest

DOCTEST_MODULES = (
    "envdoctor.codes",
    "envdoctor.probes.reasons",
    "envdoctor.style",
    "envdoctor.units",
    "envdoctor.launch",
    "envdoctor.stack.analysis",
    "envdoctor.stack.host",
    "envdoctor.stack.table",
    "envdoctor.dockerfile.parse",
    "envdoctor.dockerfile.analysis",
    "envdoctor.advise.stack",
)


@pytest.mark.parametrize("name", DOCTEST_MODULES)
def test_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
