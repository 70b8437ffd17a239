"""Indexing, gather/scatter and masking.

A mixin of Tensor (``class Tensor(..., IndexingMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ops import indexing
    from ..tensor import Tensor


class IndexingMethods:
    __slots__ = ()

    def __getitem__(self, index):
        return indexing.getitem(self, index)

    def select(self, dim, index):
        """The view at ``index`` along ``dim`` (that dim removed): ``x.select(0, i)`` is
        ``x[i]``."""
        return indexing.select(self, dim, index)

    def index_put(self, indices, values, accumulate=False):
        # one IndexPutBackward0 on self, as torch records it (not a clone, then index_put_)
        op, values, index = indexing.index_put_arguments(self, indices, values, accumulate)
        return op.apply(self, values, index=index)

    def gather(self, dim, index):
        return indexing.Gather.apply(self, dim, index)

    def scatter(self, dim, index, src=None, value=None, reduce=None):
        source = src if src is not None else value
        op = indexing.Scatter if isinstance(source, Tensor) else indexing.ScatterValue
        return op.apply(self, dim, index, source, reduce=reduce)

    def scatter_add(self, dim, index, src):
        return indexing.ScatterAdd.apply(self, dim, index, src)

    def masked_fill(self, mask, value):
        op = indexing.MaskedFillTensor if isinstance(value, Tensor) else indexing.MaskedFill
        return op.apply(self, mask, value)

    def where(self, condition, other):
        return indexing.Where.apply(condition, self, other)


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, indexing
    from ..ops import indexing
    from ..tensor import Tensor
