"""Sorting and selecting by order: sort, argsort, msort, topk, kthvalue, unique,
bucketize, searchsorted.

Sorts are stable (ties keep their order, as torch's ``stable=True``; torch's default sort
gives the same order for ties on the CPU), and NaN counts as larger than every number.
The values' gradient goes back to the index each value came from.

>>> import tracegrad as torch
>>> x = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
>>> values, indices = x.sort(descending=True)
>>> values, indices
(tensor([3., 2., 1.], grad_fn=<SortBackward0>), tensor([0, 2, 1]))
>>> values[0].backward()
>>> x.grad
tensor([1., 0., 0.])
"""

from __future__ import annotations

import numpy as np

from .._layout import preserved, row_major
from ..autograd.function import Op
from ..errors import InvalidValueError
from ..tensor import Tensor
from ._checks import wrap_dim
from ._saved import show_dim_and_sizes
from .indexing import scatter_into


def sort_indices(xp, x, axis: int, descending: bool):
    """Stable argsort along axis. Descending is the ascending sort of the reversed array,
    mapped back, so ties stay in order and NaN comes first (the largest), as in torch."""
    if not descending:
        return xp.argsort(x, axis=axis, kind="stable")
    length = x.shape[axis]
    reversed_order = xp.argsort(xp.flip(x, axis=axis), axis=axis, kind="stable")
    return (length - 1) - xp.flip(reversed_order, axis=axis)


def _gather_grad(grad, input_shape, axis, index):
    """Place each value's gradient back where the value came from (a Tensor, recorded, or
    an array, as ``grad`` is)."""
    return scatter_into(grad, tuple(input_shape), axis, index, False)


class Sort(Op):
    """``sort(dim, descending)`` -> (values, indices)."""

    node_name = "SortBackward0"
    # the indices (output 1) a saved tensor, as torch's: changed in place, backward
    # fails the version check; dim and the input's sizes below
    saved_names = ("indices",)
    saves_output = (1,)
    array_backward = True

    @staticmethod
    def forward(ctx, a, dim=-1, descending=False):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        xp = a._xp
        if x.ndim == 0:
            ctx.axis, ctx.index = None, None
            return x.copy(), xp.zeros((), np.int64)
        axis = wrap_dim(dim, x.ndim, a)
        index = sort_indices(xp, x, axis, descending)
        ctx.axis, ctx.index = axis, index
        # (values and indices in the input's layout, as torch's sort allocates them)
        return preserved(xp.take_along_axis(x, index, axis=axis), x), \
            preserved(index.astype(np.int64), x)

    @staticmethod
    def backward(ctx, grad, _indices_grad=None):
        ctx.saved_tensors  # noqa: B018 - the indices' version check
        if ctx.index is None:
            return (grad, None, None)
        return (_gather_grad(grad, ctx._input_meta[0][0], ctx.axis, ctx.index), None, None)


class SortStable(Sort):
    """``sort(stable=..., dim=, descending=)``: torch's other overload, another node name."""

    node_name = "SortBackward1"


class Topk(Op):
    """The k largest (or smallest) along dim -> (values, indices)."""

    node_name = "TopkBackward0"
    # the indices (output 1) a saved tensor, as torch's: changed in place, backward
    # fails the version check; dim and the input's sizes below
    saved_names = ("indices",)
    saves_output = (1,)
    array_backward = True

    @staticmethod
    def forward(ctx, a, k, dim=-1, largest=True, sorted=True):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        xp = a._xp
        axis = wrap_dim(dim, x.ndim, a) if x.ndim else 0
        length = x.shape[axis] if x.ndim else 1
        if not 0 <= k <= length:
            raise InvalidValueError(
                f"selected index k out of range (topk: k={k}, but dimension {dim} of "
                f"{a._describe()} has {length} elements). Hint: k must be at most "
                f"{length}.")
        if x.ndim == 0:
            ctx.axis, ctx.index = None, None
            return x.copy(), xp.zeros((), np.int64)
        order = sort_indices(xp, x, axis, descending=largest)
        index = xp.take(order, xp.arange(k), axis=axis)
        ctx.axis, ctx.index = axis, index
        return row_major(xp.take_along_axis(x, index, axis=axis)), \
            row_major(index.astype(np.int64))  # (torch's topk: contiguous results)

    @staticmethod
    def backward(ctx, grad, _indices_grad=None):
        ctx.saved_tensors  # noqa: B018 - the indices' version check
        if ctx.index is None:
            return (grad, None, None, None, None)
        return (_gather_grad(grad, ctx._input_meta[0][0], ctx.axis, ctx.index),
                None, None, None, None)


class Kthvalue(Op):
    """The k-th smallest along dim (k from 1) -> (values, indices)."""

    node_name = "KthvalueBackward0"
    # the indices (output 1) a saved tensor, as torch's: changed in place, backward
    # fails the version check; dim and the input's sizes below
    saved_names = ("indices", "keepdim=keepdim")
    saves_output = (1,)
    array_backward = True

    @staticmethod
    def forward(ctx, a, k, dim=-1, keepdim=False):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        xp = a._xp
        axis = wrap_dim(dim, x.ndim, a) if x.ndim else 0
        length = x.shape[axis] if x.ndim else 1
        if not 1 <= k <= length:
            raise InvalidValueError(
                f"kthvalue(): selected number k out of range for dimension {axis} (k={k}, "
                f"{a._describe()}). Hint: k counts from 1 up to {length}.")
        if x.ndim == 0:
            ctx.axis, ctx.index = None, None
            return x.copy(), xp.zeros((), np.int64)
        order = sort_indices(xp, x, axis, descending=False)
        index = xp.take(order, xp.asarray([k - 1]), axis=axis)
        values = xp.take_along_axis(x, index, axis=axis)
        ctx.axis, ctx.index, ctx.keepdim = axis, index, keepdim
        if not keepdim:
            values, index = values.squeeze(axis), index.squeeze(axis)
        return values, index.astype(np.int64)

    @staticmethod
    def backward(ctx, grad, _indices_grad=None):
        ctx.saved_tensors  # noqa: B018 - the indices' version check
        from .statistics import scatter_to_index

        if ctx.index is None:
            return (grad, None, None, None)
        return (scatter_to_index(grad, ctx._input_meta[0][0], ctx.axis, ctx.index,
                                 ctx.keepdim), None, None, None)


