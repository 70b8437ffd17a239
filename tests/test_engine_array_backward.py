"""A backward pass without create_graph runs built-in formulas on backend arrays; with it, the
same formulas on Tensors (tracegrad/ops/__init__.py). Both ways must give the same numbers,
hooks must still see Tensors, and saved-tensor checks must still fire."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.autograd.function import Op
from tracegrad.ops import arith, decompositions, reduce

_SEEN: list = []  # (type of the gradient, type of the saved value), per _Probe backward


class _Probe(Op):
    """2 * x, recording what kind of value its backward formula was given."""

    node_name = "ProbeBackward"
    array_backward = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a._array * 2

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        _SEEN.append((type(grad), type(a)))
        return (grad * 2,)


def test_the_flag_follows_the_formula():
    assert arith.Mul._node_class._takes_arrays
    assert reduce.SumAll._node_class._takes_arrays  # inherits Sum's backward and its flag
    assert decompositions.Svd._node_class._takes_arrays
    assert not _Unflagged._node_class._takes_arrays  # a formula not written for arrays


class _Unflagged(Op):
    node_name = "UnflaggedBackward"

    @staticmethod
    def forward(ctx, a):
        return a._array * 2

    @staticmethod
    def backward(ctx, grad):
        return (grad * 2,)


def test_formula_gets_arrays_without_create_graph_and_tensors_with_it():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    _SEEN.clear()
    _Probe.apply(x).sum().backward()
    tg.autograd.grad(_Probe.apply(x).sum(), x, create_graph=True)
    assert _SEEN == [(np.ndarray, np.ndarray), (tg.Tensor, tg.Tensor)]
    assert x.grad.tolist() == [2.0, 2.0]


def _mixed(x, w, b):
    # converted (mul, add, div, sub, mean, sum) and unconverted (exp, tanh) ops, broadcasting,
    # a Python scalar operand
    y = (x * w + b) / (w + 2.0) - 0.5 * x
    return (y.exp().tanh().mean(dim=0) * b).sum()


def _inputs(dtype):
    tg.manual_seed(0)
    return (tg.randn(3, 4, dtype=dtype, requires_grad=True),
            tg.randn(4, dtype=dtype, requires_grad=True),
            tg.randn(1, 4, dtype=dtype, requires_grad=True))


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_array_pass_matches_tensor_pass(dtype):
    inputs = _inputs(dtype)
    _mixed(*inputs).backward()
    on_arrays = [tensor.grad for tensor in inputs]
    on_tensors = tg.autograd.grad(_mixed(*inputs), inputs, create_graph=True)
    for array_grad, tensor_grad, tensor in zip(on_arrays, on_tensors, inputs):
        assert type(array_grad) is tg.Tensor and array_grad.dtype == dtype
        assert array_grad.shape == tensor.shape
        np.testing.assert_allclose(array_grad.numpy(), tensor_grad.detach().numpy(),
                                   rtol=1e-6 if dtype is tg.float32 else 1e-12)


@pytest.mark.torch
def test_array_pass_matches_torch():
    torch = pytest.importorskip("torch")
    inputs = _inputs(tg.float64)
    _mixed(*inputs).backward()
    theirs = [torch.tensor(tensor.detach().numpy(), requires_grad=True) for tensor in inputs]
    _mixed(*theirs).backward()
    for ours, reference in zip(inputs, theirs):
        np.testing.assert_allclose(ours.grad.numpy(), reference.grad.numpy(), rtol=1e-9,
                                   atol=1e-15)


def test_hooks_and_retained_grads_see_tensors_in_an_array_pass():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 3.0
    y.retain_grad()
    seen = []
    y.register_hook(lambda grad: seen.append(type(grad)) or grad * 10)
    (y * y).sum().backward()
    assert seen == [tg.Tensor]
    # as in PyTorch, the retained gradient is the one after the tensor's hooks
    assert type(y.grad) is tg.Tensor and y.grad.tolist() == [60.0, 120.0, 180.0]
    assert x.grad.tolist() == [180.0, 360.0, 540.0]  # the hook's factor 10, then * 3


def test_grads_accumulate_over_two_array_passes():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(2):
        (x * x).sum().backward()
    assert x.grad.tolist() == [4.0, 8.0]


def test_saved_tensor_modified_in_place_still_raises_in_an_array_pass():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1.0
    out = (b * b).sum()
    b.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def _network(lib, x, w, b):
    # the converted matrix, shape, activation and loss formulas in one graph
    F = lib.nn.functional
    h = F.linear(x, w, b[0])  # addmm
    h = F.leaky_relu(h, 0.1) + F.softplus(h) + F.hardswish(h) + F.logsigmoid(h)
    h = h.t().unsqueeze(0).permute(0, 2, 1).reshape(3, 4).expand(2, 3, 4)
    h = F.log_softmax(h, dim=-1) + F.softmax(h, dim=1) + h.transpose(1, 2).sum(2).unsqueeze(1)
    h = h.bmm(h.transpose(1, 2)).erf().reciprocal().log1p()
    return F.mse_loss(h, lib.zeros_like(h).detach() + 0.5) + (b.exp().sqrt().tanh() ** 2).mean()


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_array_pass_matches_tensor_pass_through_a_network(dtype):
    tg.manual_seed(1)
    inputs = (tg.randn(3, 5, dtype=dtype, requires_grad=True),
              tg.randn(4, 5, dtype=dtype, requires_grad=True),
              tg.randn(2, 4, dtype=dtype, requires_grad=True))
    _network(tg, *inputs).backward()
    on_tensors = tg.autograd.grad(_network(tg, *inputs), inputs, create_graph=True)
    for tensor, tensor_grad in zip(inputs, on_tensors):
        assert tensor.grad.dtype == dtype and tensor.grad.shape == tensor.shape
        np.testing.assert_allclose(tensor.grad.numpy(), tensor_grad.detach().numpy(),
                                   rtol=1e-5 if dtype is tg.float32 else 1e-12, atol=1e-7)


@pytest.mark.torch
def test_array_pass_through_a_network_matches_torch():
    torch = pytest.importorskip("torch")
    tg.manual_seed(1)
    ours = (tg.randn(3, 5, dtype=tg.float64, requires_grad=True),
            tg.randn(4, 5, dtype=tg.float64, requires_grad=True),
            tg.randn(2, 4, dtype=tg.float64, requires_grad=True))
    theirs = [torch.tensor(tensor.detach().numpy(), requires_grad=True) for tensor in ours]
    _network(tg, *ours).backward()
    _network(torch, *theirs).backward()
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-9,
                                   atol=1e-12)


def test_zero_dim_gradients_that_numpy_turns_into_scalars():
    # 0-d arrays added or multiplied give NumPy scalars, not arrays: every formula and the
    # accumulation must take them (hypothesis found sigmoid -> sqrt on a 0-d leaf)
    x = tg.tensor(0.5, dtype=tg.float64, requires_grad=True)
    y = x.sigmoid()
    (y.sqrt() + y.tanh() + y.relu() * y).backward()
    reference = tg.autograd.grad(
        (x.sigmoid().sqrt() + x.sigmoid().tanh() + x.sigmoid().relu() * x.sigmoid()), x,
        create_graph=True)[0]
    assert type(x.grad) is tg.Tensor and x.grad.shape == ()
    np.testing.assert_allclose(x.grad.item(), reference.item(), rtol=1e-12)


# -- nn's fused ops (tracegrad/nn/_ops.py: not in ops.registry()) ------------------------
def _linear(L, x, w, b):
    return L.nn.functional.linear(x, w, b)


def _nll(L, x, w, b):
    target = L.tensor([1, 0, 3])
    log_probs = L.nn.functional.log_softmax(x @ w.T + b, dim=1)
    return (L.nn.functional.nll_loss(log_probs, target)
            + L.nn.functional.nll_loss(log_probs, target, weight=L.tensor([1.0, 2.0, 0.5, 1.0],
                                                                          dtype=x.dtype),
                                       reduction="sum", ignore_index=0))


def _mse(L, x, w, b):
    return L.nn.functional.mse_loss(x @ w.T, b.expand(3, 4))


NN_PROGRAMS = {"AddmmBackward0": _linear, "NllLossBackward0": _nll, "MseLossBackward0": _mse}


def _nn_inputs(lib):
    rng = np.random.default_rng(3)
    return [lib.tensor(rng.standard_normal(shape), requires_grad=True)
            for shape in ((3, 5), (4, 5), (4,))]


def _weighted_grads(lib, program, create_graph):
    inputs = _nn_inputs(lib)
    out = program(lib, *inputs)
    weight = lib.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)))
    return lib.autograd.grad((out * weight).sum(), inputs, create_graph=create_graph)


def _ops_named(node_name: str) -> list:
    """Every op class (nn's fused ones too) whose node is called ``node_name``."""
    found, pending = [], list(Op.__subclasses__())
    while pending:
        op = pending.pop()
        pending.extend(op.__subclasses__())
        if op._node_class._name == node_name:
            found.append(op)
    return found


@pytest.mark.parametrize("node_name", NN_PROGRAMS)
def test_nn_fused_ops_run_on_arrays_and_on_tensors_alike(node_name, monkeypatch):
    ran = []  # the node names whose formula was given arrays
    for op in _ops_named(node_name):
        formula = op._node_class._formula

        def recording(node, *grads, formula=formula):
            if not any(isinstance(grad, tg.Tensor) for grad in grads):
                ran.append(node.name())
            return formula(node, *grads)

        monkeypatch.setattr(op._node_class, "_formula", staticmethod(recording))
        monkeypatch.setattr(op, "_backward_impl", staticmethod(recording))
    program = NN_PROGRAMS[node_name]
    on_arrays_grads = _weighted_grads(tg, program, False)
    assert node_name in ran
    ran.clear()
    on_tensor_grads = _weighted_grads(tg, program, True)
    assert node_name not in ran
    for mine, reference in zip(on_arrays_grads, on_tensor_grads):
        np.testing.assert_allclose(mine.numpy(), reference.detach().numpy(), rtol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("node_name", NN_PROGRAMS)
def test_nn_fused_ops_match_torch(node_name):
    torch = pytest.importorskip("torch")
    program = NN_PROGRAMS[node_name]
    for mine, reference in zip(_weighted_grads(tg, program, False),
                               _weighted_grads(torch, program, False)):
        np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-10)


@pytest.mark.parametrize("node_name", NN_PROGRAMS)
def test_nn_fused_ops_second_derivatives(node_name):
    program = NN_PROGRAMS[node_name]
    assert tg.autograd.gradgradcheck(lambda *xs: program(tg, *xs), _nn_inputs(tg))
