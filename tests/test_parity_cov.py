"""``cov`` and ``corrcoef`` against torch 2.13: values, dtype, the graph (torch's cov is a
weighted sum over the count, unsqueezed, then ``mm`` and a division by a 0-d tensor), the
warning when the degrees of freedom are <= 0, every weight check's message, and torch's
quirk of zeroing the input in place for one observation with one kind of weights."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from test_ops_gradients import graph_names

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

X = [[1.0, 2.0, 4.0], [0.0, 1.0, 1.0]]

CASES = {
    "plain": lambda L, x: L.cov(x),
    "corrcoef": lambda L, x: x.corrcoef(),
    "biased": lambda L, x: L.cov(x, correction=0),
    "fweights": lambda L, x: L.cov(x, fweights=L.tensor([1, 2, 1])),
    "aweights": lambda L, x: L.cov(x, aweights=L.tensor([0.5, 1.0, 2.0]), correction=0),
    "both": lambda L, x: L.cov(x, fweights=L.tensor([1, 2, 1]),
                               aweights=L.tensor([0.5, 1.0, 2.0])),
    "one_variable": lambda L, x: L.cov(x[0], fweights=L.tensor([1, 2, 1])),
    "integers": lambda L, x: L.cov(L.tensor([[1, 2, 4]])),
    "no_freedom": lambda L, x: L.cov(x, correction=3),
    "negative_freedom": lambda L, x: L.cov(L.tensor([[1, 2, 4]]), correction=5),
    "scalar": lambda L, x: L.cov(L.tensor(3.0)),
    "one_observation_aweights": lambda L, x: L.cov(L.tensor([[1.0], [3.0]]),
                                                   aweights=L.tensor([2.0])),
    "one_observation_integers": lambda L, x: L.cov(L.tensor([[1], [3]]), fweights=L.tensor([2])),
    "fweights_float": lambda L, x: L.cov(x, fweights=L.tensor([1.0, 2, 1])),
    "aweights_integral": lambda L, x: L.cov(x, aweights=L.tensor([1, 2, 1])),
    "aweights_negative": lambda L, x: L.cov(x, aweights=L.tensor([1.0, -2, 1])),
    "weights_sum_zero": lambda L, x: L.cov(x, fweights=L.tensor([0, 0, 0])),
    "weights_2d": lambda L, x: L.cov(x, fweights=L.tensor([[1, 0, 0]])),
    "weights_numel": lambda L, x: L.cov(x, fweights=L.tensor([1, 0])),
    "bool": lambda L, x: L.cov(L.tensor([True, False])),
    "three_dims": lambda L, x: L.cov(L.ones(2, 2, 2)),
}


def _outcome(lib, case):
    x = lib.tensor(X, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = CASES[case](lib, x)
        except RuntimeError as error:  # (tracegrad's message adds the tensor, a hint)
            return "RuntimeError", re.sub(r" \(float32 .*\)$", "", str(error).split(". Tensor: ")[0])
    shown = (_rounded(result.tolist()),
             str(result.dtype).split(".")[-1],
             graph_names([result]) if result.grad_fn is not None else [],
             [str(w.message).split(" (Triggered internally")[0] for w in caught],
             [w.filename for w in caught])
    if result.requires_grad:
        (grad,) = lib.autograd.grad(result.sum(), x)
        shown += (_rounded(grad.tolist()),)
    return shown


def _rounded(values) -> str:
    """Values to compare: rounded, -0.0 as 0.0, as text (where nan equals nan)."""
    return str((np.round(np.array(values, dtype=float), 5) + 0.0).tolist())


@pytest.mark.parametrize("case", list(CASES))
def test_cov_matches_torch(case):
    assert _outcome(tg, case) == _outcome(torch, case)


def test_cov_zeroes_one_observation_in_place_as_torch():
    for lib in (tg, torch):
        x = lib.tensor([[1.0], [2.0]])
        covariance = lib.cov(x, fweights=lib.tensor([2]))
        assert x.tolist() == [[0.0], [0.0]] and covariance.tolist() == [[0.0, 0.0], [0.0, 0.0]]
        leaf = lib.tensor([[1.0], [2.0]], requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            lib.cov(leaf, fweights=lib.tensor([2]))
