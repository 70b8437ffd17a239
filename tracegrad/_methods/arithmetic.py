"""Operators + - * / ** @ and their method forms.

A mixin of Tensor (``class Tensor(..., ArithmeticMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..autograd.function import apply_binary  # noqa: TC004 - bound at runtime by _bind()
    from ..ops import arith, binary, bitwise, linalg, pointwise, unary  # noqa: TC004 - bound at runtime by _bind()
    from ..tensor import Tensor  # noqa: TC004 - bound at runtime by _bind()


class ArithmeticMethods:
    __slots__ = ()

    # The four operators go through apply_binary, not Op.apply: the same steps without
    # packing the operands into *args (bench/bench_engine.py (a)).
    def __add__(self, other):
        return apply_binary(arith.Add, self, other)

    def __radd__(self, other):
        # torch computes number + tensor as tensor.add(number): the number's edge second
        return apply_binary(arith.Add, self, other)

    def __sub__(self, other):
        return apply_binary(arith.Sub, self, other)

    def __rsub__(self, other):
        if isinstance(other, Tensor):  # (called by name: t - x is t.__sub__(x))
            return arith.RSubTensor.apply(self, other)  # RsubBackward0, self's edge first
        return arith.RSub.apply(other, self)

    def __mul__(self, other):
        return apply_binary(arith.Mul, self, other)

    def __rmul__(self, other):
        # torch computes number * tensor as tensor.mul(number): the number's edge second
        return apply_binary(arith.Mul, self, other)

    def __truediv__(self, other):
        return apply_binary(arith.Div, self, other)

    def __rtruediv__(self, other):
        # torch computes number / tensor as reciprocal(tensor) * number (MulBackward0)
        return arith.Mul.apply(pointwise.Reciprocal.apply(self), other)

    def __neg__(self):
        return arith.Neg.apply(self)

    def __pos__(self):
        return self.positive()  # the tensor itself, as torch (bool tensors refused)

    def __pow__(self, exponent):
        if isinstance(exponent, Tensor):
            return apply_binary(arith.Pow, self, exponent)
        return apply_binary(arith.PowScalar, self, exponent)

    def __rpow__(self, base):
        return arith.RPow.apply(base, self)

    def __matmul__(self, other):
        return linalg.matmul(self, other)

    def __rmatmul__(self, other):
        return linalg.matmul(other, self)

    def __abs__(self):
        return unary.Abs.apply(self)

    def add(self, other, alpha=1):
        if alpha == 1:
            return apply_binary(arith.Add, self, other)
        return arith.Add.apply(self, other, alpha=alpha)  # one node, as torch records it

    def sub(self, other, alpha=1):
        if alpha == 1:
            return apply_binary(arith.Sub, self, other)
        return arith.Sub.apply(self, other, alpha=alpha)

    def mul(self, other):
        return apply_binary(arith.Mul, self, other)

    def div(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return arith.Div.apply(self, other)
        if rounding_mode not in ("trunc", "floor"):
            from ..errors import InvalidValueError

            raise InvalidValueError(
                f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                f"found '{rounding_mode}' ({self._describe()}). Hint: rounding_mode=None is "
                "true division.")
        return binary.DivRounding.apply(self, other, rounding_mode)

    def neg(self):
        return arith.Neg.apply(self)

    def pow(self, exponent):
        return self.__pow__(exponent)

    def square(self):
        return arith.PowScalar.apply(self, 2)

    def reciprocal(self):
        return pointwise.Reciprocal.apply(self)

    def __floordiv__(self, other):
        return binary.FloorDivide.apply(self, other)

    def __rfloordiv__(self, other):
        return binary.FloorDivide.apply(other, self)

    def __mod__(self, other):
        if isinstance(other, Tensor):
            return binary.Remainder.apply(self, other)
        return binary.RemainderScalar.apply(self, other)

    def __rmod__(self, other):
        return binary.RemainderScalarSelf.apply(other, self)

    def __lshift__(self, other):
        return bitwise.shift(self, other, "left")

    def __rlshift__(self, other):
        return bitwise.shift(other, self, "left")

    def __rshift__(self, other):
        return bitwise.shift(self, other, "right")

    def __rrshift__(self, other):
        return bitwise.shift(other, self, "right")

    def __format__(self, format_spec: str) -> str:
        """A one-element 0-d tensor formats as its Python number (``f"{loss:.4f}"``), as in
        torch; anything else only with an empty spec (its repr)."""
        if self._array.ndim == 0:
            return self.item().__format__(format_spec)
        if format_spec:
            from ..errors import ArgumentTypeError

            raise ArgumentTypeError(
                f"unsupported format string passed to Tensor.__format__ (format spec "
                f"{format_spec!r} for {self._describe()}). Hint: only a "
                "0-d tensor formats as a number; use t.item() or t.squeeze() first.")
        return repr(self)


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, apply_binary, arith, binary, bitwise, linalg, pointwise, unary
    from ..autograd.function import apply_binary
    from ..ops import arith, binary, bitwise, linalg, pointwise, unary
    from ..tensor import Tensor
