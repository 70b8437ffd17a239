"""The double-backward nodes (made only under create_graph=True: TanhBackwardBackward0,
MseLossBackwardBackward0, ...) write their own backward once, for arrays and Tensors: a
gradient penalty's ``.backward()`` runs it on arrays, a third derivative on Tensors. Both
give torch's numbers, and each node's formula is seen to run the way it should.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.nn import _ops as nn_ops
from tracegrad.ops import activation, loss, normalization, unary

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(3)
X = _RNG.standard_normal((3, 4))
W = _RNG.standard_normal((3, 4)) * 0.5 + 1.0
TARGET = [1, 0, 3]
TARGET2D = [[[0, 2], [1, 1]]]


def _F(lib):
    return lib.nn.functional


# node op -> programs of x (made from the parameters) whose first gradient is that node
PROGRAMS = {
    unary.TanhBackward: {"tanh": lambda L, x: x.tanh()},
    unary.SigmoidBackward: {"sigmoid": lambda L, x: x.sigmoid()},
    unary.SoftmaxBackwardData: {"softmax": lambda L, x: L.softmax(x, 1) * L.tensor(W)},
    unary.LogSoftmaxBackwardData: {"log_softmax": lambda L, x: L.log_softmax(x, 0)},
    activation.EluBackward: {"elu": lambda L, x: _F(L).elu(x, 0.7),
                             "selu": lambda L, x: _F(L).selu(x),
                             "celu": lambda L, x: _F(L).celu(x, 0.5)},
    activation.SoftplusBackward: {"softplus": lambda L, x: _F(L).softplus(x, 2, 1),
                                  "softplus_default": lambda L, x: _F(L).softplus(x)},
    activation.ThresholdBackward: {"relu": lambda L, x: x.relu() ** 2,
                                   "threshold": lambda L, x: _F(L).threshold(x, 0.1, 2.0)},
    activation.HardtanhBackward: {"hardtanh": lambda L, x: _F(L).hardtanh(x, -0.5, 0.5),
                                  "relu6": lambda L, x: _F(L).relu6(x * 4)},
    activation.LeakyReluBackward: {"leaky_relu": lambda L, x: _F(L).leaky_relu(x, 0.1)},
    activation.HardswishBackward: {"hardswish": lambda L, x: _F(L).hardswish(x * 3)},
    activation.LogSigmoidBackward: {"logsigmoid": lambda L, x: _F(L).logsigmoid(x * 2)},
    activation.GluBackward: {"glu": lambda L, x: _F(L).glu(x, 1),
                             "glu_dim0": lambda L, x: _F(L).glu(x[:2], -2)},
    loss.SmoothL1LossBackward: {
        "smooth_l1": lambda L, x: _F(L).smooth_l1_loss(x, L.tensor(W), beta=0.7),
        "smooth_l1_none": lambda L, x: _F(L).smooth_l1_loss(x, x.flip(0) * 2,
                                                             reduction="none")},
    loss.HuberLossBackward: {
        "huber": lambda L, x: _F(L).huber_loss(x, L.tensor(W), delta=0.8),
        "huber_sum": lambda L, x: _F(L).huber_loss(x.sin() * 3, x.cos(), reduction="sum"),
        "huber_none": lambda L, x: _F(L).huber_loss(x, L.tensor(W) * 2, reduction="none")},
    normalization.NativeLayerNormBackward: {
        "layer_norm": lambda L, x: _F(L).layer_norm(x, (4,)),
        "layer_norm_affine": lambda L, x: _F(L).layer_norm(
            x, (4,), L.tensor(W[0]), L.tensor(W[1])) * L.tensor(W),
        "layer_norm_x_weight": lambda L, x: _F(L).layer_norm(x, (4,), x[0] * 1, x[1] * 1),
        "layer_norm_2d": lambda L, x: _F(L).layer_norm(x.reshape(1, 3, 4), (3, 4),
                                                       x * 2 + 1, eps=0.1).sin()},
    normalization.NativeBatchNormBackward: {
        "batch_norm": lambda L, x: _F(L).batch_norm(x, None, None, training=True),
        "batch_norm_affine": lambda L, x: _F(L).batch_norm(
            x.reshape(3, 2, 2), None, None, L.tensor([1.5, -0.5], dtype=L.float64),
            L.tensor([0.1, 0.2], dtype=L.float64),
            training=True) * L.tensor(W).reshape(3, 2, 2),
        "batch_norm_x_weight": lambda L, x: _F(L).batch_norm(
            x, None, None, x[0] * 1, x[1] * 1, training=True, eps=0.1),
        "batch_norm_eval": lambda L, x: _F(L).batch_norm(
            x, L.tensor([0.1, -0.2, 0.3, 0.0], dtype=L.float64),
            L.tensor([1.5, 0.5, 2.0, 1.0], dtype=L.float64), x[2] * 2,
            None, training=False).sin()},
    nn_ops.MseLossBackward: {
        "mse": lambda L, x: _F(L).mse_loss(x, (x * 2).sin()),
        "mse_sum": lambda L, x: _F(L).mse_loss(x.sin(), x.cos(), reduction="sum"),
        "mse_none": lambda L, x: _F(L).mse_loss(x, L.tensor(W), reduction="none")},
    nn_ops.NllLossBackward: {
        "cross_entropy": lambda L, x: _F(L).cross_entropy(x, L.tensor(TARGET)),
        "nll_weighted": lambda L, x: _F(L).nll_loss(
            x.log_softmax(1), L.tensor(TARGET), ignore_index=0, reduction="sum",
            weight=L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64))},
    nn_ops.NllLoss2DBackward: {
        "nll_2d": lambda L, x: _F(L).nll_loss(
            L.log_softmax(x.reshape(1, 3, 2, 2), 1), L.tensor(TARGET2D))},
}
CASES = [(op, name) for op, programs in PROGRAMS.items() for name in programs]
IDS = [name for _, name in CASES]


def _parameters(lib):
    x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(W, dtype=lib.float64, requires_grad=True)
    return x, w


def _penalized(lib, program):
    """A gradient penalty: loss + |d loss / d x|^2, then .backward() (WGAN-GP style)."""
    x, w = _parameters(lib)
    loss = program(lib, x * w).sum()
    (grad,) = lib.autograd.grad(loss, x, create_graph=True)
    (loss + (grad * grad).sum()).backward()
    return grad, [x.grad.numpy().copy(), w.grad.numpy().copy()]


def _third(lib, program):
    """The third derivative along a direction: the double-backward node's own backward
    recorded (create_graph on the second pass), then differentiated."""
    x, w = _parameters(lib)
    y = program(lib, x * w)
    (grad,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    (second,) = lib.autograd.grad((grad * grad).sum(), x, create_graph=True)
    if not second.requires_grad:
        return None
    (second * lib.tensor(X[::-1].copy())).sum().backward()
    return [None if g is None else g.numpy().copy() for g in (x.grad, w.grad)]


@pytest.fixture
def ran(monkeypatch):
    """Which kinds of value each double-backward node's formula ran on."""
    seen: dict[type, set] = {}
    for op in PROGRAMS:
        node_class = op._node_class
        formula = node_class._formula

        def recording(node, *grads, _formula=formula):
            on_tensors = any(isinstance(grad, tg.Tensor) for grad in grads)
            seen.setdefault(type(node), set()).add("tensors" if on_tensors else "arrays")
            return _formula(node, *grads)

        monkeypatch.setattr(node_class, "_formula", staticmethod(recording))  # on arrays
        monkeypatch.setattr(op, "_backward_impl", staticmethod(recording))  # on Tensors
    return seen


