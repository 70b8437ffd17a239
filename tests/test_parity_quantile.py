"""quantile and nanquantile against torch 2.13: the graph (names and saved dims, breadth
first: torch's sort, view, gathers, lerp and its in-place squeeze_ or unsqueeze_,
transpose_, squeeze_), values and gradients over shapes, dims, q, every interpolation,
NaN rows, both float dtypes; and torch's errors, in torch's order."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_ops_gradients import graph_nodes

import tracegrad as tg

torch = pytest.importorskip("torch")

SETTINGS = [(shape, dim, keepdim) for shape, dim, keepdim in itertools.product(
    [(3, 5), (4,), (2, 3, 4), ()], [None, 0, -1, 1], [False, True])
    if not (dim is not None and len(shape) <= dim) and not (shape == () and dim == 1)]


def _signature(output) -> list:
    return [(node.name(), getattr(node, "_saved_dim", None)) for node in graph_nodes([output])]


def _run(lib, name, array, dtype, q, dim, keepdim, interpolation):
    x = lib.tensor(array, dtype=getattr(lib, dtype), requires_grad=True)
    if not isinstance(q, float):
        q = lib.tensor(q, dtype=getattr(lib, dtype))
    output = getattr(lib, name)(x, q, dim=dim, keepdim=keepdim, interpolation=interpolation)
    weight = np.random.default_rng(2).standard_normal(tuple(output.shape))
    (output * lib.tensor(weight, dtype=getattr(lib, dtype))).sum().backward()
    return _signature(output), output.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("shape,dim,keepdim", SETTINGS)
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_is_torchs_graph_values_and_gradients(name, shape, dim, keepdim):
    array = np.random.default_rng(1).standard_normal(shape)
    with_nan = array.copy()
    if with_nan.size > 1:
        with_nan.flat[1] = np.nan
    # every q with linear interpolation in both dtypes; the other ways with one q tensor
    combinations = [(dtype, q, "linear") for dtype in ("float64", "float32")
                    for q in (0.3, [0.2, 0.9], [0.5])]
    combinations += [("float64", [0.2, 0.9], way) for way in ("lower", "higher", "midpoint",
                                                              "nearest")]
    for values, (dtype, q, interpolation) in itertools.product((array, with_nan),
                                                                 combinations):
        ours = _run(tg, name, values, dtype, q, dim, keepdim, interpolation)
        theirs = _run(torch, name, values, dtype, q, dim, keepdim, interpolation)
        assert ours[0] == theirs[0], (dtype, q, interpolation)
        tolerance = 1e-12 if dtype == "float64" else 1e-6
        for mine, reference in zip(ours[1:], theirs[1:]):
            assert mine.shape == reference.shape
            np.testing.assert_allclose(mine, reference, rtol=tolerance, atol=tolerance)


def _errors(lib):
    return [lambda: lib.quantile(lib.ones(3), 1.5),
            lambda: lib.quantile(lib.ones(3), lib.ones(2, 2)),
            lambda: lib.quantile(lib.ones(3), lib.ones(2, dtype=lib.float64)),
            lambda: lib.quantile(lib.ones(3, dtype=lib.int64), 0.5),
            lambda: lib.quantile(lib.ones(0), 0.5),
            lambda: lib.quantile(lib.ones(3), 0.5, interpolation="x"),
            lambda: lib.quantile(lib.ones(3), -0.5),
            lambda: lib.quantile(lib.ones(3), lib.tensor([0.5, 1.5])),
            lambda: lib.nanquantile(lib.ones(3), 1.5),
            lambda: lib.quantile(lib.ones(3), 0.5, dim=2, interpolation="x"),
            lambda: lib.quantile(lib.ones(3), 1.0000001),
            lambda: lib.quantile(lib.ones(3, dtype=lib.int64), 2)]


@pytest.mark.parametrize("index", range(len(_errors(tg))))
def test_quantile_refuses_as_torch_does(index):
    with pytest.raises(RuntimeError) as theirs:
        _errors(torch)[index]()
    with pytest.raises(RuntimeError) as ours:
        _errors(tg)[index]()
    assert str(ours.value) == str(theirs.value)
