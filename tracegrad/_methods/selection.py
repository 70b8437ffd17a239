"""Selecting and placing by index, mask or flat position: index_select, index_add/copy/
fill, masked_select/scatter, take, take_along_dim, scatter_reduce, nonzero, argwhere.

A mixin of Tensor (``class Tensor(..., SelectionMethods)``): the methods are defined here,
where a reader looks for them. (``select`` and ``index_put`` are views-inplace's, in
indexing.py and inplace.py; ``index_put(accumulate=True)`` runs ops/selection.py's op.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ops import indexing, selection  # noqa: TC004 - bound at runtime by _bind()
    from ..tensor import Tensor  # noqa: TC004 - bound at runtime by _bind()


class SelectionMethods:
    __slots__ = ()

    def index_select(self, dim, index):
        return selection.IndexSelect.apply(self, dim, index)

    def index_add(self, dim, index, source, *, alpha=1):
        return selection.IndexAdd.apply(self, dim, index, source, alpha)

    def index_add_(self, dim, index, source, *, alpha=1):
        return self._inplace("index_add_", selection.IndexAdd, dim, index, source, alpha)

    def index_copy(self, dim, index, source):
        return selection.IndexCopy.apply(self, dim, index, source)

    def index_copy_(self, dim, index, source):
        return self._inplace("index_copy_", selection.IndexCopy, dim, index, source)

    def index_fill(self, dim, index, value):
        op = selection.IndexFillTensor if isinstance(value, Tensor) else selection.IndexFill
        return op.apply(self, dim, index, value)

    def index_fill_(self, dim, index, value):
        op = selection.IndexFillTensor if isinstance(value, Tensor) else selection.IndexFill
        return self._inplace("index_fill_", op, dim, index, value)

    def masked_select(self, mask):
        return selection.MaskedSelect.apply(self, mask)

    def masked_scatter(self, mask, source):
        return selection.MaskedScatter.apply(self, mask, source)

    def masked_scatter_(self, mask, source):
        return self._inplace("masked_scatter_", selection.MaskedScatter, mask, source)

    def take(self, index):
        return selection.Take.apply(self, index)

    def take_along_dim(self, indices, dim=None):
        if dim is None:
            return indexing.Gather.apply(self.reshape(-1), 0, indices.reshape(-1))
        from ..ops.shape import wrap_dim

        axis = wrap_dim(dim, self._array.ndim)
        source, index = _broadcast_except(self, indices, axis)
        return indexing.Gather.apply(source, axis, index)

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        return selection.ScatterReduce.apply(self, dim, index, src, reduce, include_self)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        return self._inplace("scatter_reduce_", selection.ScatterReduce, dim, index, src,
                             reduce, include_self)

    def nonzero(self, *, as_tuple=False):
        return selection.nonzero(self, as_tuple=as_tuple)

    def argwhere(self):
        return selection.nonzero(self)


def _broadcast_except(source, index, axis: int):
    """take_along_dim broadcasts input and indices in every dim but ``axis``."""
    xp = source._xp
    x, i = source._array, index._array
    if x.ndim != i.ndim:
        from ..errors import ShapeError

        raise ShapeError(
            f"torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {x.ndim} dimensions for input, and {i.ndim} dimensions "
            f"for indices ({source._describe()} and {index._describe()})")
    x_shape, i_shape = list(x.shape), list(i.shape)
    x_shape[axis] = i_shape[axis] = 1
    try:
        common = list(xp.broadcast_shapes(tuple(x_shape), tuple(i_shape)))
    except ValueError:
        from ..ops._operands import broadcast_error

        raise broadcast_error("take_along_dim", source, index) from None
    source_shape, index_shape = list(common), list(common)
    source_shape[axis], index_shape[axis] = x.shape[axis], i.shape[axis]
    source = source.expand(*source_shape)  # (always: torch's ExpandBackward0, same size or not)
    if tuple(index_shape) != i.shape:
        index = Tensor._wrap(xp.broadcast_to(i, tuple(index_shape)), False)
    return source, index


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, indexing, selection
    from ..ops import indexing, selection
    from ..tensor import Tensor
