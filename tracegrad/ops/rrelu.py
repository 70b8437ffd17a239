"""rrelu: leaky ReLU whose negative slope is drawn per element from U(lower, upper) in
training, and is their mean in evaluation (torch's rrelu_with_noise, RreluWithNoiseBackward0).

The draw is made by the caller (``nn.functional.rrelu``, from tracegrad's generator) and
given to the op as ``noise``: the op itself is deterministic. Beside Tensors the backward is
a node of its own (RreluWithNoiseBackwardBackward0, as torch records it).
"""

from __future__ import annotations

from ..autograd.function import Op
from ..tensor import Tensor
from .activation import MaskBackward, floating_array


def _drawn(lower: float, upper: float, training: bool) -> bool:
    """Whether the backward reads the drawn noise (torch: training and a real interval);
    otherwise it is leaky_relu's with the mean slope."""
    return training and upper - lower > 1e-6


class RreluWithNoise(Op):
    node_name = "RreluWithNoiseBackward0"
    array_backward = True
    saved_names = ("self", "noise", "lower=lower", "upper=upper", "training=training")

    @staticmethod
    def forward(ctx, a, noise, lower, upper, training):
        x = floating_array("leaky_relu_cpu", a)
        if training:
            # noise: the drawn slope where x <= 0, 1 elsewhere (torch's noise tensor)
            out = x * noise
        else:
            # torch's evaluation noise is memory it never writes (nor reads): zeros here,
            # so a trace stays the same on every run
            noise = a._xp.zeros_like(x)
            out = a._xp.where(x > 0, x, x * x.dtype.type((lower + upper) / 2))
        ctx.save_for_backward(a, Tensor._wrap(noise, False))
        ctx.lower, ctx.upper, ctx.training = lower, upper, training
        return out

    @staticmethod
    def backward(ctx, grad):
        a, noise = ctx.saved_tensors
        parameters = (noise, ctx.lower, ctx.upper, ctx.training)
        if grad.__class__ is Tensor:
            return (RreluWithNoiseBackward.apply(grad, a, *parameters),) + (None,) * 4
        return (grad * RreluWithNoiseBackward.factor(a, *parameters),) + (None,) * 4


class RreluWithNoiseBackward(MaskBackward, Op):
    """rrelu's backward as a node (create_graph): ``grad`` times the drawn noise, or
    leaky_relu's mask with the mean slope."""

    node_name = "RreluWithNoiseBackwardBackward0"
    saved_names = ("self",)

    @staticmethod
    def factor(x, noise, lower, upper, training):
        if _drawn(lower, upper, training):
            return noise._array if noise.__class__ is Tensor else noise
        return x.dtype.type(1) * (x > 0) + x.dtype.type((lower + upper) / 2) * (x <= 0)
