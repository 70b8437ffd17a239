"""Elementwise math, activations and matrix products.

A mixin of Tensor (``class Tensor(..., MathMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..ops import linalg, unary


class MathMethods:
    __slots__ = ()

    def exp(self):
        return unary.Exp.apply(self)

    def log(self):
        return unary.Log.apply(self)

    def sqrt(self):
        return unary.Sqrt.apply(self)

    def abs(self):
        return unary.Abs.apply(self)

    def sin(self):
        return unary.Sin.apply(self)

    def cos(self):
        return unary.Cos.apply(self)

    def tanh(self):
        return unary.Tanh.apply(self)

    def sigmoid(self):
        return unary.Sigmoid.apply(self)

    def relu(self):
        return unary.Relu.apply(self)

    def clamp(self, min=None, max=None):
        return unary.clamp(self, min, max)

    def clamp_min(self, min):
        return unary.ClampMin.apply(self, min)

    def clamp_max(self, max):
        return unary.ClampMax.apply(self, max)

    def maximum(self, other):
        return unary.Maximum.apply(self, other)

    def minimum(self, other):
        return unary.Minimum.apply(self, other)

    def softmax(self, dim, dtype=None):
        return unary.softmax(self, dim, dtype)

    def log_softmax(self, dim, dtype=None):
        return unary.log_softmax(self, dim, dtype)

    def sign(self):
        return unary.sign(self)

    def mm(self, other):
        return linalg.Mm.apply(self, other)

    def matmul(self, other):
        return linalg.matmul(self, other)

    def dot(self, other):
        return linalg.Dot.apply(self, other)


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, linalg, unary
    from ..ops import linalg, unary
    from ..tensor import Tensor
