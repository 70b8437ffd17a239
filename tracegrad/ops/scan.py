"""Cumulative ops along one dimension: cumsum, cumprod, cummax, cummin, logcumsumexp.

The gradient of a cumulative sum is the reversed cumulative sum of the gradient
(``flip(cumsum(flip(grad)))``); the others reduce to it.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._layout import row_major
from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..tensor import Tensor
from . import _math
from ._checks import wrap_dim
from ._saved import as_torch_int, show_saved


def _axis(a, dim) -> int:
    return wrap_dim(dim, a._array.ndim, a)


def reverse_cumsum(tensor, axis: int):
    """``sum_{k >= i} tensor_k`` along ``axis``: beside Tensors written with ops (so it
    differentiates), beside arrays three array calls."""
    from .rearrange import Flip

    if tensor.ndim == 0:
        return tensor
    if tensor.__class__ is not Tensor:
        xp = _math.xp(tensor)
        return xp.flip(xp.cumsum(xp.flip(tensor, axis), axis=axis), axis)
    flipped = Flip.apply(tensor, dims=(axis,))
    return Flip.apply(Cumsum.apply(flipped, axis), dims=(axis,))


class Cumsum(Op):
    node_name = "CumsumBackward0"
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, a, dim, dtype=None):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        if dtype is None and x.dtype.kind in "biu":
            dtype = np.int64  # integer sums accumulate in int64, as in torch
        if x.ndim == 0:
            return x.astype(dtype) if dtype is not None else x.copy()
        axis = _axis(a, dim)
        ctx.axis, ctx.input_dtype = axis, x.dtype
        return row_major(a._xp.cumsum(x, axis=axis, dtype=dtype))

    @staticmethod
    def backward(ctx, grad):
        if grad.ndim == 0:
            return (grad, None, None)
        result = reverse_cumsum(grad, ctx.axis)
        if result.__class__ is Tensor and result._array.dtype != ctx.input_dtype:
            result = result.to(ctx.input_dtype)  # (an array is cast to its edge's dtype)
        return (result, None, None)


class Cumprod(Op):
    node_name = "CumprodBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("self", "result")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a, dim, dtype=None):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        if dtype is None and x.dtype.kind in "biu":
            dtype = np.int64
        ctx.save_for_backward(a)
        if x.ndim == 0:
            return x.astype(dtype) if dtype is not None else x.copy()
        axis = _axis(a, dim)
        ctx.axis = axis
        return row_major(a._xp.cumprod(x, axis=axis, dtype=dtype))

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        if a.ndim == 0:
            return (grad, None, None)
        axis = ctx.axis
        if not (_math.array_of(a) == 0).any():
            # d result_k / d a_i = result_k / a_i for k >= i
            return (reverse_cumsum(grad * result, axis) / a, None, None)
        return (_cumprod_grad_with_zeros(grad, a, axis), None, None)


def _cumprod_grad_with_zeros(grad, a, axis: int):
    """Where some a_i is 0, result_k / a_i is undefined: take, for each i, the cumulative
    product with a_i replaced by 1 (O(n^2) along the axis, only on this path)."""
    length = a.shape[axis]
    pieces = []
    for position in range(length):
        replaced = _with_one_at(a, axis, position)
        partial = _math.apply(Cumprod, replaced, axis)
        weighted = (grad * partial)
        tail = _math.narrow(weighted, axis, position, length)
        pieces.append(_math.sum_dims(tail, (axis,)))
    return _math.stack(pieces, axis)


def _with_one_at(a, axis: int, position: int):
    mask = np.zeros(a.shape[axis], dtype=bool)
    mask[position] = True
    shape = [1] * a.ndim
    shape[axis] = -1
    mask = _math.xp(a).asarray(mask.reshape(shape))
    return _math.where(_math.constant(a, mask), 1.0, a)


class Cummax(Op):
    """(values, indices) of the running maximum; the gradient goes to each index."""

    node_name = "CummaxBackward0"
    array_backward = True
    # as PyTorch names them: the input and the indices output (kept, version-checked); dim
    # as given, below
    saved_names = ("self", "indices")
    saves_output = (1,)
    _pick = "max"

    @staticmethod
    def forward(ctx, a, dim):
        x = a._array
        xp = a._xp
        ctx.save_for_backward(a)
        ctx.given = dim
        if x.ndim == 0:
            ctx.axis, ctx.index = 0, None
            return x.copy(), xp.zeros((), np.int64)
        axis = _axis(a, dim)
        values, indices = map(row_major, _running_extreme(xp, x, axis, ctx._function._pick))
        ctx.axis, ctx.index = axis, indices
        return values, indices

    @staticmethod
    def backward(ctx, grad, _indices_grad=None):
        from .indexing import ScatterInto

        ctx.saved_tensors  # noqa: B018 - the version checks (ctx.index: the indices' array)
        if ctx.index is None:
            return (grad, None)
        shape = ctx._input_meta[0][0]
        return (_math.apply(ScatterInto, grad, shape=shape, dim=ctx.axis, index=ctx.index,
                            accumulate=True), None)


class Cummin(Cummax):
    node_name = "CumminBackward0"
    _pick = "min"


def _running_extreme(xp, x, axis: int, pick: str):
    """Running max/min and the index where it was reached (the latest among ties, and NaN
    propagating, as torch does)."""
    moved = xp.moveaxis(x, axis, -1)
    length = moved.shape[-1]
    values = xp.empty_like(moved)
    indices = xp.empty(moved.shape, dtype=np.int64)
    if length:
        best = moved[..., 0].copy()
        where = xp.zeros(moved.shape[:-1], dtype=np.int64)
        values[..., 0], indices[..., 0] = best, where
        for position in range(1, length):  # a loop along the axis, vectorised across it
            current = moved[..., position]
            if pick == "max":
                better = current >= best
            else:
                better = current <= best
            if x.dtype.kind == "f":
                better = (better | xp.isnan(current)) & ~xp.isnan(best)
            best = xp.where(better, current, best)
            where = xp.where(better, position, where)
            values[..., position], indices[..., position] = best, where
    return xp.moveaxis(values, -1, axis), xp.moveaxis(indices, -1, axis)


class Logcumsumexp(Op):
    node_name = "LogcumsumexpBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("self", "result")  # as PyTorch names them; dim below

    @staticmethod
    @silenced
    def forward(ctx, a, dim):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        if x.dtype.kind != "f":
            x = x.astype(_dtype.default_float.numpy)
        ctx.save_for_backward(a)
        if x.ndim == 0:
            return x.copy()
        axis = _axis(a, dim)
        ctx.axis = axis
        xp = a._xp
        return row_major(xp.logaddexp.accumulate(x, axis=axis) if xp is np else
                         _logcumsumexp_stable(xp, x, axis))

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        if a.ndim == 0:
            return (grad, None)
        # d result_k / d a_i = exp(a_i - result_k) for k >= i; shifted by a constant
        # (the largest a) so neither exponential overflows for large inputs
        values = _math.array_of(a)
        shift = float(values.max()) if values.size else 0.0
        if not np.isfinite(shift):
            shift = 0.0
        return (reverse_cumsum(grad * _math.exp(shift - result), ctx.axis)
                * _math.exp(a - shift), None)


def _logcumsumexp_stable(xp, x, axis):
    peak = x.max(axis=axis, keepdims=True)
    return xp.log(xp.cumsum(xp.exp(x - peak), axis=axis)) + peak

show_saved(Cumsum, "dim", lambda node: as_torch_int(node.given))

show_saved(Cumprod, "dim", lambda node: as_torch_int(node.given))

show_saved(Logcumsumexp, "dim", lambda node: as_torch_int(node.given))


for _op in (Cummax, Cummin):
    show_saved(_op, "dim", lambda node: as_torch_int(node.given))
