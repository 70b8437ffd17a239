"""tracegrad.testing.assert_close / make_tensor against torch.testing's."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.testing import assert_close, make_tensor


def _cases(lib):
    t = lib.tensor
    return {
        "close": (t([1.0, 2.0]), t([1.0, 2.0 + 1e-7]), {}),
        "not_close": (t([1.0, 2.0, 3.0]), t([1.0, 2.1, 3.0]), {}),
        "float64_tolerance": (t([1.0], dtype=lib.float64), t([1.0 + 1e-6],
                                                             dtype=lib.float64), {}),
        "dtype": (t([1.0, 2.0]), t([1.0, 2.0], dtype=lib.float64), {}),
        "dtype_unchecked": (t([1.0, 2.0]), t([1.0, 2.0], dtype=lib.float64),
                            {"check_dtype": False}),
        "shape": (t([1.0, 2.0]), t([1.0, 2.0, 3.0]), {}),
        "ints": (t([1, 2]), t([1, 3]), {}),
        "matrix": (t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0, 2.0], [3.0, 5.0]]), {}),
        "nan": (t([1.0, float("nan")]), t([1.0, float("nan")]), {}),
        "nan_equal": (t([1.0, float("nan")]), t([1.0, float("nan")]), {"equal_nan": True}),
        "inf": (t([float("inf")]), t([float("inf")]), {}),
        "scalars": (1.0, 1.1, {}),
        "scalar_ints": (3, 4, {}),
        "mixed_types": (t([1.0]), 1.0, {}),
        "sequence": ([t([1.0])], [t([2.0])], {}),
        "mapping": ({"a": t([1.0])}, {"a": t([2.0])}, {}),
        "custom_message": (t([1.0, 2.0]), t([1.0, 2.5]), {"msg": "custom"}),
        "explicit_tolerance": (t([1.0, 2.0]), t([1.0, 2.5]), {"rtol": 0.5, "atol": 0.0}),
        "half_tolerance": (t([1.0, 2.0]), t([1.0, 2.0]), {"rtol": 0.1}),
        "requires_grad_ignored": (t([1.0]), t([1.0], requires_grad=True), {}),
    }


def _outcome(lib, assert_close_function, name):
    actual, expected, options = _cases(lib)[name]
    try:
        assert_close_function(actual, expected, **options)
    except Exception as error:  # noqa: BLE001 - the class and message are what we compare
        text = str(error).replace("torch.", "tracegrad.").replace("tracegrad.tensor.Tensor",
                                                                   "tracegrad.Tensor")
        return type(error).__name__, text
    return "ok", ""


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(_cases(tg)))
def test_assert_close_agrees_with_torch(name):
    torch = pytest.importorskip("torch")
    mine = _outcome(tg, assert_close, name)
    theirs = _outcome(torch, torch.testing.assert_close, name)
    assert mine == theirs


def test_callable_msg_receives_the_message():
    with pytest.raises(AssertionError, match="^wrapped: Tensor-likes are not close!"):
        assert_close(tg.tensor([1.0]), tg.tensor([2.0]), msg=lambda text: f"wrapped: {text}")


def test_make_tensor_ranges_dtypes_and_flags():
    floats = make_tensor(50, dtype=tg.float32, device="cpu")
    assert floats.dtype == tg.float32 and floats.shape == (50,)
    assert float(floats.min()) >= -9 and float(floats.max()) < 9
    ints = make_tensor((4, 5), dtype=tg.int64, device="cpu", low=0, high=3)
    assert set(ints.reshape(-1).tolist()) <= {0, 1, 2}
    assert make_tensor(3, dtype=tg.bool, device="cpu").dtype == tg.bool
    no_zero = make_tensor(100, dtype=tg.int64, device="cpu", low=-1, high=2, exclude_zero=True)
    assert not (no_zero == 0).any()
    strided = make_tensor(2, 3, dtype=tg.float64, device="cpu", noncontiguous=True,
                          requires_grad=True)
    assert not strided.is_contiguous() and strided.requires_grad
    assert np.isfinite(strided.detach().numpy()).all()
