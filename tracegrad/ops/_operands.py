"""Turning op arguments into arrays, with PyTorch's type promotion and device checks."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..errors import DeviceError, ShapeError
from ..tensor import Tensor  # ops load after Tensor is defined (tensor.py imports them)

_float32 = np.dtype(np.float32)


def operands(a, b):
    """The arrays of a binary op's two arguments (tensors or Python scalars), promoted.

    NumPy 2 already treats Python scalars as "weak" like PyTorch does (float32 * 2.5 stays
    float32); what differs is int tensor with float scalar (float32 in torch), and int tensor
    with float tensor (the float dtype wins outright in torch).
    """
    if isinstance(a, Tensor):
        x = a._array
        if isinstance(b, Tensor):
            y = b._array
            if x.dtype is not y.dtype:
                x, y = _promote_pair(x, y)
            if type(x) is not type(y):
                raise DeviceError(_device_message(a, b))
            return x, y
        return _with_scalar(x, b), _scalar(b, x)
    y = b._array
    return _scalar(a, y), _with_scalar(y, a)


def _scalar(value, array):
    if isinstance(value, np.generic):
        value = value.item()
    elif not isinstance(value, (int, float, bool)):
        raise TypeError(f"unsupported operand: expected a Tensor or a Python number, got "
                        f"{type(value).__name__}")
    if value.__class__ is int and not 0 <= value <= 127 and array.dtype.kind in "iu":
        # torch wraps a Python int into an integer tensor's dtype (int8 + 1000 adds -24,
        # uint8 - 1 wraps); NumPy 2 raises OverflowError for an out-of-range int instead.
        # 0..127 fits every integer dtype: the common case costs two comparisons.
        return _dtype.wrap_int_scalar(value, array.dtype)
    return value


def _with_scalar(array, scalar):
    if isinstance(scalar, (float, np.floating)) and array.dtype.kind != "f":
        return array.astype(_dtype.default_float.numpy)
    return array


def _promote_pair(x, y):
    result = _dtype.promote(x.dtype, y.dtype, x.ndim == 0, y.ndim == 0)
    if x.dtype != result:
        x = x.astype(result)
    if y.dtype != result:
        y = y.astype(result)
    return x, y


def _device_message(a, b) -> str:
    return (
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{a.device} and {b.device}! ({a._describe()} and {b._describe()}). Hint: move one "
        f"with .to({str(a.device)!r}) or .to({str(b.device)!r}).")


def check_same_device(op_name: str, tensors) -> None:
    first = tensors[0]
    for other in tensors[1:]:
        if type(other._array) is not type(first._array) or other.device != first.device:
            raise DeviceError(f"{op_name}: " + _device_message(first, other))


def true_divide_dtype(x, y):
    """Division of two integer arrays gives the default float, not NumPy's float64."""
    x_kind = x.dtype.kind if hasattr(x, "dtype") else ("f" if isinstance(x, float) else "i")
    y_kind = y.dtype.kind if hasattr(y, "dtype") else ("f" if isinstance(y, float) else "i")
    if x_kind != "f" and y_kind != "f":
        return _dtype.default_float.numpy
    return None


def broadcast_error(op_name: str, a, b) -> ShapeError:
    """PyTorch's message for shapes that do not broadcast, plus which tensors they were."""
    shape_a, shape_b = tuple(getattr(a, "shape", ())), tuple(getattr(b, "shape", ()))
    ndim = max(len(shape_a), len(shape_b))
    padded_a = (1,) * (ndim - len(shape_a)) + shape_a
    padded_b = (1,) * (ndim - len(shape_b)) + shape_b
    dim, size_a, size_b = ndim - 1, shape_a, shape_b  # reported as-is if no dim clashes
    for dim in range(ndim - 1, -1, -1):
        size_a, size_b = padded_a[dim], padded_b[dim]
        if size_a != size_b and size_a != 1 and size_b != 1:
            break
    described = " and ".join(t._describe() for t in (a, b) if hasattr(t, "_describe"))
    return ShapeError(
        f"The size of tensor a ({size_a}) must match the size of tensor b ({size_b}) at "
        f"non-singleton dimension {dim} ({op_name}: {described}). Hint: shapes broadcast "
        f"when, aligned from the right, each pair of sizes is equal or one of them is 1; "
        f"use .unsqueeze() or .view() to line them up.")
