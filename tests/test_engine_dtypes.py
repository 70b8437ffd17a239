"""PyTorch's type promotion, conversions and the small tensor surface tutorials use."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg


def test_type_promotion_between_ints_floats_and_scalars():
    ints = tg.tensor([1, 2, 3])
    assert ints.dtype == tg.int64
    assert (ints + 1.5).dtype == tg.float32
    assert (ints * 2).dtype == tg.int64
    assert (ints / 2).dtype == tg.float32
    assert (ints + tg.ones(3)).dtype == tg.float32
    assert (tg.ones(3) + tg.ones(3, dtype=tg.float64)).dtype == tg.float64
    assert (tg.ones(3) * 2.5).dtype == tg.float32  # a Python float stays "weak"
    assert (tg.ones(3, dtype=tg.float64) + tg.tensor(1.0)).dtype == tg.float64
    # a float 0-dim tensor outranks an int tensor and keeps its dtype (torch 2.13: float64)
    assert (ints + tg.tensor(1.0, dtype=tg.float64)).dtype == tg.float64
    assert tg.tensor([True]).dtype == tg.bool
    assert tg.tensor([1.0]).dtype == tg.float32


def test_comparisons_give_bool_masks_and_mask_assignment():
    x = tg.tensor([-1.0, 2.0, -3.0, 4.0])
    mask = x < 0
    assert mask.dtype == tg.bool and mask.tolist() == [True, False, True, False]
    assert (x == 2).tolist() == [False, True, False, False]
    x[mask] = 0
    assert x.tolist() == [0.0, 2.0, 0.0, 4.0]
    assert x._version == 1
    y = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = y * 1
    z[z > 1.5] = 0
    z.sum().backward()
    assert y.grad.tolist() == [1.0, 0.0, 0.0]


def test_max_with_dim_returns_values_and_int64_indices():
    x = tg.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], requires_grad=True)
    values, indices = tg.max(x, 1, keepdim=True)
    assert values.shape == (2, 1) and indices.dtype == tg.int64
    assert indices.tolist() == [[1], [0]]
    result = x.max(dim=0)
    assert result.values.tolist() == [7.0, 5.0, 3.0] and result.indices.tolist() == [1, 0, 1]
    values.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    assert tg.max(x).item() == 7.0
    assert tg.max(tg.tensor([1.0, 4.0]), tg.tensor([3.0, 2.0])).tolist() == [3.0, 4.0]


def test_conversions_keep_the_graph():
    x = tg.tensor([1.5, -2.0], requires_grad=True)
    d = x.double()
    assert d.dtype == tg.float64 and d.grad_fn.name() == "ToCopyBackward0"
    (d * 2).sum().backward()
    assert x.grad.dtype == tg.float32 and x.grad.tolist() == [2.0, 2.0]
    assert x.float() is x
    assert x.detach().long().tolist() == [1, -2]
    assert x.long().dtype == tg.int64
    assert x.to(tg.float64).dtype == tg.float64
    assert x.type(tg.double).dtype == tg.float64


def test_size_view_as_squeeze_tolist_item():
    x = tg.zeros(2, 1, 3)
    assert x.size() == (2, 1, 3) and x.size(-1) == 3 and x.size(1) == 1
    assert repr(x.size()) == "tracegrad.Size([2, 1, 3])"
    assert tg.squeeze(x).shape == (2, 3)
    assert tg.squeeze(x, 1).shape == (2, 3)
    assert x.view_as(tg.zeros(6)).shape == (6,)
    assert tg.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert tg.tensor([2.5]).item() == 2.5
    assert isinstance(tg.tensor(3).item(), int)
    assert x.numel() == 6 and x.dim() == 3 and x.ndim == 3


def test_dtype_and_device_keywords_and_aliases():
    assert tg.float is tg.float32 and tg.double is tg.float64 and tg.long is tg.int64
    t = tg.zeros(2, dtype=tg.double, device="cpu")
    assert t.dtype == tg.float64 and t.device == tg.device("cpu")
    assert str(t.device) == "cpu"
    assert tg.cuda.is_available() in (True, False)
    assert tg.randn(2, 2, dtype=tg.float64).dtype == tg.float64
    assert tg.tensor([1, 2], dtype=tg.float32).dtype == tg.float32


def test_from_numpy_shares_memory_and_numpy_round_trip():
    array = np.arange(3.0)
    t = tg.from_numpy(array)
    assert t.dtype == tg.float64
    array[0] = 9.0
    assert t.tolist()[0] == 9.0
    assert t.numpy() is array or np.shares_memory(t.numpy(), array)


def test_repr_pads_columns_like_torch():
    assert repr(tg.tensor([-1.5, 2.0, 3.25])) == "tensor([-1.5000,  2.0000,  3.2500])"
    assert repr(tg.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(tg.tensor([1.0, 2.0], requires_grad=True)) == \
        "tensor([1., 2.], requires_grad=True)"
    assert repr(tg.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(tg.tensor(2.5, dtype=tg.float64)) == "tensor(2.5000, dtype=tracegrad.float64)"


def test_manual_seed_makes_randn_repeatable():
    tg.manual_seed(3)
    first = tg.randn(4).tolist()
    tg.manual_seed(3)
    assert tg.randn(4).tolist() == first


@pytest.mark.parametrize("op", ["add", "mul", "sub", "div"])
def test_int_tensor_with_float_scalar(op):
    ints = tg.tensor([2, 4])
    result = getattr(ints, op)(0.5)
    assert result.dtype == tg.float32
