"""Operators + - * / ** @ and their method forms.

A mixin of Tensor (``class Tensor(..., ArithmeticMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..ops import arith, linalg, unary


class ArithmeticMethods:
    __slots__ = ()

    def __add__(self, other):
        return arith.Add.apply(self, other)

    def __radd__(self, other):
        return arith.Add.apply(other, self)

    def __sub__(self, other):
        return arith.Sub.apply(self, other)

    def __rsub__(self, other):
        return arith.RSub.apply(other, self)

    def __mul__(self, other):
        return arith.Mul.apply(self, other)

    def __rmul__(self, other):
        return arith.Mul.apply(other, self)

    def __truediv__(self, other):
        return arith.Div.apply(self, other)

    def __rtruediv__(self, other):
        return arith.Div.apply(other, self)

    def __neg__(self):
        return arith.Neg.apply(self)

    def __pos__(self):
        return self

    def __pow__(self, exponent):
        if isinstance(exponent, Tensor):
            return arith.Pow.apply(self, exponent)
        return arith.PowScalar.apply(self, exponent)

    def __rpow__(self, base):
        return arith.RPow.apply(base, self)

    def __matmul__(self, other):
        return linalg.matmul(self, other)

    def __rmatmul__(self, other):
        return linalg.matmul(other, self)

    def __abs__(self):
        return unary.Abs.apply(self)

    def add(self, other, alpha=1):
        return arith.Add.apply(self, other if alpha == 1 else other * alpha)

    def sub(self, other, alpha=1):
        return arith.Sub.apply(self, other if alpha == 1 else other * alpha)

    def mul(self, other):
        return arith.Mul.apply(self, other)

    def div(self, other):
        return arith.Div.apply(self, other)

    def neg(self):
        return arith.Neg.apply(self)

    def pow(self, exponent):
        return self.__pow__(exponent)

    def square(self):
        return arith.PowScalar.apply(self, 2)

    def reciprocal(self):
        return arith.Div.apply(1.0, self)


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, arith, linalg, unary
    from ..ops import arith, linalg, unary
    from ..tensor import Tensor
