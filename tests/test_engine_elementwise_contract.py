"""What ``Op.elementwise`` promises, checked for every op that sets it: on two inputs of
one shape and one floating-point dtype, the output has that shape and that dtype. The
engine's fast path (function._finish) takes both from the inputs without asking the
output array, so an op that broke the promise would get a wrong grad_fn silently."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as torch
from tracegrad.autograd.function import Op, apply_binary


def _all_ops(cls=Op):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_ops(sub)


ELEMENTWISE = sorted({cls for cls in _all_ops() if cls.__dict__.get("elementwise")},
                     key=lambda cls: cls.__name__)


def test_the_arithmetic_ops_are_among_them():
    assert {cls.__name__ for cls in ELEMENTWISE} >= {"Add", "Sub", "Mul", "Div"}


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda cls: cls.__name__)
def test_output_keeps_the_float_dtype_and_shape(op, dtype):
    rng = np.random.default_rng(0)
    a = torch.tensor(rng.uniform(0.5, 2.0, (3, 2)).astype(dtype), requires_grad=True)
    b = torch.tensor(rng.uniform(0.5, 2.0, (3, 2)).astype(dtype))
    recorded = apply_binary(op, a, b)
    with torch.no_grad():
        untracked = apply_binary(op, a, b)  # the array as the op's forward gives it
    assert untracked._array.dtype == np.dtype(dtype)
    assert untracked._array.shape == (3, 2)
    assert recorded.grad_fn._output_meta[0][:2] == ((3, 2), np.dtype(dtype))
    np.testing.assert_array_equal(recorded._array, untracked._array)


def test_pairs_of_changing_shapes_and_dtypes_get_their_own_metadata():
    """Each product's node describes its own inputs, whatever pair came just before (the
    engine remembers the last pair's shape and dtype: function._last_alike)."""
    cases = [((3,), np.float32), ((3,), np.float64), ((3, 1), np.float32),
             ((1, 3), np.float32), ((), np.float32), ((3,), np.float32), ((3,), np.float32)]
    for shape, dtype in cases:
        a = torch.tensor(np.full(shape, 2.0, dtype=dtype), requires_grad=True)
        b = torch.tensor(np.full(shape, 3.0, dtype=dtype))
        product = a * b
        meta = (shape, np.dtype(dtype))
        assert product.grad_fn._input_meta == (meta, meta)
        assert product.grad_fn._output_meta[0][:2] == meta
        product.sum().backward()
        assert a.grad._array.shape == shape and a.grad._array.dtype == np.dtype(dtype)