@pytest.mark.parametrize("op,name", CASES, ids=IDS)
def test_gradient_penalty_backward_runs_the_node_on_arrays_as_torch(op, name, ran):
    program = PROGRAMS[op][name]
    grad, ours = _penalized(tg, program)
    assert ran.get(op._node_class) == {"arrays"}  # (made under create_graph, run without)
    _, theirs = _penalized(torch, program)
    for label, mine, reference in zip(("x", "w"), ours, theirs):
        np.testing.assert_allclose(mine, reference, rtol=1e-7, atol=1e-10,
                                   err_msg=f"{name}: gradient of {label}")


@pytest.mark.parametrize("op,name", CASES, ids=IDS)
def test_third_derivative_runs_the_node_on_tensors_as_torch(op, name, ran):
    program = PROGRAMS[op][name]
    ours = _third(tg, program)
    assert "tensors" in ran.get(op._node_class, set())
    theirs = _third(torch, program)
    assert (ours is None) == (theirs is None)
    if theirs is None:
        return
    for label, mine, reference in zip(("x", "w"), ours, theirs):
        if reference is None or not reference.any():
            assert mine is None or not mine.any(), f"{name}: gradient of {label}"
        else:
            np.testing.assert_allclose(mine, reference, rtol=1e-7, atol=1e-10,
                                       err_msg=f"{name}: gradient of {label}")


def test_every_double_backward_node_is_covered():
    names = {op.__name__ for op in PROGRAMS}
    assert names == {"TanhBackward", "SigmoidBackward", "SoftmaxBackwardData",
                     "LogSoftmaxBackwardData", "EluBackward", "SoftplusBackward",
                     "ThresholdBackward", "HardtanhBackward", "LeakyReluBackward",
                     "MseLossBackward", "NllLossBackward", "NllLoss2DBackward",
                     "HardswishBackward", "LogSigmoidBackward", "GluBackward",
                     "SmoothL1LossBackward", "HuberLossBackward", "NativeLayerNormBackward",
                     "NativeBatchNormBackward"}
    for op in PROGRAMS:
        assert op._node_class._takes_arrays, op.__name__
