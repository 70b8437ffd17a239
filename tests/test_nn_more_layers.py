"""nn layers added for the curriculum's programs (local_response_norm, ...) against torch:
values, gradients (and gradcheck in float64), modules' reprs and torch's errors. The
graphs of the composites are compared node by node in ``test_parity_composites.py``; the
ops they add have cases in ``op_cases_nn.py``."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _array(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _values_and_gradients(call, *arrays):
    """``call(lib, *inputs)`` in tracegrad and torch on float64 leaves made of ``arrays``:
    the output, and each input's gradient of a weighted sum of it, per library."""
    results = []
    for lib in (tg, torch):
        inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = call(lib, *inputs)
        weights = np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape))
        (out * lib.tensor(weights)).sum().backward()
        results.append((out.detach().numpy(), [x.grad.numpy() for x in inputs]))
    return results


def _assert_as_torch(call, *arrays):
    (ours, our_grads), (theirs, their_grads) = _values_and_gradients(call, *arrays)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    for mine, reference in zip(our_grads, their_grads):
        np.testing.assert_allclose(mine, reference, rtol=1e-11, atol=1e-12)


def _assert_same_error(call):
    """torch's exception class and message (ours may add a line after it)."""
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(tg)
    assert str(ours.value).startswith(str(theirs.value))


# -- local_response_norm ------------------------------------------------------------------
@pytest.mark.parametrize("shape,size,options", [
    ((2, 5, 4), 3, {}),
    ((2, 6, 3, 4), 2, {"alpha": 0.5, "beta": 0.6, "k": 2.0}),
    ((1, 4, 2, 3, 2), 5, {"alpha": 0.1}),
    ((1, 3, 2, 2, 2, 2), 1, {}),
])
def test_local_response_norm_as_torch(shape, size, options):
    _assert_as_torch(lambda L, x: L.nn.functional.local_response_norm(x, size, **options),
                     _array(*shape))


def test_local_response_norm_gradcheck():
    x = tg.tensor(_array(2, 5, 3, 2), requires_grad=True)
    def call(x):
        return tg.nn.functional.local_response_norm(x, 3, alpha=0.5, k=1.5)
    assert tg.autograd.gradcheck(call, (x,))
    assert tg.autograd.gradgradcheck(call, (x,))


def test_local_response_norm_of_an_empty_input_is_the_input():
    x = tg.zeros(0, 3, 4)
    assert tg.nn.functional.local_response_norm(x, 2) is x


def test_local_response_norm_errors_and_repr():
    _assert_same_error(lambda L: L.nn.functional.local_response_norm(L.ones(2, 3), 2))
    assert repr(tg.nn.LocalResponseNorm(3, k=2)) == repr(torch.nn.LocalResponseNorm(3, k=2))
