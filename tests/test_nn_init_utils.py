"""nn.init (gains, fans, bounds, distributions, generators) and nn.utils (gradient
clipping, parameters as a vector, pad_sequence) -- against torch where the numbers are
deterministic, by statistics where they are random."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.nn import init


@pytest.mark.torch
@pytest.mark.parametrize("nonlinearity, param", [
    ("linear", None), ("conv2d", None), ("conv_transpose3d", None), ("sigmoid", None),
    ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)])
def test_calculate_gain_matches_torch(nonlinearity, param):
    torch = pytest.importorskip("torch")
    assert init.calculate_gain(nonlinearity, param) == torch.nn.init.calculate_gain(
        nonlinearity, param)


def test_gain_and_fan_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity swish"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(tg.empty(3, 4), mode="fan_avg")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(tg.empty(3))
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_normal_(tg.empty(0, 3))


@pytest.mark.parametrize("fill, low, high, std", [
    (lambda w: init.uniform_(w, -0.5, 1.5), -0.5, 1.5, 2 / math.sqrt(12)),
    (lambda w: init.kaiming_uniform_(w, a=math.sqrt(5)), -1 / math.sqrt(64), 1 / math.sqrt(64),
     None),
    (lambda w: init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu"), None, None,
     math.sqrt(2) / math.sqrt(200 * 16)),
    (lambda w: init.xavier_uniform_(w, gain=2.0), -2 * math.sqrt(6 / (64 * 16 + 200 * 16)),
     2 * math.sqrt(6 / (64 * 16 + 200 * 16)), None),
    (lambda w: init.xavier_normal_(w), None, None, math.sqrt(2 / (64 * 16 + 200 * 16))),
    (lambda w: init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5), -0.5, 0.5, None),
    (lambda w: init.normal_(w, 3.0, 0.5), None, None, 0.5),
], ids=["uniform", "kaiming-uniform", "kaiming-normal", "xavier-uniform", "xavier-normal",
        "trunc-normal", "normal"])
def test_random_initialisers_have_torchs_bounds_and_spread(fill, low, high, std):
    weight = tg.empty(200, 64, 4, 4)
    fill(weight)
    values = weight.numpy()
    if low is not None:
        assert values.min() >= low and values.max() <= high
    if std is not None:
        assert abs(values.std() - std) < 0.02 * std + 1e-3


def test_deterministic_initialisers_and_generators():
    eye = tg.empty(2, 3)
    assert init.eye_(eye).tolist() == [[1, 0, 0], [0, 1, 0]]
    dirac = init.dirac_(tg.empty(4, 2, 3, 3), groups=2)
    assert dirac[0, 0, 1, 1].item() == 1 and dirac[2, 0, 1, 1].item() == 1
    assert dirac.sum().item() == 4
    assert init.constant_(tg.empty(2), 0.3).tolist() == pytest.approx([0.3, 0.3])
    q = init.orthogonal_(tg.empty(3, 5), gain=2.0).numpy()
    np.testing.assert_allclose(q @ q.T, 4 * np.eye(3), atol=1e-5)
    sparse = init.sparse_(tg.empty(10, 4), sparsity=0.3).numpy()
    assert ((sparse == 0).sum(0) >= 3).all()
    first = init.normal_(tg.empty(5), generator=tg.Generator().manual_seed(1)).tolist()
    assert init.normal_(tg.empty(5), generator=tg.Generator().manual_seed(1)).tolist() == first
    tg.manual_seed(7)
    seeded = init.uniform_(tg.empty(3)).tolist()
    tg.manual_seed(7)
    assert init.uniform_(tg.empty(3)).tolist() == seeded


def test_initialising_a_parameter_is_outside_the_graph_and_bumps_its_version():
    layer = tg.nn.Linear(3, 2)
    version = layer.weight._version
    init.zeros_(layer.weight)
    assert layer.weight.is_leaf and layer.weight.grad_fn is None
    assert layer.weight._version == version + 1 and not layer.weight.detach().numpy().any()


@pytest.mark.torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    torch = pytest.importorskip("torch")
    arrays = [np.linspace(-2, 3, 6).reshape(2, 3), np.array([4.0, -1.0])]
    results = []
    for lib in (tg, torch):
        params = [lib.tensor(a, requires_grad=True) for a in arrays]
        sum((p * p * 3).sum() for p in params).backward()
        total = lib.nn.utils.clip_grad_norm_(params, max_norm=2.0, norm_type=norm_type)
        results.append((float(total), [p.grad.numpy().copy() for p in params]))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    for mine, theirs in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def test_clip_grad_value_and_nonfinite_norm():
    w = tg.tensor([1.0, -3.0, 0.5], requires_grad=True)
    (w * tg.tensor([5.0, 5.0, -0.1])).sum().backward()
    tg.nn.utils.clip_grad_value_([w], 1.0)
    assert w.grad.tolist() == pytest.approx([1.0, 1.0, -0.1])
    w.grad = tg.tensor([float("inf"), 0.0, 0.0])
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        tg.nn.utils.clip_grad_norm_([w], 1.0, error_if_nonfinite=True)


def test_parameters_to_vector_and_back():
    model = tg.nn.Sequential(tg.nn.Linear(2, 3), tg.nn.Linear(3, 1))
    vector = tg.nn.utils.parameters_to_vector(model.parameters())
    assert vector.shape == (13,) and vector.grad_fn is not None
    tg.nn.utils.vector_to_parameters(tg.arange(13.0), model.parameters())
    assert model[0].weight.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert model[1].bias.tolist() == [12.0]


@pytest.mark.torch
def test_pad_sequence_matches_torch():
    torch = pytest.importorskip("torch")
    arrays = [np.arange(6.0).reshape(3, 2), np.arange(2.0).reshape(1, 2) + 10]
    for options in ({}, {"batch_first": True, "padding_value": -1.0},
                    {"padding_side": "left", "batch_first": True}):
        ours = tg.nn.utils.rnn.pad_sequence([tg.tensor(a) for a in arrays], **options)
        theirs = torch.nn.utils.rnn.pad_sequence([torch.tensor(a) for a in arrays], **options)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(NotImplementedError, match="packed sequences"):
        tg.nn.utils.rnn.pack_padded_sequence(tg.zeros(3, 2, 1), [3, 2])
