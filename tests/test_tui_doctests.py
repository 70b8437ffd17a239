"""The examples in the docstrings of the recorder's keep policy and of the debugger run and
print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "tracegrad.tracing.keep", "tracegrad.tracing.model", "tracegrad.tracing.recorder",
    "tracegrad.tracing.summary", "tracegrad.tracing.values", "tracegrad.tui.app",
    "tracegrad.tui.conditions", "tracegrad.tui.diff_app", "tracegrad.tui.diff_view",
    "tracegrad.tui.dump", "tracegrad.tui.formatting",
    "tracegrad.tui.keys", "tracegrad.tui.session", "tracegrad.tui.widgets.graph_view",
    "tracegrad.tui.widgets.key_bar", "tracegrad.tui.widgets.step_list",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no docstring examples to run"
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
