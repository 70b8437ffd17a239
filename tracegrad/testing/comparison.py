"""torch.testing's ``assert_close`` and ``make_tensor``, for tests written against torch.

>>> import tracegrad as torch
>>> from tracegrad.testing import assert_close
>>> assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
>>> assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.1]))
Traceback (most recent call last):
...
AssertionError: Tensor-likes are not close!
<BLANKLINE>
Mismatched elements: 1 / 2 (50.0%)
Greatest absolute difference: 0.09999990463256836 at index (1,) (up to 1e-05 allowed)
Greatest relative difference: 0.04761900380253792 at index (1,) (up to 1.3e-06 allowed)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

# torch's defaults per dtype: (rtol, atol); integers and bools compare exactly
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),
               "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


def _tensor_class():
    from ..tensor import Tensor

    return Tensor


def default_tolerances(numpy_dtype) -> tuple[float, float]:
    return _TOLERANCES.get(np.dtype(numpy_dtype).name, (0.0, 0.0))


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: str | Callable[[str], str] | None = None
                 ) -> None:
    """Assert ``actual`` and ``expected`` are close: ``|actual - expected| <= atol + rtol *
    |expected|`` elementwise, with torch's default tolerances for the dtype, and the same
    shape, dtype and device. Sequences and mappings compare item by item."""
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but "
                         f"got no {missing}.")
    _compare(actual, expected, [], rtol=rtol, atol=atol, equal_nan=equal_nan,
             check_device=check_device, check_dtype=check_dtype, msg=msg)


def _compare(actual, expected, path: list, **options) -> None:
    tensor = _tensor_class()
    if isinstance(actual, tensor) and isinstance(expected, tensor):
        _fail_with_path(_compare_tensors, actual, expected, path, options)
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            raise AssertionError(
                f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                f"{sorted(map(repr, set(expected) - set(actual)))}\nAdditional keys in the "
                f"actual mapping: {sorted(map(repr, set(actual) - set(expected)))}")
        for key in expected:
            _compare(actual[key], expected[key], [*path, repr(key)], **options)
        return
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences mismatch: {len(actual)} != "
                                 f"{len(expected)}" + _where(path))
        for index, (left, right) in enumerate(zip(actual, expected)):
            _compare(left, right, [*path, str(index)], **options)
        return
    if _is_scalar(actual) and _is_scalar(expected) and type(actual) is type(expected):
        _fail_with_path(_compare_scalars, actual, expected, path, options)
        return
    if actual is None and expected is None:
        return
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                    f"{type(expected)}." + _where(path))


def _is_sequence(value) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _is_scalar(value) -> bool:
    return isinstance(value, (bool, int, float, complex, np.generic))


def _where(path: list) -> str:
    if not path:
        return ""
    return "\n\nThe failure occurred for item " + "".join(f"[{part}]" for part in path)


def _fail_with_path(check, actual, expected, path, options) -> None:
    message = check(actual, expected, options)
    if message is None:
        return
    custom = options.get("msg")
    if callable(custom):
        raise AssertionError(custom(message + _where(path)))  # noqa: TRY004 - as torch
    if custom is not None:
        raise AssertionError(custom)
    raise AssertionError(message + _where(path))


def _compare_tensors(actual, expected, options) -> str | None:
    if actual.shape != expected.shape:
        return (f"The values for attribute 'shape' do not match: {actual.shape!r} != "
                f"{expected.shape!r}.")
    if options["check_device"] and actual.device != expected.device:
        return (f"The values for attribute 'device' do not match: {actual.device} != "
                f"{expected.device}.")
    if options["check_dtype"] and actual.dtype != expected.dtype:
        return (f"The values for attribute 'dtype' do not match: {actual.dtype!r} != "
                f"{expected.dtype!r}.")
    from .. import backends

    left = backends.to_host(actual._array)
    right = backends.to_host(expected._array)
    rtol, atol = options["rtol"], options["atol"]
    if rtol is None:
        rtol_actual, atol_actual = default_tolerances(left.dtype)
        rtol_expected, atol_expected = default_tolerances(right.dtype)
        rtol, atol = max(rtol_actual, rtol_expected), max(atol_actual, atol_expected)
    return _values_message(left, right, rtol, atol, options["equal_nan"], "Tensor-likes")


def _values_message(left, right, rtol, atol, equal_nan, label: str) -> str | None:
    if left.dtype != right.dtype:
        common = np.promote_types(left.dtype, right.dtype)
        left, right = left.astype(common), right.astype(common)
    if left.dtype.kind == "b":
        left, right = left.astype(np.int64), right.astype(np.int64)
    # differences in the inputs' float type (float32 for integers), as torch computes them
    work = left.dtype if left.dtype.kind == "f" else np.dtype(np.float32)
    wide_left = left.astype(work)
    wide_right = right.astype(work)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(wide_left - wide_right) <= atol + rtol * np.abs(wide_right)
        close |= wide_left == wide_right  # infinities of the same sign
    if equal_nan:
        close |= np.isnan(wide_left) & np.isnan(wide_right)
    if close.all():
        return None
    exact = rtol == 0 and atol == 0
    mismatched = int((~close).sum())
    total = close.size
    with np.errstate(invalid="ignore", divide="ignore"):
        absolute = np.abs(wide_left - wide_right)
        relative = absolute / np.abs(wide_right)
    if left.dtype.kind in "iu":
        absolute_shown = np.abs(left.astype(np.int64) - right.astype(np.int64))
    else:
        absolute_shown = absolute
    lines = [f"{label} are not {'equal' if exact else 'close'}!", "",
             f"Mismatched elements: {mismatched} / {total} ({100 * mismatched / total:.1f}%)"]
    for name, values, tolerance in (("absolute", absolute_shown, atol),
                                    ("relative", relative, rtol)):
        position = _greatest(values)
        value = values.reshape(-1)[position] if values.size else 0
        value = value.item() if hasattr(value, "item") else value
        index = tuple(int(i) for i in np.unravel_index(position, values.shape)) \
            if values.ndim else ()
        allowed = "" if exact else f" (up to {tolerance} allowed)"
        at = f" at index {index}" if values.ndim else ""
        if left.dtype.kind == "f" or name == "relative":
            value = float(value)
        lines.append(f"Greatest {name} difference: {value}{at}{allowed}")
    return "\n".join(lines)


def _greatest(values) -> int:
    """The flat position of the largest value; a NaN counts as the largest (torch)."""
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    if not flat.size:
        return 0
    nans = np.flatnonzero(np.isnan(flat))
    if nans.size:
        return int(nans[0])
    return int(np.argmax(flat))


def _compare_scalars(actual, expected, options) -> str | None:
    rtol, atol = options["rtol"], options["atol"]
    if rtol is None:
        rtol, atol = (0.0, 0.0) if isinstance(expected, (bool, int)) else (1e-7, 1e-7)
    if actual == expected or (options["equal_nan"] and _both_nan(actual, expected)):
        return None
    difference = abs(actual - expected)
    if difference <= atol + rtol * abs(expected):
        return None
    exact = rtol == 0 and atol == 0
    relative = difference / abs(expected) if expected != 0 else math.inf
    allowed_abs = "" if exact else f" (up to {atol} allowed)"
    allowed_rel = "" if exact else f" (up to {rtol} allowed)"
    return (f"Scalars are not {'equal' if exact else 'close'}!\n\nExpected {expected} but got "
            f"{actual}.\nAbsolute difference: {difference}{allowed_abs}\nRelative difference: "
            f"{relative}{allowed_rel}")


def _both_nan(a, b) -> bool:
    return isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)


def make_tensor(*shape, dtype, device, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False,
                exclude_zero: bool = False, memory_format=None):
    """A tensor of random values for a test: floats in [low, high) (default [-9, 9)),
    integers in [low, high) (default [-9, 10); uint8 from 0), bools either way. The values
    come from tracegrad's generator, not torch's."""
    from .. import _dtype, factories
    from .. import random as _random

    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    numpy_dtype = _dtype.to_numpy_dtype(dtype)
    generator = _random.numpy_generator(None)
    if numpy_dtype.kind == "b":
        values = generator.random(shape) < 0.5
    elif numpy_dtype.kind in "iu":
        floor = 0 if numpy_dtype.kind == "u" else -9
        low_value = floor if low is None else math.ceil(low)
        high_value = 10 if high is None else math.ceil(high)
        if low_value >= high_value:
            raise ValueError(f"make_tensor: low ({low}) must be smaller than high ({high})")
        values = generator.integers(low_value, high_value, shape)
    else:
        low_value = -9.0 if low is None else float(low)
        high_value = 9.0 if high is None else float(high)
        if low_value > high_value:
            raise ValueError(f"make_tensor: low ({low}) must not be larger than high ({high})")
        values = generator.uniform(low_value, high_value, shape)
    values = np.asarray(values).astype(numpy_dtype)
    if exclude_zero:
        replacement = 1 if numpy_dtype.kind in "iub" else np.finfo(numpy_dtype).tiny
        values[values == 0] = replacement
    tensor = factories.tensor(values, dtype=dtype, device=device)
    if noncontiguous and tensor.numel() > 1:
        xp = tensor._xp  # every other element of a doubled buffer: same values, strided
        tensor._array = xp.repeat(tensor._array.reshape(-1), 2)[::2].reshape(
            tensor._array.shape)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


__all__ = ["assert_close", "make_tensor"]
