"""dtype and device conversions (``.to``), differentiable like torch's ToCopyBackward0."""

from __future__ import annotations

from .. import backends
from ..autograd.function import Op
from ..autograd.quiet import silenced
from . import _math


class ToDtype(Op):
    node_name = "ToCopyBackward0"
    array_backward = True

    @staticmethod
    def inference_overload(a, dtype):  # (autograd/inference.py)
        from .arith import copy_into_new

        return copy_into_new(a, dtype)

    @staticmethod
    @silenced
    def forward(ctx, a, dtype):
        ctx.input_dtype = a._array.dtype
        return a._array.astype(dtype)

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
