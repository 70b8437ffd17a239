"""Which ``_saved_*`` / ``_raw_saved_*`` attributes a grad_fn has, against torch 2.13.

Tools that draw saved tensors (torchviz's ``show_saved``, tracegrad's own bridge) list them
with ``dir(grad_fn)``, so an internal attribute that starts with ``_saved_`` shows up there
as if it were a saved value, and a missing one hides a parameter torch shows. A program put
in ``KNOWN_DIFFERENT`` (empty now) is a strict xfail, so the list stays true: the day one
is fixed it fails. (tests/test_parity_saved_sweep.py compares the values of many more.)
"""
from __future__ import annotations

import pytest

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

PROGRAMS = {
 "mul": lambda L, x: x * x.detach().requires_grad_(),
 "exp": lambda L, x: x.exp(),
 "sum": lambda L, x: x.sum(),
 "mean_dim": lambda L, x: x.mean(1),
 "mm": lambda L, x: x.mm(x.t()),
 "tanh": lambda L, x: x.tanh(),
 "relu": lambda L, x: x.relu(),
 "sigmoid": lambda L, x: x.sigmoid(),
 "pow": lambda L, x: x.pow(2),
 "div": lambda L, x: x / 3,
 "view": lambda L, x: x.view(-1),
 "transpose": lambda L, x: x.t(),
 "index": lambda L, x: x[0],
 "cat": lambda L, x: L.cat([x, x]),
 "softmax": lambda L, x: L.softmax(x, 1),
 "log_softmax": lambda L, x: L.log_softmax(x, 1),
 "linear": lambda L, x: L.nn.functional.linear(x, x),
 "mse": lambda L, x: L.nn.functional.mse_loss(x, x.detach()),
 "ce": lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([0, 1])),
 "max_pool": lambda L, x: L.nn.functional.max_pool2d(x.view(1, 1, 2, 2), 2),
 "max_pool_s": lambda L, x: L.nn.functional.max_pool2d(x.view(1, 1, 2, 2), 2, 1),
 "avg_pool": lambda L, x: L.nn.functional.avg_pool2d(x.view(1, 1, 2, 2), 2),
 "conv": lambda L, x: L.nn.functional.conv2d(x.view(1, 1, 2, 2), x.view(1, 1, 2, 2)),
 "layer_norm": lambda L, x: L.nn.functional.layer_norm(x, (2,)),
 "batch_norm": lambda L, x: L.nn.functional.batch_norm(x, None, None, training=True),
 "embedding": lambda L, x: L.nn.functional.embedding(L.tensor([0]), x),
 "gelu": lambda L, x: L.nn.functional.gelu(x),
 "dropout": lambda L, x: L.nn.functional.dropout(x, 0.5),
 "clamp": lambda L, x: x.clamp(0, 1),
 "where": lambda L, x: L.where(x > 0, x, x * 2),
 "max": lambda L, x: x.max(),
 "max_dim": lambda L, x: x.max(1)[0],
 "expand": lambda L, x: x[:1].expand(3, 2),
 "reshape_clone": lambda L, x: x.t().reshape(-1),
 "norm": lambda L, x: x.norm(),
 "leaky": lambda L, x: L.nn.functional.leaky_relu(x),
 "std": lambda L, x: x.std(),
 "var": lambda L, x: x.var(0),
}

KNOWN_DIFFERENT: frozenset = frozenset()


def _saved_attributes(grad_fn) -> list[str]:
    return sorted(name for name in dir(grad_fn)
                  if name.startswith("_saved_") or name.startswith("_raw_saved_"))


def _attributes(lib, program):
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    return _saved_attributes(PROGRAMS[program](lib, x).grad_fn)


@pytest.mark.parametrize("program", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason="known: see module doc"))
    if name in KNOWN_DIFFERENT else name for name in PROGRAMS])
def test_saved_attribute_names_match_torch(program):
    assert _attributes(tg, program) == _attributes(torch, program)


