"""The docstring examples of nn, optim, utils.data and save/load run and show what they
say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "tracegrad.nn.activation", "tracegrad.nn.conv", "tracegrad.nn.pooling",
    "tracegrad.nn.normalization", "tracegrad.nn.dropout", "tracegrad.nn.sparse",
    "tracegrad.nn.rnn", "tracegrad.nn.attention", "tracegrad.nn.padding",
    "tracegrad.nn.upsampling", "tracegrad.nn.hooks", "tracegrad.nn.modules.module",
    "tracegrad.nn.utils", "tracegrad.nn.utils.rnn", "tracegrad.nn.utils.convert_parameters",
    "tracegrad.nn._functional_activation", "tracegrad.nn._functional_conv",
    "tracegrad.nn._functional_norm", "tracegrad.nn._functional_loss",
    "tracegrad.nn._functional_attention", "tracegrad.optim.optimizer",
    "tracegrad.optim.rmsprop", "tracegrad.optim.adagrad", "tracegrad.optim.lbfgs",
    "tracegrad.optim.lr_scheduler", "tracegrad.utils.data", "tracegrad.utils.data.dataset",
    "tracegrad.utils.data.dataloader", "tracegrad.utils.data._collate",
    "tracegrad.serialization",
]


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name):
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{module_name} has no docstring example"
    assert result.failed == 0
