"""PyTorch-style repr of tensors: ``tensor([1., 2.], requires_grad=True)``."""

from __future__ import annotations

import numpy as np

from . import _dtype, backends


def _float_formatter(array: np.ndarray):
    """One formatter for every element, right-aligned to the widest (torch pads columns)."""
    single = _single_float_formatter(array)
    shown = array if array.size <= 1000 else np.concatenate(
        [array.reshape(-1)[:500], array.reshape(-1)[-500:]])
    width = max((len(single(value)) for value in shown.reshape(-1).tolist()), default=0)
    return lambda value: single(value).rjust(width)


def _single_float_formatter(array: np.ndarray):
    finite = array[np.isfinite(array)]
    if finite.size == 0:
        return lambda value: _special(value)
    integral = bool(np.all(finite == np.round(finite)))
    largest = float(np.abs(finite).max())
    smallest = float(np.abs(finite[finite != 0]).min()) if np.any(finite != 0) else 0.0
    if largest >= 1e8 or (smallest and largest / smallest > 1000 and not integral) or (
            smallest and smallest < 1e-4):
        return lambda value: _special(value) or f"{value:.4e}"
    if integral:
        return lambda value: _special(value) or f"{value:.0f}."
    return lambda value: _special(value) or f"{value:.4f}"


def _special(value) -> str:
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return ""


def format_tensor(tensor) -> str:
    array = backends.to_host(tensor._array)
    options = {"separator": ", ", "threshold": 1000, "edgeitems": 3,
               "prefix": "tensor(", "max_line_width": 80}
    if array.dtype.kind == "f":
        options["formatter"] = {"float_kind": _float_formatter(array)}
    if array.ndim == 0:
        body = options["formatter"]["float_kind"](array.item()) if array.dtype.kind == "f" \
            else str(array.item())
    else:
        body = np.array2string(array, **options)
    extras = []
    dtype = tensor.dtype
    if dtype not in (_dtype.default_float, _dtype.int64, _dtype.bool_) or (
            array.size == 0 and dtype is not _dtype.default_float):
        extras.append(f"dtype={dtype!r}")
    if tensor.device.type != "cpu":
        extras.append(f"device='{tensor.device}'")
    if tensor.grad_fn is not None:
        # the class name, as torch prints it: CopySlices, not torch::autograd::CopySlices
        extras.append(f"grad_fn=<{tensor.grad_fn.name().rpartition('::')[2]}>")
    elif tensor.requires_grad:
        extras.append("requires_grad=True")
    suffix = "".join(f", {extra}" for extra in extras)
    return f"tensor({body}{suffix})"
