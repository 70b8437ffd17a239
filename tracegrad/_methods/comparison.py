"""Comparisons and logic: they make bool tensors and record no gradient.

A mixin of Tensor (``class Tensor(..., ComparisonMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

import operator as _ops
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tensor import Tensor


def _compare(self, other, compare):
    if other is None:
        return False
    x, y = _operands.operands(self, other)
    return Tensor._wrap(compare(x, y), False)


class ComparisonMethods:
    __slots__ = ()

    def __eq__(self, other):
        return _compare(self, other, _ops.eq)

    def __ne__(self, other):
        return _compare(self, other, _ops.ne)

    def __lt__(self, other):
        return _compare(self, other, _ops.lt)

    def __le__(self, other):
        return _compare(self, other, _ops.le)

    def __gt__(self, other):
        return _compare(self, other, _ops.gt)

    def __ge__(self, other):
        return _compare(self, other, _ops.ge)

    def __and__(self, other):
        return _compare(self, other, _ops.and_)

    def __or__(self, other):
        return _compare(self, other, _ops.or_)

    def __xor__(self, other):
        return _compare(self, other, _ops.xor)

    def __invert__(self):
        return Tensor._wrap(~self._array, False)

    def eq(self, other):
        return self.__eq__(other)

    def ne(self, other):
        return self.__ne__(other)

    def lt(self, other):
        return self.__lt__(other)

    def le(self, other):
        return self.__le__(other)

    def gt(self, other):
        return self.__gt__(other)

    def ge(self, other):
        return self.__ge__(other)

    def isnan(self):
        return Tensor._wrap(self._xp.isnan(self._array), False)

    def isinf(self):
        return Tensor._wrap(self._xp.isinf(self._array), False)

    def isfinite(self):
        return Tensor._wrap(self._xp.isfinite(self._array), False)

    def any(self, dim=None, keepdim=False):
        return Tensor._wrap(self._xp.asarray(self._array.any(axis=dim, keepdims=keepdim)),
                                     False)

    def all(self, dim=None, keepdim=False):
        return Tensor._wrap(self._xp.asarray(self._array.all(axis=dim, keepdims=keepdim)),
                                     False)


def _bind() -> None:
    """Tensor and the op helpers import this package, so they are bound once Tensor exists
    (``tracegrad._methods.bind_ops``)."""
    global Tensor, _operands
    from ..ops import _operands
    from ..tensor import Tensor
