"""The examples in the docstrings of the command line, the drawing and the report modules
run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "tracegrad.cli", "tracegrad.tracing.runner", "tracegrad.tracing.report",
    "tracegrad.tracing.progress", "tracegrad.tracing.violations", "tracegrad.draw",
    "tracegrad.draw.fold", "tracegrad.draw.plan", "tracegrad.draw.render",
    "tracegrad.draw._text", "tracegrad.draw.torchviz_compat",
    "tracegrad.tracing.notebook", "tracegrad.tracing.query",
    "tracegrad.tracing.causes", "tracegrad.tracing.nonfinite", "tracegrad.tracing.memory",
    "tracegrad.tracing.text", "tracegrad.tracing.diff",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no docstring examples to run"
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