class Unique(Op):
    """``unique``: torch records a node with no derivative (Unique2Backward0) when the
    input requires grad, so backward through it fails there as here."""

    node_name = "Unique2Backward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, sorted=True, return_inverse=False, return_counts=False, dim=None):
        x = a._array
        xp = a._xp
        if dim is None:
            values, inverse, counts = xp.unique(x, return_inverse=True, return_counts=True)
            inverse = inverse.reshape(x.shape)
        else:
            axis = wrap_dim(dim, x.ndim, a)
            values, inverse, counts = xp.unique(x, return_inverse=True, return_counts=True,
                                                axis=axis)
            inverse = inverse.reshape(-1)
        return values, inverse.astype(np.int64), counts.astype(np.int64)

    @staticmethod
    def backward(ctx, *grads):
        from ..errors import UnsupportedDTypeError

        raise UnsupportedDTypeError(
            "the derivative for '_unique2' is not implemented. Hint: unique's values are a "
            "selection of the input; gather them with an index (torch has no derivative "
            "either).")


def unique(a, sorted=True, return_inverse=False, return_counts=False, dim=None):
    values, inverse, counts = Unique.apply(a, sorted, return_inverse, return_counts, dim)
    if return_inverse and return_counts:
        return values, inverse, counts
    if return_inverse:
        return values, inverse
    if return_counts:
        return values, counts
    return values


def unique_consecutive(a, return_inverse=False, return_counts=False, dim=None):
    """Drops every element equal to the one before it (along dim, or flattened)."""
    xp = a._xp
    x = a._array
    if dim is None:
        flat = x.reshape(-1)
        if flat.size == 0:
            keep = xp.zeros(0, dtype=bool)
        else:
            keep = xp.concatenate([xp.ones(1, dtype=bool), flat[1:] != flat[:-1]])
        values = flat[keep]
        group = xp.cumsum(keep) - 1
        inverse = group.reshape(x.shape)
    else:
        axis = wrap_dim(dim, x.ndim, a)
        moved = xp.moveaxis(x, axis, 0)
        rows = moved.reshape(moved.shape[0], -1)
        keep = xp.concatenate([xp.ones(1, dtype=bool),
                               (rows[1:] != rows[:-1]).any(axis=1)]) if len(rows) else \
            xp.zeros(0, dtype=bool)
        values = xp.moveaxis(moved[keep], 0, axis)
        inverse = xp.cumsum(keep) - 1
    counts = xp.bincount(inverse.reshape(-1), minlength=int(keep.sum())) if keep.size else \
        xp.zeros(0, dtype=np.int64)
    result = [Tensor._wrap(values.copy(), False)]
    if return_inverse:
        result.append(Tensor._wrap(inverse.astype(np.int64), False))
    if return_counts:
        result.append(Tensor._wrap(counts.astype(np.int64), False))
    return result[0] if len(result) == 1 else tuple(result)


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Indices where ``values`` would be inserted to keep each row of ``sorted_sequence``
    sorted (the last dim; leading dims match row by row)."""
    xp = sorted_sequence._xp
    boundaries = sorted_sequence._array
    if side is not None:
        if side not in ("left", "right"):
            raise InvalidValueError(f"torch.searchsorted(): side can only be 'left' or "
                                    f"'right' but got {side}")
        if right and side == "left":
            raise InvalidValueError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True")
        right = side == "right"
    scalar = not isinstance(values, Tensor)
    points = xp.asarray(values) if scalar else values._array
    if sorter is not None:
        boundaries = xp.take_along_axis(boundaries, sorter._array, axis=-1)
    which = "right" if right else "left"
    if boundaries.ndim == 1:
        result = xp.searchsorted(boundaries, points, side=which)
    else:
        if boundaries.shape[:-1] != points.shape[:-1]:
            raise InvalidValueError(
                f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first "
                f"N-1 dimensions of boundaries tensor and input value tensor must match, but "
                f"we got boundaries tensor {list(boundaries.shape)} and input value tensor "
                f"{list(points.shape)}")
        rows = boundaries.reshape(-1, boundaries.shape[-1])
        queries = points.reshape(-1, points.shape[-1])
        result = xp.stack([xp.searchsorted(row, query, side=which)
                           for row, query in zip(rows, queries)]).reshape(points.shape)
    return Tensor._wrap(xp.asarray(result, dtype=np.int32 if out_int32 else np.int64), False)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each element given sorted 1-D ``boundaries`` (``right`` as torch's:
    True means boundaries[i-1] <= x < boundaries[i])."""
    if boundaries._array.ndim != 1:
        raise InvalidValueError(
            f"boundaries tensor must be 1 dimension, but got dim({boundaries._array.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


show_dim_and_sizes(Sort, SortStable, Topk, Kthvalue)


