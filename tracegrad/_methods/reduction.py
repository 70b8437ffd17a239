"""Reductions: sum, mean, max/min, argmax/argmin, var/std, norm.

A mixin of Tensor (``class Tensor(..., ReductionMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..ops import reduce, unary


ValuesIndices = namedtuple("return_types", ["values", "indices"])


class ReductionMethods:
    __slots__ = ()

    def sum(self, dim=None, keepdim=False, dtype=None):
        if dim is None:
            return reduce.SumAll.apply(self, dtype=_np_dtype(dtype))
        return reduce.Sum.apply(self, dim=dim, keepdim=keepdim, dtype=_np_dtype(dtype))

    def mean(self, dim=None, keepdim=False):
        if dim is None:
            return reduce.MeanAll.apply(self)
        return reduce.Mean.apply(self, dim=dim, keepdim=keepdim)

    def max(self, dim=None, keepdim=False):
        if isinstance(dim, Tensor):
            return unary.Maximum.apply(self, dim)
        if dim is None:
            return reduce.MaxAll.apply(self)
        return ValuesIndices(*reduce.MaxDim.apply(self, dim, keepdim=keepdim))

    def min(self, dim=None, keepdim=False):
        if isinstance(dim, Tensor):
            return unary.Minimum.apply(self, dim)
        if dim is None:
            return reduce.MinAll.apply(self)
        return ValuesIndices(*reduce.MinDim.apply(self, dim, keepdim=keepdim))

    def argmax(self, dim=None, keepdim=False):
        return reduce.argmax(self, dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        return reduce.argmin(self, dim, keepdim)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=1):
        return reduce.var(self, dim, keepdim, correction, unbiased)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=1):
        return reduce.std(self, dim, keepdim, correction, unbiased)

    def norm(self, p=2, dim=None, keepdim=False):
        if p != 2:
            return (self.abs() ** p).sum(dim=dim, keepdim=keepdim) ** (1.0 / p)
        return (self * self).sum(dim=dim, keepdim=keepdim).sqrt()


def _np_dtype(dtype):
    if dtype is None:
        return None
    from .. import _dtype

    return _dtype.to_numpy_dtype(dtype)


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, reduce, unary
    from ..ops import reduce, unary
    from ..tensor import Tensor
