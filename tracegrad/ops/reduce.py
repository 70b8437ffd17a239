"""Reductions: sum, mean, max, min, argmax, argmin -- and sum_to, which undoes broadcasting."""

from __future__ import annotations

from .._layout import row_major
from ..autograd import events
from ..autograd.function import Op
from ..autograd.quiet import restore, silence, silenced
from ..errors import ShapeError
from . import _math
from ._checks import wrap_dim
from ._saved import as_torch_int, as_torch_ints, show_saved


def normalize_dims(dim, ndim: int) -> tuple | None:
    """dim as a sorted tuple of non-negative axes (None means all)."""
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
    if not shape:  # (torch's sum_to: the whole sum, SumBackward0)
        return SumAll.apply(grad)
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
    elif dims is None and grad._array.ndim not in (0, len(input_shape)):
        grad = Reshape.apply(grad, shape=(1,) * len(input_shape))
    # (a 0-d gradient, x.sum()'s, expands as it is: torch's one ExpandBackward0)
    return Expand.apply(grad, shape=tuple(input_shape))


def _accumulate_dtype(array):
    # torch.sum of an int/bool tensor gives int64
    return "int64" if array.dtype.kind in "biu" else None


class Sum(Op):
    node_name = "SumBackward1"
    array_backward = True
    saved_names = ("keepdim=keepdim", "self_sym_sizes=input_shape")

    @staticmethod
    def forward(ctx, a, dim=None, keepdim=False, dtype=None):
        x = a._array
        dims = normalize_dims(dim, x.ndim) or None  # dim=[] reduces every dim, as in torch
        ctx.input_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx._dim = dim  # as given: grad_fn._saved_dim shows it
        token = silence()  # an overflowing or inf - inf sum is inf/nan in torch, silently
        try:
            return row_major(x.sum(axis=dims, keepdims=keepdim,
                                   dtype=dtype or _accumulate_dtype(x)))
        finally:
            restore(token)

    @staticmethod
    def backward(ctx, grad):
        return (_math.expand_reduced(grad, ctx.input_shape, ctx.dims, ctx.keepdim),)


show_saved(Sum, "dim", lambda node: as_torch_ints(node._dim))


class SumAll(Sum):
    node_name = "SumBackward0"
    saved_names = ("self_sym_sizes=input_shape",)  # grad_fn._saved_<name>, as PyTorch names them


class Mean(Op):
    node_name = "MeanBackward1"
    array_backward = True
    inference_overload = "sum"  # (torch's composite mean sums through out=: inference.py)
    saved_names = ("keepdim=keepdim", "self_sym_sizes=input_shape")

    @staticmethod
    def forward(ctx, a, dim=None, keepdim=False):
        x = a._array
        if x.dtype.kind != "f":
            from ..errors import DTypeError

            raise DTypeError(
                f"mean(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {_torch_name(a)} ({a._describe()}). Hint: call "
                ".float() first, or pass dtype=torch.float32.")
        dims = normalize_dims(dim, x.ndim) or None  # dim=[] reduces every dim, as in torch
        ctx.input_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx._dim = dim  # as given: grad_fn._saved_dim shows it
        count = x.size if dims is None else _product(x.shape[d] for d in dims)
        ctx.count = max(count, 1)
        token = silence()  # (as Sum's)
        try:
            return row_major(x.mean(axis=dims, keepdims=keepdim))
        finally:
            restore(token)

    @staticmethod
    def backward(ctx, grad):
        return (_math.expand_reduced(grad / ctx.count, ctx.input_shape, ctx.dims, ctx.keepdim),)


show_saved(Mean, "dim", lambda node: as_torch_ints(node._dim))
show_saved(Mean, "self_sym_numel", lambda node: _product(node.input_shape))


class MeanAll(Mean):
    node_name = "MeanBackward0"
    saved_names = ("self_sym_sizes=input_shape",)  # grad_fn._saved_<name>, as PyTorch names them


show_saved(MeanAll, "self_sym_numel", lambda node: _product(node.input_shape))


def _torch_name(tensor) -> str:
    return {"int64": "Long", "int32": "Int", "uint8": "Byte", "bool": "Bool"}.get(
        tensor.dtype.name, tensor.dtype.name)


def _product(values) -> int:
    result = 1
    for value in values:
        result *= value
    return result


