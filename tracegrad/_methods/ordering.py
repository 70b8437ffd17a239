"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, unique.

A mixin of Tensor (``class Tensor(..., OrderingMethods)``): the methods are defined here,
where a reader looks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .reduction import ValuesIndices

if TYPE_CHECKING:
    from ..ops import sorting  # noqa: TC004 - bound at runtime by _bind()
    from ..ops.shape import wrap_dim  # noqa: TC004 - bound at runtime by _bind()
    from ..tensor import Tensor  # noqa: TC004 - bound at runtime by _bind()

class OrderingMethods:
    __slots__ = ()

    def sort(self, dim=-1, descending=False, *, stable=None):
        """(values, indices) along ``dim``; ties keep their order."""
        if stable is not None:
            return ValuesIndices(*sorting.SortStable.apply(self, dim, descending))
        return ValuesIndices(*sorting.Sort.apply(self, dim, descending))

    def argsort(self, dim=-1, descending=False, *, stable=False):
        """The indices that sort ``dim`` (always stable here; torch's unstable default
        gives the same order on the CPU for the sizes learners use)."""
        x = self._array
        if x.ndim == 0:
            return Tensor._wrap(self._xp.zeros((), "int64"), False)
        axis = wrap_dim(dim, x.ndim)
        order = sorting.sort_indices(self._xp, x, axis, descending)
        return Tensor._wrap(order.astype("int64"), False)

    def msort(self):
        return sorting.Sort.apply(self, 0, False)[0]

    def topk(self, k, dim=-1, largest=True, sorted=True):
        return ValuesIndices(*sorting.Topk.apply(self, k, dim, largest, sorted))

    def kthvalue(self, k, dim=-1, keepdim=False):
        return ValuesIndices(*sorting.Kthvalue.apply(self, k, dim, keepdim))

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        return sorting.unique(self, sorted, return_inverse, return_counts, dim)

    def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        return sorting.unique_consecutive(self, return_inverse, return_counts, dim)


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, sorting, wrap_dim
    from ..ops import sorting
    from ..ops.shape import wrap_dim
    from ..tensor import Tensor
