"""Dtypes, named as in torch, and PyTorch's type promotion rules."""

from __future__ import annotations

import numpy as np


class dtype:
    """A tensor element type: ``tracegrad.float32`` and friends."""

    __slots__ = ("is_floating_point", "itemsize", "name", "numpy")

    def __init__(self, name: str, numpy_dtype) -> None:
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.is_floating_point = self.numpy.kind == "f"
        self.itemsize = self.numpy.itemsize

    def __repr__(self) -> str:
        return f"tracegrad.{self.name}"

    def __reduce__(self):
        return (from_numpy_dtype, (self.numpy.str,))


float16 = dtype("float16", np.float16)
float32 = dtype("float32", np.float32)
float64 = dtype("float64", np.float64)
int32 = dtype("int32", np.int32)
int64 = dtype("int64", np.int64)
uint8 = dtype("uint8", np.uint8)
bool_ = dtype("bool", np.bool_)

ALL = (float16, float32, float64, int32, int64, uint8, bool_)
_BY_NUMPY = {d.numpy: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64,
                 "int": int32})

default_float = float32


def from_numpy_dtype(numpy_dtype) -> dtype:
    try:
        return _BY_NUMPY[np.dtype(numpy_dtype)]
    except KeyError:
        raise TypeError(f"tracegrad has no dtype for numpy {np.dtype(numpy_dtype)}") from None


def to_numpy_dtype(value) -> np.dtype:
    """Accept a tracegrad dtype, a numpy dtype, a Python type or a name."""
    if isinstance(value, dtype):
        return value.numpy
    if value is float:
        return default_float.numpy
    if value is int:
        return int64.numpy
    if value is bool:
        return bool_.numpy
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value].numpy
    return from_numpy_dtype(value).numpy


def array_dtype_for(value) -> np.dtype | None:
    """The dtype torch.tensor() infers for Python data: float32 for floats, int64 for ints."""
    if isinstance(value, bool):
        return bool_.numpy
    if isinstance(value, int):
        return int64.numpy
    if isinstance(value, float):
        return default_float.numpy
    return None


def is_float(numpy_dtype: np.dtype) -> bool:
    return numpy_dtype.kind == "f"


def promote(a: np.dtype, b: np.dtype, a_is_scalar: bool = False,
            b_is_scalar: bool = False) -> np.dtype:
    """PyTorch's result type for two tensors (0-dim tensors count as scalars).

    Categories rank bool < int < float. A higher category wins outright (int64 + float32 is
    float32, not NumPy's float64); within a category a non-scalar beats a scalar; otherwise
    the wider type wins.
    """
    if a is b:
        return a
    rank_a, rank_b = _category(a), _category(b)
    if rank_a != rank_b:
        winner = a if rank_a > rank_b else b
        # A higher category wins outright, 0-dim or not: float64 0-dim + int64 [2] is
        # float64 in torch (only Python scalars fall back to the default float).
        return winner
    if a_is_scalar != b_is_scalar:
        return b if a_is_scalar else a
    return np.promote_types(a, b)


def _category(numpy_dtype: np.dtype) -> int:
    kind = numpy_dtype.kind
    if kind == "b":
        return 0
    if kind in "iu":
        return 1
    return 2