class MaxAll(Op):
    """``x.max()``: the gradient is shared evenly among tied maxima, as in torch."""

    node_name = "MaxBackward1"
    array_backward = True
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
        mask = _math.like_dtype(a == result, grad)
        return (mask * (grad / mask.sum()),)


class MinAll(MaxAll):
    node_name = "MinBackward1"
    _reduce = "min"


class MaxDim(Op):
    """``x.max(dim)``: (values, indices); the gradient goes to the selected index."""

    node_name = "MaxBackward0"
    array_backward = True
    # as PyTorch names them; dim below. The indices (output 1) are a saved tensor, as in
    # torch: changing them in place makes backward fail with the version error.
    saved_names = ("keepdim=keepdim", "self_sym_sizes=input_shape", "indices")
    saves_output = (1,)
    _reduce = "max"

    @staticmethod
    def forward(ctx, a, dim, keepdim=False):
        x = a._array
        xp = a._xp
        axis = wrap_dim(dim, x.ndim, a)
        if x.ndim and x.shape[axis] == 0:
            raise ShapeError(f"{ctx._function._reduce}(): cannot reduce over an empty dimension {dim} "
                             f"of shape {list(x.shape)}")
        arg = xp.argmax if ctx._function._reduce == "max" else xp.argmin
        indices = xp.expand_dims(arg(x, axis=axis), axis) if x.ndim else xp.zeros((), "int64")
        values = xp.take_along_axis(x, indices, axis=axis) if x.ndim else x.copy()
        ctx.axis, ctx.keepdim, ctx.input_shape = axis, keepdim, x.shape
        ctx._dim = dim  # as given: grad_fn._saved_dim shows it
        ctx.indices = indices
        if not keepdim and x.ndim:
            values, indices = values.squeeze(axis), indices.squeeze(axis)
        return values, indices.astype("int64")

    @staticmethod
    def backward(ctx, grad, _indices_grad=None):
        ctx.saved_tensors  # noqa: B018 - the version check of the indices (ctx.indices: their array)
        if not len(ctx.input_shape):
            return (grad, None)
        if not ctx.keepdim:
            grad = _math.unsqueeze(grad, ctx.axis)
        return (_ops.indexing.scatter_into(grad, ctx.input_shape, ctx.axis, ctx.indices,
                                           False), None)


class MinDim(MaxDim):
    node_name = "MinBackward0"
    _reduce = "min"


for _op in (MaxDim, MinDim):
    show_saved(_op, "dim", lambda node: as_torch_int(node._dim))


def argmax(a, dim=None, keepdim=False):
    return _arg_reduce(a, dim, keepdim, "argmax")


def argmin(a, dim=None, keepdim=False):
    return _arg_reduce(a, dim, keepdim, "argmin")


def _arg_reduce(a, dim, keepdim, which):
    from ..tensor import Tensor
    xp = a._xp
    x = a._array
    if dim is None:
        result = getattr(xp, which)(x)
        if keepdim:
            result = xp.reshape(result, (1,) * x.ndim)
    else:
        axis = wrap_dim(dim, x.ndim, a)
        result = getattr(xp, which)(x, axis=axis)
        if keepdim:
            result = xp.expand_dims(result, axis)
    output = Tensor._wrap(xp.asarray(result, dtype="int64"), False)
    if events.listener is not None:  # indices: the gradient stops here (tracing/flows.py)
        events.listener.on_untracked_op(which, (a,), (output,), True)
    return output


def var(a, dim=None, keepdim: bool = False, correction: float = 1, unbiased=None):
    """Variance with torch's Bessel correction (``unbiased=False`` is ``correction=0``): a
    VarBackward0 node.

    >>> import tracegrad as torch
    >>> torch.tensor([1.0, 2.0, 3.0]).var(), torch.tensor([1.0, 3.0]).var(unbiased=False)
    (tensor(1.), tensor(1.))
    """
    from .statistics import Var

    if unbiased is not None:
        correction = 1 if unbiased else 0
    return Var.apply(a, dim, correction, keepdim)


def std(a, dim=None, keepdim: bool = False, correction: float = 1, unbiased=None):
    from .statistics import Std

    if unbiased is not None:
        correction = 1 if unbiased else 0
    return Std.apply(a, dim, correction, keepdim)


