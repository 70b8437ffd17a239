"""Selecting and placing by index, mask or flat position: select, index_select,
index_add/copy/fill/put, masked_select/scatter, take, take_along_dim, scatter_reduce,
nonzero, argwhere.

A mixin of Tensor (``class Tensor(..., SelectionMethods)``): the methods are defined here,
where a reader looks for them. ``select`` is a view (views-inplace owns the view machinery
in ops/indexing.py; this method only calls it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ops import indexing, selection  # noqa: TC004 - bound at runtime by _bind()
    from ..tensor import Tensor  # noqa: TC004 - bound at runtime by _bind()


class SelectionMethods:
    __slots__ = ()

    def select(self, dim, index):
        from ..ops.shape import wrap_dim

        axis = wrap_dim(dim, self._array.ndim)
        size = self._array.shape[axis] if self._array.ndim else 0
        if not -size <= index < size:
            from ..errors import OutOfRangeError

            raise OutOfRangeError(
                f"select(): index {index} out of range for tensor of size "
                f"{list(self.shape)} at dimension {dim} ({self._describe()}). Hint: valid "
                f"indices are {-size} to {size - 1}.")
        return indexing.select_index(self, axis, index)

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

    def index_put(self, indices, values, accumulate=False):
        index = _index_tuple(indices)
        if not isinstance(values, Tensor):
            values = Tensor._wrap(self._xp.asarray(values, dtype=self._array.dtype), False)
        if accumulate:
            return selection.IndexPutAccumulate.apply(self, values, index=index)
        return indexing.IndexPut.apply(self, values, index=index)

    def index_put_(self, indices, values, accumulate=False):
        index = _index_tuple(indices)
        if not isinstance(values, Tensor):
            values = Tensor._wrap(self._xp.asarray(values, dtype=self._array.dtype), False)
        if accumulate:
            return self._inplace("index_put_", selection.IndexPutAccumulate, values,
                                 index=index)
        return self._inplace("index_put_", indexing.IndexPut, values, index=index)

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


def _index_tuple(indices) -> tuple:
    """index_put's indices: a tuple of index tensors (or None), as arrays."""
    if isinstance(indices, Tensor):
        indices = (indices,)
    parts = []
    for part in indices:
        if part is None:
            parts.append(slice(None))
        elif isinstance(part, Tensor):
            parts.append(part._array)
        else:
            parts.append(part)
    return tuple(parts)


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
    if tuple(source_shape) != x.shape:
        source = source.expand(*source_shape)
    if tuple(index_shape) != i.shape:
        index = Tensor._wrap(xp.broadcast_to(i, tuple(index_shape)), False)
    return source, index


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, indexing, selection
    from ..ops import indexing, selection
    from ..tensor import Tensor
