"""Reductions: sum, mean, max, min, argmax, argmin -- and sum_to, which undoes broadcasting."""

from __future__ import annotations

from ..autograd.function import Op
from ..errors import ShapeError


def normalize_dims(dim, ndim: int) -> tuple | None:
    """dim as a sorted tuple of non-negative axes (None means all)."""
    from .shape import wrap_dim

    if dim is None:
        return None
    if isinstance(dim, int):
        return (wrap_dim(dim, ndim),)
    return tuple(sorted(wrap_dim(d, ndim) for d in dim))


def is_expandable_to(shape, target) -> bool:
    """Whether ``shape`` broadcasts to ``target``."""
    if len(shape) > len(target):
        return False
    for size, target_size in zip(reversed(shape), reversed(target)):
        if size != 1 and size != target_size:
            return False
    return True


def sum_to(grad, shape):
    """Sum ``grad`` down to ``shape``: the backward of broadcasting, in one place."""
    shape = tuple(shape)
    grad_shape = grad._array.shape
    if grad_shape == shape:
        return grad
    lead = len(grad_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + axis for axis, size in enumerate(shape)
        if size == 1 and grad_shape[lead + axis] != 1)
    if axes:
        grad = Sum.apply(grad, dim=axes, keepdim=True)
    if grad._array.shape != shape:
        from .shape import Reshape

        grad = Reshape.apply(grad, shape=shape)
    return grad


def expand_reduced(grad, input_shape, dims, keepdim: bool):
    """Broadcast the gradient of a reduction back to the input's shape."""
    from .shape import Expand, Reshape

    if not keepdim and dims is not None and grad._array.ndim != len(input_shape):
        kept = list(input_shape)
        for axis in dims:
            kept[axis] = 1
        grad = Reshape.apply(grad, shape=tuple(kept))
    elif dims is None and grad._array.ndim != len(input_shape):
        grad = Reshape.apply(grad, shape=(1,) * len(input_shape))
    return Expand.apply(grad, shape=tuple(input_shape))


def _accumulate_dtype(array):
    # torch.sum of an int/bool tensor gives int64
    return "int64" if array.dtype.kind in "biu" else None


class Sum(Op):
    node_name = "SumBackward1"
    saved_names = ("keepdim=keepdim", "self_sym_sizes=input_shape")

    @staticmethod
    def forward(ctx, a, dim=None, keepdim=False, dtype=None):
        x = a._array
        dims = normalize_dims(dim, x.ndim)
        ctx.input_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        result = x.sum(axis=dims, keepdims=keepdim, dtype=dtype or _accumulate_dtype(x))
        return result

    @staticmethod
    def backward(ctx, grad):
        return (expand_reduced(grad, ctx.input_shape, ctx.dims, ctx.keepdim),)


class SumAll(Sum):
    node_name = "SumBackward0"
    saved_names = ("self_sym_sizes=input_shape",)  # grad_fn._saved_<name>, as PyTorch names them


