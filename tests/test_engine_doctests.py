"""The examples in the engine's docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [  # the engine modules whose docstrings carry examples
    "tracegrad.tensor", "tracegrad.factories", "tracegrad.ops", "tracegrad.ops.reduce",
    "tracegrad.ops.shape", "tracegrad.autograd.engine", "tracegrad.autograd.function",
    "tracegrad.autograd.grad_mode", "tracegrad.autograd.gradcheck",
    "tracegrad.autograd.views", "tracegrad.autograd.quiet", "tracegrad.ops._math",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no docstring examples to run"
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
