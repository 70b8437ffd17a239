"""``cdist``: the p-norm distance between each pair of rows of two batches of matrices;
``pdist``: between each pair of rows of one matrix."""

from __future__ import annotations

import math

from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from . import _math
from .indexing import index_accumulate
from .unary import _quiet


@silenced
def _pairwise(xp, x1, x2, p: float):
    """(..., P, R) distances. For p=2 with more than 25 rows on either side torch uses the
    |a|^2 + |b|^2 - 2ab expansion (one matrix product); so does this, to give the same
    values."""
    if p == 2 and (x1.shape[-2] > 25 or x2.shape[-2] > 25):
        square1 = (x1 * x1).sum(-1)[..., :, None]
        square2 = (x2 * x2).sum(-1)[..., None, :]
        squared = square1 + square2 - 2 * (x1 @ xp.swapaxes(x2, -1, -2))
        return xp.sqrt(xp.maximum(squared, 0))
    return _norms(xp, xp.abs(x1[..., :, None, :] - x2[..., None, :, :]), p)


@silenced
def _norms(xp, diff, p: float):
    """The p-norms of the last axis of ``diff`` (already absolute), as torch's distance
    kernels compute them."""
    if p == 0:
        return (diff != 0).sum(-1).astype(diff.dtype)
    if p == 1:
        return diff.sum(-1)
    if p == 2:
        return xp.sqrt((diff * diff).sum(-1))
    if p == math.inf:
        return diff.max(-1) if diff.shape[-1] else diff.sum(-1)
    with _quiet(xp):
        return (diff ** p).sum(-1) ** (1.0 / p)


class Cdist(Op):
    node_name = "CdistBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("x1", "x2", "result", "p=p")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, x1, x2, p=2.0):
        a, b = x1._array, x2._array
        if a.ndim < 2 or b.ndim < 2:
            which = x1 if a.ndim < 2 else x2
            raise ShapeError(f"cdist only supports at least 2D tensors, X{1 if a.ndim < 2 else 2} "
                             f"got: {a.ndim if a.ndim < 2 else b.ndim}D ({which._describe()})")
        if a.shape[-1] != b.shape[-1]:
            raise ShapeError(
                f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: "
                f"{b.shape[-1]} ({x1._describe()} and {x2._describe()}). Hint: the rows of "
                "both are points in one space, so their lengths must agree.")
        if a.dtype.kind != "f" or b.dtype.kind != "f":
            raise DTypeError(f"cdist only supports floating-point dtypes, X1 got: "
                             f"{x1.dtype.name} ({x1._describe()})")
        if p < 0:
            raise ShapeError(f"cdist only supports non-negative p values, got {p}")
        ctx.save_for_backward(x1, x2)
        ctx.p = float(p)
        xp = x1._xp
        try:
            return _pairwise(xp, a, b, float(p))
        except ValueError:
            from ._operands import broadcast_error

            raise broadcast_error("cdist", x1, x2) from None

    @staticmethod
    def backward(ctx, grad):
        x1, x2, result = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if ctx.p == 0:
            return None, None, None
        diff = _math.unsqueeze(x1, -2) - _math.unsqueeze(x2, -3)  # (..., P, R, M)
        pair = _pair_gradient(diff, _math.unsqueeze(result, -1), _math.unsqueeze(grad, -1),
                              ctx.p)
        # (each as broadcast over batch dimensions: the engine sums it to its input's shape)
        grad1 = _math.sum_dims(pair, (-2,)) if needs[0] else None
        grad2 = -_math.sum_dims(pair, (-3,)) if needs[1] else None
        return grad1, grad2, None


def _pair_gradient(diff, distance, weight, p: float):
    """The gradient ``weight`` sends to the first point of each pair through its p-norm
    ``distance`` (the second point gets its negative); ``diff`` is first minus second."""
    if p == 1:
        return weight * _math.sign(diff)
    if p == math.inf:
        return weight * _math.sign(diff) * (abs(diff) == distance)
    zero = distance == 0
    safe = _math.where(zero, 1.0, distance)
    if p == 2:
        scale = diff / safe
    else:
        scale = diff * abs(diff) ** (p - 2) / safe ** (p - 1)
    return _math.where(zero, 0.0, weight * scale)


class Pdist(Op):
    """``pdist``: the p-norm distance of each pair of rows ``i < j`` of a matrix, in row
    order (the upper triangle of ``cdist(x, x)``, computed directly, as torch's kernel)."""

    node_name = "PdistBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("self", "result", "p=p")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, p=2.0):
        if a._array.ndim != 2:
            raise ShapeError(f"pdist only supports 2D tensors, got: {a._array.ndim}D")
        if a._array.dtype.kind != "f":
            raise DTypeError("pdist only supports floating-point dtypes")
        if p < 0:
            raise ShapeError("pdist only supports non-negative p values")
        xp = a._xp
        ctx.save_for_backward(a)
        ctx.p = float(p)
        ctx.first, ctx.second = (xp.asarray(rows) for rows in
                                 xp.triu_indices(a._array.shape[0], 1))
        x = a._array
        return _norms(xp, xp.abs(x[ctx.first] - x[ctx.second]), ctx.p)

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        if ctx.p == 0:  # the count of differing coordinates: zero gradient, as torch's
            zeros = _math.xp(grad).zeros(tuple(x.shape), dtype=_math.numpy_dtype(grad))
            return _math.constant(grad, zeros), None
        pair = _pair_gradient(x[ctx.first] - x[ctx.second], _math.unsqueeze(result, -1),
                              _math.unsqueeze(grad, -1), ctx.p)
        shape = tuple(x.shape)
        return (index_accumulate(pair, shape, ctx.first)
                - index_accumulate(pair, shape, ctx.second)), None


__all__ = ["Cdist", "Pdist", "Tensor"]
