"""In-place ops (``add_``, ``x += y``, ...): each bumps the version counter.

A mixin of Tensor (``class Tensor(..., InplaceMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..ops import arith, indexing, unary


class InplaceMethods:
    __slots__ = ()

    def add_(self, other, alpha=1):
        return self._inplace("add_", arith.Add, other if alpha == 1 else other * alpha)

    def sub_(self, other, alpha=1):
        return self._inplace("sub_", arith.Sub, other if alpha == 1 else other * alpha)

    def mul_(self, other):
        return self._inplace("mul_", arith.Mul, other)

    def div_(self, other):
        return self._inplace("div_", arith.Div, other)

    def pow_(self, exponent):
        if isinstance(exponent, Tensor):
            return self._inplace("pow_", arith.Pow, exponent)
        return self._inplace("pow_", arith.PowScalar, exponent)

    def neg_(self):
        return self._inplace("neg_", arith.Neg)

    def zero_(self):
        return self._inplace("zero_", arith.Zero, 0)

    def fill_(self, value):
        if isinstance(value, Tensor):
            value = value.item()
        return self._inplace("fill_", arith.Fill, value)

    def copy_(self, src, non_blocking=False):
        if not isinstance(src, Tensor):
            from ..factories import tensor

            src = tensor(src)
        return self._inplace("copy_", arith.Copy, src)

    def clamp_(self, min=None, max=None):
        if max is None:
            return self._inplace("clamp_", unary.ClampMin, min)
        if min is None:
            return self._inplace("clamp_", unary.ClampMax, max)
        return self._inplace("clamp_", unary.Clamp, min, max)

    def relu_(self):
        return self._inplace("relu_", unary.Relu)

    def exp_(self):
        return self._inplace("exp_", unary.Exp)

    def sigmoid_(self):
        return self._inplace("sigmoid_", unary.Sigmoid)

    def tanh_(self):
        return self._inplace("tanh_", unary.Tanh)

    def masked_fill_(self, mask, value):
        return self._inplace("masked_fill_", indexing.MaskedFill, mask, value)

    def scatter_(self, dim, index, src=None, value=None, reduce=None):
        source = src if src is not None else value
        return self._inplace("scatter_", indexing.Scatter, dim, index, source, reduce=reduce)

    def scatter_add_(self, dim, index, src):
        return self._inplace("scatter_add_", indexing.ScatterAdd, dim, index, src)

    def normal_(self, mean=0.0, std=1.0, generator=None):
        from ..factories import _random_like

        return _fill_random(self, "normal_", _random_like(self, "normal", mean, std, generator))

    def uniform_(self, a=0.0, b=1.0, generator=None):
        from ..factories import _random_like

        return _fill_random(self, "uniform_", _random_like(self, "uniform", a, b, generator))

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_
    __ipow__ = pow_


def _fill_random(self, op_name, array):
    from ..autograd.grad_mode import state

    if state.grad_enabled and self.requires_grad:
        self._check_inplace_allowed(op_name)
    self._array[...] = array
    self._after_inplace(op_name)
    return self


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, arith, indexing, unary
    from ..ops import arith, indexing, unary
    from ..tensor import Tensor