# -- products, extremes over several dims, NaN-skipping sums ---------------------------
class Prod(Op):
    """``prod(dim)``; the gradient of each element is the product of the others."""

    node_name = "ProdBackward1"
    array_backward = True
    saves_output = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "result", "keepdim=keepdim")

    @staticmethod
    @silenced
    def forward(ctx, a, dim, keepdim=False, dtype=None):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        if dtype is None and x.dtype.kind in "biu":
            dtype = "int64"
        ctx.save_for_backward(a)
        axis = wrap_dim(dim, x.ndim, a)
        ctx.dims, ctx.keepdim = ((axis,) if x.ndim else None), keepdim
        return row_major(x.prod(axis=axis if x.ndim else None, keepdims=keepdim, dtype=dtype))

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        return (_prod_grad(grad, a, result, ctx.dims, ctx.keepdim), None, None, None)


class ProdAll(Prod):
    node_name = "ProdBackward0"
    saved_names = ("self", "result")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a, dtype=None):
        x = a._array
        if dtype is None and x.dtype.kind in "biu":
            dtype = "int64"
        ctx.save_for_backward(a)
        ctx.dims, ctx.keepdim = None, False
        return x.prod(dtype=dtype)


def _prod_grad(grad, a, result, dims, keepdim):
    from .statistics import as_kept

    shape = tuple(a.shape)
    if not (_math.array_of(a) == 0).any():
        # torch's prod_backward: grad * (result / input), the dim unsqueezed back
        if dims is not None and not keepdim and len(shape):
            grad, result = _math.unsqueeze(grad, dims[0]), _math.unsqueeze(result, dims[0])
        return grad * (result / a)
    grad = as_kept(grad, shape, dims, keepdim)
    if dims is None:  # every element: products of the others along the flattened input
        flat = a.reshape(-1)
        return grad * _product_of_others(flat, 0).reshape(shape)
    return grad * _product_of_others(a, dims[0])


def _product_of_others(a, axis: int):
    """For each position along ``axis``, the product of every other element: exclusive
    cumulative products from both ends, so zeros need no division."""
    from .rearrange import Flip
    from .scan import Cumprod
    from .shape import Cat

    if a.__class__ is not _math.Tensor:  # on arrays: the same, in array calls
        xp = _math.xp(a)
        length = a.shape[axis]
        one = xp.ones_like(_math.narrow(a, axis, 0, 1))
        if length == 1:
            return xp.broadcast_to(one, a.shape)
        before = xp.cumprod(a, axis=axis)
        after = xp.flip(xp.cumprod(xp.flip(a, axis), axis=axis), axis)
        return (xp.concatenate((one, _math.narrow(before, axis, 0, length - 1)), axis=axis)
                * xp.concatenate((_math.narrow(after, axis, 1, length), one), axis=axis))
    length = a._array.shape[axis]
    ones_shape = list(a._array.shape)
    ones_shape[axis] = 1
    from ..tensor import Tensor

    one = Tensor._wrap(a._xp.ones(ones_shape, dtype=a._array.dtype), False)
    before = Cumprod.apply(a, axis)
    after = Flip.apply(Cumprod.apply(Flip.apply(a, dims=(axis,)), axis), dims=(axis,))
    if length == 1:
        return one.expand(a.shape)
    from .indexing import slice_view

    left = Cat.apply(one, slice_view(before, axis, 0, length - 1, 1), dim=axis)
    right = Cat.apply(slice_view(after, axis, 1, length, 1), one, dim=axis)
    return left * right


