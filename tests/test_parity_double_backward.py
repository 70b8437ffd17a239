"""Second-order gradients against torch 2.13: the gradient made with ``create_graph=True``
(its values, whether it requires grad, the name of its grad_fn) and the gradients of that
gradient, both for the input and for an upstream gradient that itself requires grad.

A gradient that wrongly does not require grad is a silent difference: torch differentiates
it again (to zeros for a piecewise-linear op), tracegrad would raise "does not require
grad". Node names torch gives differently are strict xfails in ``KNOWN_NAME_DIFFERENT``,
one line each, so the list stays true.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_ops_gradients import graph_names

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(0)
X = _RNG.standard_normal((3, 4))
W = _RNG.standard_normal((3, 4))
TARGET = [1, 0, 3]


def _F(lib):
    return lib.nn.functional


PROGRAMS = {
 "relu": lambda L, x: x.relu(),
 "abs": lambda L, x: x.abs(),
 "leaky_relu": lambda L, x: _F(L).leaky_relu(x, 0.1),
 "hardtanh": lambda L, x: _F(L).hardtanh(x, -0.5, 0.5),
 "relu6": lambda L, x: _F(L).relu6(x * 4),
 "threshold": lambda L, x: _F(L).threshold(x, 0.1, 2.0),
 "tanh": lambda L, x: x.tanh(),
 "sigmoid": lambda L, x: x.sigmoid(),
 "pow": lambda L, x: x.pow(3),
 "pow_tensor": lambda L, x: x.abs().pow(x),
 "sqrt": lambda L, x: x.abs().sqrt(),
 "softmax": lambda L, x: L.softmax(x, 1),
 "log_softmax": lambda L, x: L.log_softmax(x, 1),
 "mse": lambda L, x: _F(L).mse_loss(x, (x * 2).sin()),
 "mse_detached": lambda L, x: _F(L).mse_loss(x, L.tensor(W, dtype=L.float64)),
 "mse_sum": lambda L, x: _F(L).mse_loss(x.sin(), x.cos(), reduction="sum"),
 "mse_none": lambda L, x: _F(L).mse_loss(x, x.flip(0) * 2, reduction="none"),
 "cross_entropy": lambda L, x: _F(L).cross_entropy(x, L.tensor(TARGET)),
 "nll": lambda L, x: _F(L).nll_loss(x, L.tensor(TARGET)),
 "nll_weighted": lambda L, x: _F(L).nll_loss(
     x, L.tensor(TARGET), weight=L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64),
     ignore_index=0, reduction="sum"),
 "nll_none": lambda L, x: _F(L).nll_loss(x, L.tensor(TARGET), reduction="none"),
 "silu": lambda L, x: _F(L).silu(x),
 "softplus": lambda L, x: _F(L).softplus(x, 2, 1),
 "elu": lambda L, x: _F(L).elu(x),
 "selu": lambda L, x: _F(L).selu(x),
 "celu": lambda L, x: _F(L).celu(x, 0.5),
 "softplus_default": lambda L, x: _F(L).softplus(x),
 "gelu": lambda L, x: _F(L).gelu(x),
 "layer_norm": lambda L, x: _F(L).layer_norm(x, (4,), x[0] * 1, x[1] * 1),
 "layer_norm_plain": lambda L, x: _F(L).layer_norm(x, (4,)),
 "round": lambda L, x: x.round(),
 "sign": lambda L, x: x.sign(),
 "max_dim": lambda L, x: x.max(1)[0],
 "where": lambda L, x: L.where(x > 0, x * x, x),
 "hardswish": lambda L, x: _F(L).hardswish(x),
 "logsigmoid": lambda L, x: _F(L).logsigmoid(x),
 "smooth_l1": lambda L, x: _F(L).smooth_l1_loss(x, L.tensor(W, dtype=L.float64)),
 "huber": lambda L, x: _F(L).huber_loss(x, L.tensor(W, dtype=L.float64)),
 "batch_norm": lambda L, x: _F(L).batch_norm(x, None, None, training=True),
 "glu": lambda L, x: _F(L).glu(x, 1),
 "prod": lambda L, x: x.prod(1),
 "select_slice": lambda L, x: x.select(1, -2) * x[0, :3] + x[1:, ::2].sum(),
 "narrow": lambda L, x: x.narrow(0, 1, 2) * x[:2],
 "norm": lambda L, x: x.norm(),
 "index_repeats": lambda L, x: x[[0, 2, 2]],
 "index_mask": lambda L, x: x[x > 0],
 "index_columns": lambda L, x: x[:, [1, 3, 3]] * x[[2, 0], [1, 1]].sum(),
}

# Graphs of the create_graph gradient (every node's name, breadth first) that still differ
# from torch's (values and requires_grad match).
KNOWN_NAME_DIFFERENT: dict[str, str] = {}


def _first_and_second(lib, program):
    x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
    y = PROGRAMS[program](lib, x)
    upstream = lib.tensor(np.resize(W, tuple(y.shape)), dtype=lib.float64, requires_grad=True)
    (grad,) = lib.autograd.grad(y, x, grad_outputs=upstream, create_graph=True)
    first = (grad.detach().numpy().copy(), grad.requires_grad, graph_names([grad]))
    if not grad.requires_grad:
        return first, None
    second = lib.autograd.grad((grad * lib.tensor(W[::-1].copy())).sum(), (x, upstream),
                               allow_unused=True)
    return first, [None if g is None else _numpy(g) for g in second]


def _numpy(tensor):
    """A gradient's values (torch's zero gradients are ZeroTensors: numpy(force=True))."""
    return tensor.numpy(force=True) if isinstance(tensor, torch.Tensor) else tensor.numpy()


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_second_order_values_and_requires_grad_match_torch(program):
    (ours, our_second), (theirs, their_second) = (_first_and_second(tg, program),
                                                  _first_and_second(torch, program))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-7, atol=1e-10)
    assert ours[1] == theirs[1], "requires_grad of the create_graph gradient"
    if their_second is None:
        return
    for position, (mine, reference) in enumerate(zip(our_second, their_second)):
        if reference is None or not reference.any():  # unused, or torch's zeros
            assert mine is None or not mine.any(), f"second gradient {position}"
        else:
            np.testing.assert_allclose(mine, reference, rtol=1e-6, atol=1e-9,
                                       err_msg=f"second gradient {position}")


@pytest.mark.parametrize("program", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_NAME_DIFFERENT[name]))
    if name in KNOWN_NAME_DIFFERENT else name for name in PROGRAMS])
def test_second_order_graph_matches_torch(program):
    assert _first_and_second(tg, program)[0][2] == _first_and_second(torch, program)[0][2]


def test_hardsigmoid_second_derivative_fails_as_in_torch():
    for lib in (tg, torch):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        (grad,) = lib.autograd.grad(_F(lib).hardsigmoid(x).sum(), x, create_graph=True)
        assert grad.requires_grad and grad.grad_fn.name() == "torch::autograd::NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::hardsigmoid_backward is "
                                               "not implemented"):
            lib.autograd.grad(grad.sum(), x)


@pytest.mark.parametrize("name,lib_op", [
    ("ThresholdBackwardBackward0", lambda L, x: x.relu()),
    ("LeakyReluBackwardBackward0", lambda L, x: _F(L).leaky_relu(x, 0.2)),
    ("HardtanhBackwardBackward0", lambda L, x: _F(L).relu6(x)),
    ("NllLossBackwardBackward0", lambda L, x: _F(L).nll_loss(x, L.tensor(TARGET))),
    ("TanhBackwardBackward0", lambda L, x: x.tanh()),
    ("SigmoidBackwardBackward0", lambda L, x: x.sigmoid()),
    ("SoftmaxBackwardDataBackward0", lambda L, x: L.softmax(x, -1)),
    ("EluBackwardBackward0", lambda L, x: _F(L).elu(x, 0.5)),
    ("SoftplusBackwardBackward0", lambda L, x: _F(L).softplus(x, 2, 1)),
    ("MseLossBackwardBackward0", lambda L, x: _F(L).mse_loss(x, L.ones(3, 4, dtype=L.float64))),
    ("LogSoftmaxBackwardDataBackward0", lambda L, x: L.log_softmax(x, 0)),
    ("HardswishBackwardBackward0", lambda L, x: _F(L).hardswish(x)),
    ("NativeBatchNormBackwardBackward0", lambda L, x: _F(L).batch_norm(
        x, L.zeros(4, dtype=L.float64), L.ones(4, dtype=L.float64),
        L.ones(4, dtype=L.float64) * 2, training=True)),
    ("NativeLayerNormBackwardBackward0", lambda L, x: _F(L).layer_norm(
        x, (4,), L.ones(4, dtype=L.float64) * 2)),
    ("LogSigmoidBackwardBackward0", lambda L, x: _F(L).logsigmoid(x)),
    ("GluBackwardBackward0", lambda L, x: _F(L).glu(x, -1)),
    ("SmoothL1LossBackwardBackward0", lambda L, x: _F(L).smooth_l1_loss(
        x, L.ones(3, 4, dtype=L.float64), reduction="sum", beta=0.5)),
    ("HuberLossBackwardBackward0", lambda L, x: _F(L).huber_loss(
        x, L.ones(3, 4, dtype=L.float64), delta=0.5)),
])
def test_backward_nodes_show_torch_saved_values(name, lib_op):
    shown = []
    for lib in (tg, torch):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        y = lib_op(lib, x)
        (grad,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        node = grad.grad_fn
        assert node.name() == name
        values = {}
        for attribute in sorted(a for a in dir(node) if a.startswith("_saved_")):
            value = getattr(node, attribute)
            values[attribute] = (tuple(value.shape), np.array(value.tolist())) \
                if isinstance(value, lib.Tensor) else (type(value).__name__, value)
        shown.append(values)
    assert shown[0].keys() == shown[1].keys()
    for attribute, mine in shown[0].items():
        reference = shown[1][attribute]
        assert mine[0] == reference[0], attribute
        if isinstance(reference[1], np.ndarray):
            np.testing.assert_allclose(mine[1], reference[1], err_msg=attribute)
        else:
            assert mine[1] == reference[1], attribute


@pytest.mark.parametrize("index", [
    lambda L, x: [0, 2, 2],
    lambda L, x: x > 5,
    lambda L, x: (slice(None), [1, 3]),
    lambda L, x: ([1, 0], [2, 2]),
], ids=["list", "mask", "columns", "pairs"])
def test_index_backward_under_create_graph_is_torchs_index_put_impl(index):
    """torch's gradient of ``x[index]`` under create_graph: ``zeros.index_put_(indices,
    grad, accumulate=True)`` -- IndexPutImplBackward0 with a dead first edge, the indices
    and accumulate saved, the result at version 1."""
    def shown(lib):
        x = lib.arange(12.0, dtype=lib.float64).reshape(3, 4).requires_grad_()
        (grad,) = lib.autograd.grad(x[index(lib, x)].pow(2).sum(), x, create_graph=True)
        node = grad.grad_fn
        edges = [(None if f is None else f.name(), nr) for f, nr in node.next_functions]
        indices = [None if part is None else part.tolist() for part in node._saved_indices]
        (second,) = lib.autograd.grad((grad * grad).sum(), x)
        return (node.name(), edges, indices, node._saved_accumulate, grad._version,
                grad.tolist(), second.tolist())

    assert shown(tg) == shown(torch)
