"""Gradients taken with ``create_graph=True`` record torch 2.13's graph: the backward
formulas, run on Tensors, record the ops torch's derivatives.yaml writes, grouped as it
groups them (a number added or multiplied in a C++ formula is add.Scalar/mul.Scalar:
AddBackward1/MulBackward1), and only for the gradients the inputs need.

Each case takes a first and a second derivative of a function of a (4, 3) leaf and
compares both graphs (node names, depth first) with torch's. The formulas that still
record another graph are listed in KNOWN_FORMULA_DIFFERENCES (values and gradients match
everywhere: tests/test_parity_double_backward.py); a test keeps the list true."""
from __future__ import annotations

import warnings

import pytest
from test_parity_composites import _graph, _leaf

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

CASES = {
 "tanh": lambda L, x: x.tanh(), "sigmoid": lambda L, x: x.sigmoid(), "relu": lambda L, x: x.relu(),
 "elu": lambda L, x: L.nn.functional.elu(x), "gelu": lambda L, x: L.nn.functional.gelu(x),
 "gelu_tanh": lambda L, x: L.nn.functional.gelu(x, approximate="tanh"),
 "silu": lambda L, x: L.nn.functional.silu(x), "softplus": lambda L, x: L.nn.functional.softplus(x),
 "leaky": lambda L, x: L.nn.functional.leaky_relu(x, 0.1), "logsigmoid": lambda L, x: L.nn.functional.logsigmoid(x),
 "hardtanh": lambda L, x: L.nn.functional.hardtanh(x), "mish": lambda L, x: L.nn.functional.mish(x),
 "selu": lambda L, x: L.nn.functional.selu(x), "celu": lambda L, x: L.nn.functional.celu(x),
 "softmax": lambda L, x: x.softmax(-1), "log_softmax": lambda L, x: x.log_softmax(-1),
 "exp": lambda L, x: x.exp(), "log": lambda L, x: (x.abs() + 1).log(), "sin": lambda L, x: x.sin(),
 "cos": lambda L, x: x.cos(), "sqrt": lambda L, x: (x.abs() + 1).sqrt(), "pow3": lambda L, x: x.pow(3),
 "rsqrt": lambda L, x: (x.abs() + 1).rsqrt(), "reciprocal": lambda L, x: (x.abs() + 1).reciprocal(),
 "atan": lambda L, x: x.atan(), "asinh": lambda L, x: x.asinh(), "erf": lambda L, x: x.erf(),
 "norm": lambda L, x: x.norm(dim=-1), "mse": lambda L, x: L.nn.functional.mse_loss(x, x.detach() * 0.5),
 "smooth_l1": lambda L, x: L.nn.functional.smooth_l1_loss(x, x.detach() * 0.5),
 "bce_logits": lambda L, x: L.nn.functional.binary_cross_entropy_with_logits(x, (x.detach() > 0).double()),
 "cross_entropy": lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([0, 1, 2, 0])),
 "layer_norm": lambda L, x: L.nn.functional.layer_norm(x, (3,)),
 "var": lambda L, x: x.var(-1), "std": lambda L, x: x.std(-1), "logsumexp": lambda L, x: x.logsumexp(-1),
 "prod": lambda L, x: x.prod(-1), "max": lambda L, x: x.max(-1)[0], "div": lambda L, x: x / (x.abs() + 1),
 "mul_self": lambda L, x: x * x, "matmul": lambda L, x: x @ x.t(), "tanh_linear": lambda L, x: L.nn.functional.linear(x.tanh(), x.detach() * 0 + 1),
}

# The formula's graph differs from torch's (first or second derivative): ops grouped or
# chosen otherwise, numbers added or multiplied as tensors (AddBackward0/MulBackward0 where
# torch's C++ records AddBackward1/MulBackward1). Values agree.
KNOWN_FORMULA_DIFFERENCES = frozenset({
    "div", "gelu", "gelu_tanh", "layer_norm", "mish", "prod", "silu", "std",
})
# torch refuses a second derivative here too (max's first one is constant in x)
REFUSED = frozenset({"max"})


def _graphs(lib, name):
    x = _leaf(lib, 4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (first,) = lib.autograd.grad(CASES[name](lib, x).sum(), x, create_graph=True)
        (second,) = lib.autograd.grad(first.sum(), x, create_graph=True)
    return _graph(first), _graph(second)


@pytest.mark.parametrize("name", sorted(set(CASES) - KNOWN_FORMULA_DIFFERENCES - REFUSED))
def test_create_graph_records_torchs_formula(name):
    assert _graphs(tg, name) == _graphs(torch, name)


def test_every_known_formula_difference_still_differs():
    fixed = [name for name in sorted(KNOWN_FORMULA_DIFFERENCES)
             if _graphs(tg, name) == _graphs(torch, name)]
    assert not fixed, f"these formulas now record torch's graph: unlist them: {fixed}"


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_second_derivative_as_torch(name):
    for lib in (torch, tg):
        with pytest.raises(RuntimeError, match="does not require grad"):
            _graphs(lib, name)
