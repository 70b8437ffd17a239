"""The vector p-norm (``linalg.vector_norm``), which ``Tensor.norm``, ``torch.norm`` and
``linalg.norm``/``matrix_norm('fro')`` record as LinalgVectorNormBackward0, as torch does.
"""

from __future__ import annotations

import math

from .. import _dtype
from .._layout import row_major
from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..errors import DTypeError
from ..tensor import Tensor
from . import _math
from ._saved import as_torch_ints, show_saved
from .reduce import normalize_dims
from .unary import _quiet


def _norm_dims(dim, ndim: int):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    return normalize_dims(dim, ndim) if ndim else None


class VectorNorm(Op):
    node_name = "LinalgVectorNormBackward0"
    array_backward = True
    saved_names = ("self", "result", "keepdim=keepdim")  # as PyTorch names them; dim, ord below
    saves_output = True

    @staticmethod
    @silenced
    def forward(ctx, a, ord=2, dim=None, keepdim=False, dtype=None):
        x = a._array
        if x.dtype.kind != "f":
            raise DTypeError(
                f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                f"Got {_torch_type(x.dtype)} ({a._describe()}). Hint: call .float() first.")
        if dtype is not None:
            x = x.astype(_dtype.to_numpy_dtype(dtype))
        xp = a._xp
        dims = _norm_dims(dim, x.ndim)
        ctx.save_for_backward(a)
        ctx.ord, ctx.dims, ctx.keepdim = float(ord), dims, keepdim
        ctx._given = (ord, dim)  # as given: grad_fn._saved_ord and _saved_dim show them
        magnitude = xp.abs(x)
        p = float(ord)
        if x.size == 0 and p < 0:
            raise DTypeError(
                f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because "
                "the operation does not have an identity")
        if p == math.inf:
            result = magnitude.max(axis=dims, keepdims=keepdim) if x.size else \
                magnitude.sum(axis=dims, keepdims=keepdim)
        elif p == -math.inf:
            result = magnitude.min(axis=dims, keepdims=keepdim)
        elif p == 0:
            result = (magnitude != 0).sum(axis=dims, keepdims=keepdim).astype(x.dtype)
        elif p == 1:
            result = magnitude.sum(axis=dims, keepdims=keepdim)
        elif p == 2:
            result = xp.sqrt((magnitude * magnitude).sum(axis=dims, keepdims=keepdim))
        else:
            with _quiet(xp):
                result = (magnitude ** p).sum(axis=dims, keepdims=keepdim) ** (1.0 / p)
        if keepdim and dims is None:
            result = xp.reshape(result, (1,) * x.ndim)
        return row_major(xp.asarray(result, dtype=x.dtype))  # (torch's: contiguous)

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        return (norm_grad(grad, a, result, ctx.ord, ctx.dims, ctx.keepdim),
                None, None, None, None)


show_saved(VectorNorm, "ord", lambda node: node._given[0])
show_saved(VectorNorm, "dim", lambda node: as_torch_ints(node._given[1]))


def norm_grad(grad, a, result, p: float, dims, keepdim: bool):
    """The gradient of ``vector_norm(a, p, dims, keepdim) == result`` (None for p=0), as
    torch's ``norm_backward`` writes it, step for step, so that under create_graph the
    recorded formula has torch's nodes (a zero norm's gradient masked to 0 last)."""
    ndim = len(a.shape)
    if p == 0:
        return None
    norm = result
    if not keepdim and ndim and dims is not None:
        for axis in sorted(dims):
            grad, norm = _math.unsqueeze(grad, axis), _math.unsqueeze(norm, axis)
    if _math.numpy_dtype(grad) != _math.numpy_dtype(a):
        grad = _math.like_dtype(grad, a)
    with _quiet(_math.xp(a)):  # 0/0 and 0**-1 where a norm or an element is 0: masked
        if p == 1:
            return _math.sign(a) * grad
        if p == 2:
            return grad * _masked_zero(a / norm, norm == 0)
        magnitude = abs(a)
        if p in (math.inf, -math.inf):
            ties = _math.like_dtype((magnitude == norm) | _math.isnan(magnitude), grad)
            count = _math.sum_keepdims(ties, tuple(range(ndim)) if dims is None else dims)
            return _math.sign(a) * ((grad / count) * ties)
        if p < 1:
            scaled = _math.sign(a) * _masked_zero(magnitude ** (p - 1), a == 0)
            return scaled * grad * norm ** (1 - p)
        scaled = _math.sign(a) * magnitude ** (p - 1) if p < 2 else a * magnitude ** (p - 2)
        return scaled * _masked_zero(grad / norm ** (p - 1), norm == 0)


def _masked_zero(value, mask):
    """``value.masked_fill_(mask, 0)`` of torch's formulas: Tensors (recorded,
    MaskedFillBackward0) or arrays."""
    if value.__class__ is Tensor:
        from .indexing import MaskedFill

        return MaskedFill.apply(value, mask, 0)
    return _math.xp(value).where(mask, 0, value).astype(value.dtype, copy=False)


def _torch_type(numpy_dtype) -> str:
    from .pointwise import _torch_type_name

    return _torch_type_name(numpy_dtype)


class Dist(Op):
    """``dist(a, b, p)``: the p-norm of a - b (broadcast)."""

    node_name = "DistBackward0"
    array_backward = True
    saves_output = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "other", "result", "p=_p")  # p as given (2, not 2.0)

    @staticmethod
    @silenced
    def forward(ctx, a, b, p=2):
        from ._operands import broadcast_error

        try:
            difference = a._array - b._array
        except ValueError:
            raise broadcast_error("dist", a, b) from None
        ctx.save_for_backward(a, b)
        ctx.p, ctx._p = float(p), p
        wrapped = Tensor._wrap(difference, False)
        return VectorNorm.forward(VectorNorm._scratch, wrapped, p, None, False, None)

    @staticmethod
    def backward(ctx, grad):
        a, b, result = ctx.saved_tensors
        needs = ctx.needs_input_grad
        spread = norm_grad(grad, a - b, result, ctx.p, None, False)
        if spread is None:
            return None, None, None
        # (each as broadcast: the engine sums it to its input's shape)
        return (spread if needs[0] else None, -spread if needs[1] else None, None)


def vector_norm(a, ord=2, dim=None, keepdim=False, dtype=None) -> Tensor:
    return VectorNorm.apply(a, ord, dim, keepdim, dtype)
