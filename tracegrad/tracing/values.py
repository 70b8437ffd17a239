"""Capturing forward values and gradients as ``Value``: statistics always, whole arrays
while the trace is under its memory budget.

>>> import numpy as np
>>> budget = ValueBudget(limit_bytes=1024)
>>> value = budget.capture(np.array([1.0, float("nan")]), keep_array=True)
>>> value.stats.nan_count, value.array is not None
(1, True)
"""

from __future__ import annotations

import math

import numpy as np

from .. import backends
from .model import DROPPED_BUDGET, DROPPED_PASS, Stats, Value, array_dtype_name

DEFAULT_BUDGET_BYTES = 256 * 1024 * 1024


def host_array(data) -> np.ndarray:
    """The array on the host (a no-op for numpy)."""
    if type(data) is np.ndarray:
        return data
    return backends.to_host(data)


def compute_stats(array: np.ndarray) -> Stats:
    """min, max, mean, norm and NaN/Inf counts of ``array`` (over its finite elements)."""
    if array.size == 0:
        return Stats()
    if array.dtype.kind not in "fc":
        as_float = array.astype(np.float64)
        return _finite_stats(as_float)
    # One sum tells whether every element is finite; counting is needed only when not
    # (or when the sum itself overflowed, which the count then shows is harmless).
    total = float(array.sum(dtype=np.float64))
    if math.isfinite(total):
        return _finite_stats(array, total)
    nan_count = int(np.isnan(array).sum())
    inf_count = int(np.isinf(array).sum())
    if nan_count == 0 and inf_count == 0:
        return _finite_stats(array)
    finite = array[np.isfinite(array)]
    stats = _finite_stats(finite) if finite.size else Stats()
    stats.nan_count, stats.inf_count = nan_count, inf_count
    return stats


def _finite_stats(array: np.ndarray, total: float | None = None) -> Stats:
    if total is None:
        total = float(array.sum(dtype=np.float64))
    flat = array.reshape(-1)
    squares = float(np.dot(flat, flat))
    if not math.isfinite(squares):  # a float32 dot product overflowed; redo it in float64
        wide = flat.astype(np.float64)
        squares = float(np.dot(wide, wide))
    norm = math.sqrt(squares)
    return Stats(min=float(array.min()), max=float(array.max()),
                 mean=total / array.size, norm=norm)


def is_finite(data) -> bool:
    """Whether every element of a (numpy or cupy) array is finite.

    For real floats one dot product of the array with itself answers the common case: the
    squares are never negative, so nothing cancels, and a NaN or Inf anywhere makes the
    result non-finite (an overflow of large finite values only sends us to the exact check).
    """
    kind = data.dtype.kind
    if kind == "f":
        flat = data.reshape(-1)
        with np.errstate(over="ignore"):  # an overflow here is ours, not the program's
            if math.isfinite(flat.dot(flat)):
                return True
    elif kind != "c":
        return True
    xp = backends.array_module(data)
    return bool(xp.isfinite(data).all())


class ValueBudget:
    """Hands out ``Value``s, keeping whole arrays until ``limit_bytes`` is used up.

    ``summarized`` counts the values that had to be kept as statistics only because the
    budget was exhausted (not those a capture policy chose to keep as statistics only).
    Every value without its array says why in ``Value.dropped``.
    """

    def __init__(self, limit_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.limit_bytes = int(limit_bytes)
        self.used_bytes = 0
        self.summarized = 0

    def capture(self, data, keep_array: bool = True) -> Value:
        array = host_array(data)
        dtype_name = array_dtype_name(array.dtype)
        value = Value(shape=tuple(map(int, array.shape)), dtype=dtype_name,
                      stats=compute_stats(array))
        if not keep_array:
            value.dropped = DROPPED_PASS
        elif self.used_bytes + array.nbytes <= self.limit_bytes:
            # A copy: tensors are mutated in place after they are captured.
            value.array = np.array(array, copy=True)
            self.used_bytes += array.nbytes
        else:
            value.dropped = DROPPED_BUDGET
            self.summarized += 1
        return value

    def release(self, value: Value | None, reason: str = DROPPED_PASS) -> None:
        """Drop a value's array (keep its statistics), giving its bytes back; ``reason``
        is recorded in ``value.dropped``."""
        if value is not None and value.array is not None:
            self.used_bytes -= value.array.nbytes
            value.array = None
            value.dropped = reason