def test_no_internal_attribute_looks_like_a_saved_value():
    class Double(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    y = Double.apply(tg.ones(2, requires_grad=True))
    assert _saved_attributes(y.grad_fn) == []  # torch's custom nodes have none either
    assert _saved_attributes(tg.ones(2, requires_grad=True).exp().grad_fn) == [
        "_raw_saved_result", "_saved_result"]


def test_max_pool_shows_the_stride_as_given():
    values = []
    for lib in (tg, torch):
        x = lib.ones(1, 1, 4, 4, requires_grad=True)
        values.append(lib.nn.functional.max_pool2d(x, 2).grad_fn._saved_stride)
    assert values[0] == values[1] == ()  # torch: stride=None is saved as an empty list


# Programs whose nodes keep non-tensor parameters, with negative and non-default values:
# torch shows a saved int64 through an unsigned conversion (dim=-1 reads 2**64 - 1), a
# dim list as given (not wrapped), a loss's reduction as its enum (none 0, mean 1, sum 2),
# and mm an operand's strides (in elements) only when that operand's gradient is needed.
VALUE_PROGRAMS = {
 "softmax_neg": lambda L, x: L.softmax(x, -1),
 "log_softmax_0": lambda L, x: L.log_softmax(x, 0),
 "cat_neg": lambda L, x: L.cat([x, x], -1),
 "mean_dims": lambda L, x: x.mean((0, -1)),
 "mean_keep": lambda L, x: x.mean(1, keepdim=True),
 "sum_neg": lambda L, x: x.sum(-1, keepdim=True),
 "sum_list": lambda L, x: x.sum([1, 0]),
 "max_neg": lambda L, x: x.max(-1)[0],
 "min_0": lambda L, x: x.min(0, keepdim=True)[0],
 "select_col": lambda L, x: x[:, 1],
 "select_row": lambda L, x: x[1],
 "mse_none": lambda L, x: L.nn.functional.mse_loss(x, x.detach(), reduction="none"),
 "mse_sum": lambda L, x: L.nn.functional.mse_loss(x, x.detach(), reduction="sum"),
 "ce_ignore": lambda L, x: L.nn.functional.cross_entropy(
     x, L.tensor([0, 1]), ignore_index=-5, reduction="sum"),
 "nll_none": lambda L, x: L.nn.functional.nll_loss(x, L.tensor([1, 0]), reduction="none"),
 "gelu_tanh": lambda L, x: L.nn.functional.gelu(x, approximate="tanh"),
 "leaky_slope": lambda L, x: L.nn.functional.leaky_relu(x, 0.2),
 "embedding_pad": lambda L, x: L.nn.functional.embedding(L.tensor([1]), x, padding_idx=-1),
 "embedding_default": lambda L, x: L.nn.functional.embedding(L.tensor([1]), x),
 "conv_bias": lambda L, x: L.nn.functional.conv2d(
     x.view(1, 1, 2, 2), x.view(1, 1, 2, 2), x[0, :1], stride=2, padding=1),
 "conv_groups": lambda L, x: L.nn.functional.conv1d(
     x.view(1, 2, 2), x.view(2, 1, 2), groups=2, dilation=2, padding=2),
 "conv_transpose": lambda L, x: L.nn.functional.conv_transpose2d(
     x.view(1, 1, 2, 2), x.view(1, 1, 2, 2), stride=2, output_padding=1),
 "unsafe_view": lambda L, x: x.t().reshape(-1),
 "mm_views": lambda L, x: x.t().mm(x.expand(2, 2)),
 "mm_one_grad": lambda L, x: x.mm(L.ones(2, 1).expand(2, 3)),
 "mm_other_grad": lambda L, x: L.ones(2, 3).t().mm(x),
 "linear_no_bias": lambda L, x: L.nn.functional.linear(x, x.detach()),
 "norm_default": lambda L, x: x.norm(),
 "norm_dim": lambda L, x: x.norm(1, -1, True),
 "vector_norm": lambda L, x: L.linalg.vector_norm(x, 3.5, (0, 1)),
 "layer_norm_2d": lambda L, x: L.nn.functional.layer_norm(x, [2, 2], x.detach()),
 # var/std's correction shows the overload torch took: None for a bare x.var() (and for
 # correction=None), 1 where a dim was given, int(unbiased), a correction as given
 "var_bare": lambda L, x: x.var(),
 "var_none": lambda L, x: x.var(None),
 "var_keepdim": lambda L, x: x.var(keepdim=True),
 "var_correction_none": lambda L, x: x.var(0, correction=None),
 "var_correction_half": lambda L, x: L.var(x, 1, correction=0.5),
 "var_unbiased_false": lambda L, x: x.var(False),
 "std_neg": lambda L, x: x.std(-1),
 "std_bare": lambda L, x: L.std(x),
 "var_dims": lambda L, x: x.var((0, -1), keepdim=True),
 "var_biased": lambda L, x: L.var(x, 0, unbiased=False),
 "avg_pool_default": lambda L, x: L.nn.functional.avg_pool2d(x.view(1, 1, 2, 2), 2),
 "avg_pool_all": lambda L, x: L.nn.functional.avg_pool2d(
     x.view(1, 1, 2, 2), (1, 2), 1, (0, 1), True, False, 3),
 "avg_pool_module": lambda L, x: L.nn.AvgPool2d(2)(x.view(1, 1, 2, 2)),
 "max_pool_list": lambda L, x: L.nn.functional.max_pool2d(x.view(1, 1, 2, 2), 1, [1, 2]),
 "max_pool_module": lambda L, x: L.nn.MaxPool2d(1)(x.view(1, 1, 2, 2)),
 "nll_4d": lambda L, x: L.nn.functional.nll_loss(
     x.view(1, 2, 2, 1), L.tensor([[[0], [1]]]), reduction="sum"),
}


def _parameter_values(lib, program, programs=VALUE_PROGRAMS) -> dict:
    """The ``_saved_*`` values that are not saved tensors, with their types."""
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    grad_fn = programs[program](lib, x).grad_fn
    names = _saved_attributes(grad_fn)
    tensors = {name[len("_raw_saved_"):] for name in names if name.startswith("_raw_saved_")}
    values = {}
    for name in names:
        if name.startswith("_saved_") and name[len("_saved_"):] not in tensors:
            values[name] = (type(value := getattr(grad_fn, name)).__name__, value)
    return values


@pytest.mark.parametrize("program", list(VALUE_PROGRAMS))
def test_saved_parameter_values_match_torch(program):
    ours, theirs = _parameter_values(tg, program), _parameter_values(torch, program)
    assert theirs  # each program's node has parameters to compare
    assert ours == theirs
