"""Composite ops built from torch 2.13's own steps: the whole graph (every node's name,
depth first), the result's version (torch's in-place steps inside a composite bump it),
strides, values and gradients match torch's.

Covers ``linalg.matrix_power`` (n = 0 and 1 copy, -1 inverts, 2 and 3 fast paths, larger
powers square and multiply), ``matrix_norm`` of orders nuc/2/-2 (always permuted, keepdim
restored by unsqueeze and the inverse permutation), ``combinations`` (meshgrid, masks,
stack), ``repeat_interleave`` and ``flatten`` (a 1-d tensor is its own flattening),
``F.linear`` for every rank, with and without bias, contiguous or not, RNN/GRU with
``batch_first`` (the output transposed in place) and the in-place steps of matmul with a
vector and quantile."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


def _graph(tensor):
    names, seen, stack = [], set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name())
        stack.extend(child for child, _ in reversed(node.next_functions))
    return names


def _leaf(lib, *shape):
    count = int(np.prod(shape))
    return (lib.arange(float(count), dtype=lib.float64).reshape(*shape) / 5).sin() \
        .requires_grad_()


def _square(lib, batch=()):
    return (lib.arange(9.0 * int(np.prod(batch or (1,))), dtype=lib.float64)
            .reshape(*batch, 3, 3).sin() / 3 + lib.eye(3, dtype=lib.float64)).requires_grad_()


def _power(n):
    return lambda L: L.linalg.matrix_power(_square(L), n)


def _matrix_norm(order, dims, keepdim):
    return lambda L: L.linalg.matrix_norm(_leaf(L, 2, 3, 4), order, dims, keepdim)


def _combinations(r, with_replacement):
    return lambda L: L.combinations(_leaf(L, 4), r, with_replacement)


CASES = {
    **{f"matrix_power_{n}": _power(n) for n in (0, 1, -1, 2, 3, -3, 4, 5, 6, 7, -6)},
    "matrix_power_0_batched": lambda L: L.linalg.matrix_power(_square(L, (2,)), 0),
    **{f"matrix_norm_{order}_{dims}_{keep}": _matrix_norm(order, dims, keep)
       for order in ("nuc", 2, -2)
       for dims, keep in (((-2, -1), False), ((-2, -1), True), ((2, 0), True), ((1, 0), False))},
    **{f"combinations_{r}_{replace}": _combinations(r, replace)
       for r in (1, 2, 3, 5) for replace in (False, True)},
    "repeat_interleave_vector": lambda L: _leaf(L, 3).repeat_interleave(2),
    "repeat_interleave_counts": lambda L: _leaf(L, 3).repeat_interleave(L.tensor([1, 0, 2])),
    "repeat_interleave_matrix": lambda L: _leaf(L, 2, 3).repeat_interleave(2),
    "flatten_vector": lambda L: _leaf(L, 3).flatten() * 2,
    "flatten_one_dim": lambda L: _leaf(L, 2, 3).flatten(1, 1) * 2,
    "flatten_scalar": lambda L: _leaf(L, 1).sum().flatten(),
    "matmul_vector_matrix": lambda L: _leaf(L, 3) @ _leaf(L, 3, 4),
    "quantile_levels": lambda L: L.quantile(_leaf(L, 3, 4),
                                            L.tensor([0.2, 0.5], dtype=L.float64), dim=1),
    "quantile_nearest": lambda L: L.quantile(_leaf(L, 3, 4), 0.5, dim=1,
                                             interpolation="nearest"),
}


def _linear(rank, bias):
    batch = (2, 3, 5)[:rank - 1]
    return lambda L: L.nn.functional.linear(_leaf(L, *batch, 4), _leaf(L, 3, 4),
                                            _leaf(L, 3) if bias else None)


for _rank in (1, 2, 3, 4):
    for _bias in (False, True):
        CASES[f"linear_rank{_rank}_bias{_bias}"] = _linear(_rank, _bias)
CASES["linear_transposed_bias"] = lambda L: L.nn.functional.linear(
    _leaf(L, 2, 4, 5).transpose(1, 2), _leaf(L, 3, 4), _leaf(L, 3))
CASES["linear_empty_batch"] = lambda L: L.nn.functional.linear(
    L.zeros(2, 0, 4, dtype=L.float64, requires_grad=True), _leaf(L, 3, 4), _leaf(L, 3))

# local_response_norm: 3-d inputs through avg_pool2d, others through a view and avg_pool3d
CASES["local_response_norm_3d"] = lambda L: L.nn.functional.local_response_norm(
    _leaf(L, 2, 5, 3), 3)
CASES["local_response_norm_4d"] = lambda L: L.nn.functional.local_response_norm(
    _leaf(L, 2, 5, 3, 2), 2, alpha=0.5, beta=0.6, k=2.0)
CASES["local_response_norm_6d_module"] = lambda L: L.nn.LocalResponseNorm(4, 0.3)(
    _leaf(L, 1, 6, 2, 3, 2, 2))


@pytest.mark.parametrize("name", CASES)
def test_composite_as_torch(name):
    results = {}
    for lib in (torch, tg):
        lib.manual_seed(0)
        out = CASES[name](lib)
        graph = _graph(out) if out.grad_fn is not None else None
        stride = out.stride() if out.numel() else None
        results[lib] = (graph, out._version, tuple(out.shape), stride, out.requires_grad,
                        out.detach().numpy().copy())
    ours, theirs = results[tg], results[torch]
    assert ours[:5] == theirs[:5]
    np.testing.assert_allclose(ours[5], theirs[5], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode, options", [("RNN", {"nonlinearity": "relu"}), ("RNN", {}),
                                           ("GRU", {}), ("LSTM", {})])
@pytest.mark.parametrize("batch_first", [True, False])
def test_recurrent_output_node_and_version_as_torch(mode, options, batch_first):
    """torch's RNN and GRU kernels transpose a batch-first output in place
    (TransposeBackward1, version 1); the LSTM module transposes a view."""
    seen = {}
    for lib in (torch, tg):
        lib.manual_seed(0)
        layer = getattr(lib.nn, mode)(3, 4, batch_first=batch_first, **options).double()
        output = layer(lib.ones(2, 5, 3, dtype=lib.float64))[0]
        seen[lib] = (output.grad_fn.name(), output._version, output.stride())
    assert seen[tg] == seen[torch]


def test_matrix_power_zero_stays_in_the_graph():
    """torch copies the identity into a clone of A: the result requires grad (a zero
    gradient reaches A), where a constant would not."""
    for lib in (torch, tg):
        a = _square(lib)
        lib.linalg.matrix_power(a, 0).sum().backward()
        assert a.grad is not None and not a.grad.any()


@pytest.mark.parametrize("options", [{"batch_first": True},
                                     {"batch_first": True, "bidirectional": True,
                                      "num_layers": 2}, {}, {"num_layers": 2}])
def test_float32_lstm_graph_as_torch(options):
    """torch's oneDNN LSTM makes its input contiguous first: a batch-first input's transpose
    is cloned (CloneBackward0) before the first MkldnnRnnLayerBackward0."""
    graphs = {}
    for lib in (torch, tg):
        lib.manual_seed(0)
        layer = lib.nn.LSTM(3, 4, **options)
        graphs[lib] = _graph(layer(lib.ones(2, 5, 3, requires_grad=True))[0])
    assert graphs[tg] == graphs[torch]


@pytest.mark.parametrize("activation", ["tanh", "sigmoid", "relu"])
def test_grad_with_create_graph_records_only_what_its_inputs_need(activation):
    """autograd.grad(..., inputs, create_graph=True) runs each built-in formula only for
    the gradients that lead to the inputs (torch's should_compute_output), so the weights'
    gradient formulas are not recorded; and a second derivative through tanh records
    torch's grouping of tanh_backward's formula. (PINNs and WGAN-GP take both steps.)"""
    graphs = {}
    for lib in (torch, tg):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(2, 8), getattr(lib.nn, activation.capitalize()
                                                             if activation != "relu"
                                                             else "ReLU")(),
                                lib.nn.Linear(8, 1)).double()
        x = _leaf(lib, 4, 2)
        (first,) = lib.autograd.grad(net(x).sum(), x, create_graph=True)
        (second,) = lib.autograd.grad(first.sum(), x, create_graph=True)
        graphs[lib] = (_graph(first), _graph(second))
    assert graphs[tg] == graphs[torch]