class Amax(Op):
    """``amax(dim)``: the gradient is shared evenly among tied maxima."""

    node_name = "AmaxBackward0"
    array_backward = True
    saves_output = True
    _reduce = "max"
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "result", "keepdim=keepdim")

    @staticmethod
    def forward(ctx, a, dim=(), keepdim=False):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        dims = _extreme_dims(dim, x.ndim)
        name = "amax" if ctx._function._reduce == "max" else "amin"
        if x.size == 0 and dims is None:
            raise ShapeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                f"Specify the reduction dim with the 'dim' argument. ({a._describe()}) Hint: "
                "an empty tensor has no largest or smallest element.")
        if dims is not None and any(x.shape[d] == 0 for d in dims):
            raise ShapeError(f"{name}(): Expected reduction dim {dims[0]} to have non-zero "
                             f"size ({a._describe()}). Hint: an empty dimension has no "
                             "extreme value.")
        ctx.save_for_backward(a)
        ctx.dims, ctx.keepdim = dims, keepdim
        reduce = x.max if ctx._function._reduce == "max" else x.min
        return row_major(reduce(axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        return (_share_among_ties(grad, a, result, ctx.dims, ctx.keepdim), None, None)


class Amin(Amax):
    node_name = "AminBackward0"
    _reduce = "min"
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "result", "keepdim=keepdim")


def _extreme_dims(dim, ndim: int):
    """amax's dim: an int, a tuple, or () / None for every dimension."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    return normalize_dims(dim, ndim) if ndim else None


def _share_among_ties(grad, a, result, dims, keepdim):
    from .statistics import as_kept

    shape = tuple(a.shape)
    mask = _math.like_dtype(a == as_kept(result, shape, dims, keepdim), grad)
    count = mask.sum() if dims is None else _math.sum_keepdims(mask, dims)
    return as_kept(grad, shape, dims, keepdim) * mask / count


class Aminmax(Op):
    """``aminmax()`` -> (min, max), one node for both."""

    node_name = "AminmaxBackward0"
    array_backward = True
    saved_names = ("self", "min", "max", "keepdim=keepdim")  # as torch; dim below
    saves_output = (0, 1)

    @staticmethod
    def forward(ctx, a, dim=None, keepdim=False):
        x = a._array
        if x.size == 0:
            raise ShapeError(
                f"aminmax(): cannot compute aminmax over an empty dimension as the operation "
                f"has no identity. ({a._describe()})")
        dims = None if dim is None or not x.ndim else (wrap_dim(dim, x.ndim, a),)
        ctx.save_for_backward(a)
        ctx.dims, ctx.keepdim, ctx.given = dims, keepdim, dim
        low = row_major(x.min(axis=dims, keepdims=keepdim))
        high = row_major(x.max(axis=dims, keepdims=keepdim))
        if keepdim and dims is None:
            low, high = low.reshape((1,) * x.ndim), high.reshape((1,) * x.ndim)
        ctx.low, ctx.high = low, high
        return low, high

    @staticmethod
    def backward(ctx, grad_low, grad_high):
        a = ctx.saved_tensors[0]
        dims, keepdim = ctx.dims, ctx.keepdim
        low, high = _math.constant(grad_low, ctx.low), _math.constant(grad_low, ctx.high)
        return (_share_among_ties(grad_low, a, low, dims, keepdim)
                + _share_among_ties(grad_high, a, high, dims, keepdim), None, None)


show_saved(Aminmax, "dim", lambda node: None if node.given is None else as_torch_int(node.given))


class Nansum(Op):
    node_name = "NansumBackward0"
    array_backward = True
    saved_names = ("self", "keepdim=keepdim")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a, dim=None, keepdim=False, dtype=None):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        dims = normalize_dims(dim, x.ndim) if dim is not None and dim != () else None
        ctx.save_for_backward(a)
        ctx.dims, ctx.keepdim = dims, keepdim
        if x.dtype.kind != "f":
            return row_major(x.sum(axis=dims, keepdims=keepdim,
                                   dtype=dtype or _accumulate_dtype(x)))
        result = row_major(a._xp.nansum(x, axis=dims, keepdims=keepdim, dtype=dtype))
        if keepdim and dims is None:
            result = result.reshape((1,) * x.ndim)
        return result

    @staticmethod
    def backward(ctx, grad):
        from .statistics import as_kept

        (a,) = ctx.saved_tensors
        spread = as_kept(grad, tuple(a.shape), ctx.dims, ctx.keepdim)
        # (where() broadcasts the spread gradient to the input's shape)
        return (_math.where(_math.isnan(a), 0.0, spread), None, None, None)


def count_nonzero(a, dim=None):
    """``count_nonzero``: an int64 count, no gradient."""
    from ..tensor import Tensor

    x = a._array
    dims = normalize_dims(dim, x.ndim) if dim is not None else None
    return Tensor._wrap(a._xp.asarray(a._xp.count_nonzero(x, axis=dims), dtype="int64"),
                        False)


# The package, not indexing.py: it imports this module (MaxDim's backward reads it at call
# time, when every op module is loaded).
from .. import ops as _ops  # noqa: E402

show_saved(Amax, "dim", lambda node: as_torch_ints(node.given))

show_saved(Nansum, "dim", lambda node: as_torch_ints(node.given))

show_saved(Prod, "dim", lambda node: as_torch_int(node.given))
show_saved(Amin, "dim", lambda node: as_torch_ints(node.given))