class Mean(Op):
    node_name = "MeanBackward1"
    saved_names = ("keepdim=keepdim", "self_sym_sizes=input_shape")

    @staticmethod
    def forward(ctx, a, dim=None, keepdim=False):
        x = a._array
        if x.dtype.kind != "f":
            from ..errors import DTypeError

            raise DTypeError(
                f"mean(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {a.dtype.name}. Hint: call .float() first.")
        dims = normalize_dims(dim, x.ndim)
        ctx.input_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        count = x.size if dims is None else _product(x.shape[d] for d in dims)
        ctx.count = max(count, 1)
        return x.mean(axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        return (expand_reduced(grad / ctx.count, ctx.input_shape, ctx.dims, ctx.keepdim),)


class MeanAll(Mean):
    node_name = "MeanBackward0"
    saved_names = ("self_sym_sizes=input_shape",)  # grad_fn._saved_<name>, as PyTorch names them


def _product(values) -> int:
    result = 1
    for value in values:
        result *= value
    return result


class MaxAll(Op):
    """``x.max()``: the gradient is shared evenly among tied maxima, as in torch."""

    node_name = "MaxBackward1"
    saved_names = ("self", "result")  # grad_fn._saved_<name>, as PyTorch names them
    saves_output = True
    _reduce = "max"

    @staticmethod
    def forward(ctx, a):
        x = a._array
        if x.size == 0:
            raise ShapeError(
                f"{ctx._function._reduce}(): Expected reduction dim to be specified for input.numel() "
                "== 0. Specify the reduction dim with the 'dim' argument.")
        ctx.save_for_backward(a)
        return x.max() if ctx._function._reduce == "max" else x.min()

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        mask = (a == result).to(grad.dtype)
        return (mask * (grad / mask.sum()),)


class MinAll(MaxAll):
    node_name = "MinBackward1"
    _reduce = "min"


class MaxDim(Op):
    """``x.max(dim)``: (values, indices); the gradient goes to the selected index."""

    node_name = "MaxBackward0"
    saved_names = ("keepdim=keepdim", "self_sym_sizes=input_shape")
    _reduce = "max"

    @staticmethod
    def forward(ctx, a, dim, keepdim=False):
        from .shape import wrap_dim

        x = a._array
        xp = a._xp
        axis = wrap_dim(dim, x.ndim)
        if x.ndim and x.shape[axis] == 0:
            raise ShapeError(f"{ctx._function._reduce}(): cannot reduce over an empty dimension {dim} "
                             f"of shape {list(x.shape)}")
        arg = xp.argmax if ctx._function._reduce == "max" else xp.argmin
        indices = xp.expand_dims(arg(x, axis=axis), axis) if x.ndim else xp.zeros((), "int64")
        values = xp.take_along_axis(x, indices, axis=axis) if x.ndim else x.copy()
        ctx.axis, ctx.keepdim, ctx.input_shape = axis, keepdim, x.shape
        ctx.indices = indices
        if not keepdim and x.ndim:
            values, indices = values.squeeze(axis), indices.squeeze(axis)
        return values, indices.astype("int64")

    @staticmethod
    def backward(ctx, grad, _indices_grad=None):
        from .indexing import ScatterInto

        if not ctx.keepdim and len(ctx.input_shape):
            from .shape import Unsqueeze

            grad = Unsqueeze.apply(grad, dim=ctx.axis)
        if not len(ctx.input_shape):
            return (grad, None)
        return (ScatterInto.apply(grad, shape=ctx.input_shape, dim=ctx.axis,
                                  index=ctx.indices), None)


class MinDim(MaxDim):
    node_name = "MinBackward0"
    _reduce = "min"


def argmax(a, dim=None, keepdim=False):
    return _arg_reduce(a, dim, keepdim, "argmax")


def argmin(a, dim=None, keepdim=False):
    return _arg_reduce(a, dim, keepdim, "argmin")


def _arg_reduce(a, dim, keepdim, which):
    from ..tensor import Tensor
    from .shape import wrap_dim

    xp = a._xp
    x = a._array
    if dim is None:
        result = getattr(xp, which)(x)
        if keepdim:
            result = xp.reshape(result, (1,) * x.ndim)
    else:
        axis = wrap_dim(dim, x.ndim)
        result = getattr(xp, which)(x, axis=axis)
        if keepdim:
            result = xp.expand_dims(result, axis)
    return Tensor._wrap(xp.asarray(result, dtype="int64"), False)


def var(a, dim=None, keepdim: bool = False, correction: float = 1, unbiased=None):
    """Variance, with torch's Bessel correction (``unbiased=False`` is ``correction=0``).

    Built from mean, sub, mul and sum, so its gradient (and second derivative) come from
    those ops' backward.

    >>> import tracegrad as torch
    >>> torch.tensor([1.0, 2.0, 3.0]).var(), torch.tensor([1.0, 3.0]).var(unbiased=False)
    (tensor(1.), tensor(1.))
    """
    if unbiased is not None:
        correction = 1 if unbiased else 0
    dims = normalize_dims(dim, a._array.ndim)
    count = a._array.size if dims is None else _product(a._array.shape[d] for d in dims)
    centered = a - Mean.apply(a, dim=dims if dims is not None else tuple(range(a._array.ndim)),
                              keepdim=True)
    squares = centered * centered
    if dims is None:
        total = SumAll.apply(squares)
    else:
        total = Sum.apply(squares, dim=dims, keepdim=keepdim)
    return total / max(count - correction, 0)


def std(a, dim=None, keepdim: bool = False, correction: float = 1, unbiased=None):
    return var(a, dim, keepdim, correction, unbiased) ** 0.5
