"""The examples in the docstrings of the ops, factories and torch-namespace modules run
and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "tracegrad._unsupported", "tracegrad._numerics", "tracegrad.linalg", "tracegrad.random",
    "tracegrad.cuda", "tracegrad.factories", "tracegrad.backends.cudnn",
    "tracegrad.ops.einsum", "tracegrad.ops.sorting", "tracegrad.testing.comparison",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no docstring examples to run"
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
