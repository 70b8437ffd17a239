"""dtype and device conversions (``.to``), differentiable like torch's ToCopyBackward0."""

from __future__ import annotations

from .. import backends
from .._layout import preserved
from ..autograd.function import Op
from ..autograd.quiet import silenced
from . import _math


class ToDtype(Op):
    node_name = "ToCopyBackward0"
    array_backward = True

    @staticmethod
    def inference_overload(a, dtype, contiguous=False):  # (autograd/inference.py)
        from .arith import copy_into_new

        return copy_into_new(a, dtype)

    @staticmethod
    @silenced
    def forward(ctx, a, dtype, contiguous=False):
        """A copy as ``dtype``: in the input's layout, as torch's _to_copy keeps it, or
        row-major for ``.to(memory_format=torch.contiguous_format)``."""
        ctx.input_dtype = a._array.dtype
        if contiguous:
            return a._array.astype(dtype, order="C")
        return preserved(a._array.astype(dtype), a._array)

    @staticmethod
    def backward(ctx, grad):
        if ctx.input_dtype.kind != "f":
            return (None,)
        return (_math.reapply(ToDtype, grad, dtype=ctx.input_dtype),)


class ToDevice(Op):
    node_name = "ToCopyBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, device):
        ctx.input_device = a.device
        return backends.to_device(a._array, device)

    @staticmethod
    def backward(ctx, grad):
        return (_math.apply(ToDevice, grad, device=ctx.input_device),)
