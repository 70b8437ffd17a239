"""Indexing and the ops built on indices: getitem/setitem, gather/scatter, masked_fill, where."""

from __future__ import annotations

import warnings

import numpy as np

from ..autograd.function import Op
from ..errors import DTypeError, ShapeError
from ._operands import operands
from .reduce import sum_to
from .shape import wrap_dim

_UINT8 = np.dtype(np.uint8)


def normalize_index(index):
    """Tensors inside an index become arrays; lists of ints become integer arrays."""
    from ..tensor import Tensor

    if isinstance(index, tuple):
        return tuple(_normalize_part(part, Tensor) for part in index)
    return _normalize_part(index, Tensor)


def _normalize_part(part, tensor_class):
    if isinstance(part, tensor_class):
        if part._array.dtype == _UINT8:
            # A ByteTensor index is a mask in torch (deprecated, warned); NumPy would read
            # its 0s and 1s as positions.
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a "
                          "dtype torch.bool instead.", UserWarning, stacklevel=4)
            return part._array.astype(bool)
        return part._array
    if isinstance(part, list):
        import numpy as np

        return np.asarray(part)
    return part


def _is_basic(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(part is None or part is Ellipsis or isinstance(part, (int, slice))
               for part in parts)


def _is_mask(index) -> bool:
    """One boolean array: each position is picked at most once."""
    return getattr(index, "dtype", None) is not None and index.dtype.kind == "b"


def _has_int(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(part, int) for part in parts)


class Index(Op):
    """Advanced indexing (integer arrays, boolean masks): a copy."""

    node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, a, index):
        ctx.input_shape, ctx.index = a._array.shape, index
        try:
            return a._array[index]
        except IndexError as error:
            raise IndexError(f"{error} (indexing {a._describe()})") from None

    @staticmethod
    def backward(ctx, grad):
        return (IndexAccumulate.apply(grad, shape=ctx.input_shape, index=ctx.index), None)


class Slice(Index):
    """Basic indexing (ints, slices, None, ...): a view of the same storage."""

    node_name = "SliceBackward0"
    is_view = True


class Select(Slice):
    node_name = "SelectBackward0"


def getitem(tensor, index):
    index = normalize_index(index)
    if _is_basic(index):
        op = Select if _has_int(index) else Slice
        result = op.apply(tensor, index)
        result._view_index = index
        return result
    return Index.apply(tensor, index)


class IndexAccumulate(Op):
    """zeros(shape) with ``grad`` added at ``index``: the backward of indexing."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, grad, shape, index):
        xp = grad._xp
        ctx.index = index
        out = xp.zeros(shape, dtype=grad._array.dtype)
        if _is_basic(index) or _is_mask(index):  # no position repeats: plain assignment
            out[index] = grad._array
        else:
            xp.add.at(out, index, grad._array)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (Index.apply(grad, ctx.index),)


class IndexPut(Op):
    """``out = base.clone(); out[index] = value`` -- what ``base[index] = value`` records."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, base, value, index):
        out = base._array.copy()
        ctx.index = index
        ctx.value_shape = value._array.shape
        try:
            out[index] = value._array
        except ValueError:
            raise ShapeError(
                f"shape mismatch: value tensor of shape {list(value._array.shape)} cannot be "
                f"broadcast to indexing result of shape {list(out[index].shape)} "
                f"(assigning into {base._describe()})") from None
        return out

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        grad_base = grad_value = None
        if needs[0]:
            grad_base = IndexPut.apply(grad, _zero_like(grad), index=ctx.index)
        if needs[1]:
            grad_value = sum_to(Index.apply(grad, ctx.index), ctx.value_shape)
        return grad_base, grad_value


def _zero_like(tensor):
    from ..tensor import Tensor

    return Tensor._wrap(tensor._xp.zeros((), dtype=tensor._array.dtype), False)


def select_range(tensor, axis: int, start: int, stop: int):
    index = (slice(None),) * axis + (slice(start, stop),)
    return getitem(tensor, index)


def select_index(tensor, axis: int, position: int):
    index = (slice(None),) * axis + (position,)
    return getitem(tensor, index)


# -- gather / scatter -------------------------------------------------------------------
def _grid_index(xp, index_array, axis: int):
    """Fancy-index tuple addressing ``out[i][j][index[i][j]]``-style positions."""
    grids = list(xp.ogrid[tuple(slice(size) for size in index_array.shape)])
    grids[axis] = index_array
    return tuple(grids)


def _check_index(op_name: str, tensor, axis: int, index) -> None:
    if index._array.dtype.kind not in "iu":
        raise DTypeError(f"{op_name}(): Expected dtype int64 for index, got "
                         f"{index.dtype.name}")
    if index._array.ndim != tensor._array.ndim:
        raise ShapeError(
            f"{op_name}(): Index tensor must have the same number of dimensions as input "
            f"tensor ({index._describe()} vs {tensor._describe()})")
    for d in range(tensor._array.ndim):
        if d != axis and index._array.shape[d] > tensor._array.shape[d]:
            raise ShapeError(
                f"{op_name}(): Size does not match at dimension {d} expected index "
                f"{list(index._array.shape)} to be smaller than self {list(tensor._array.shape)} "
                f"apart from dimension {axis}")
    if index._array.size:
        limit = tensor._array.shape[axis]
        low, high = int(index._array.min()), int(index._array.max())
        if low < -limit or high >= limit:
            raise IndexError(
                f"{op_name}(): index {high if high >= limit else low} is out of bounds for "
                f"dimension {axis} with size {limit}")


class Gather(Op):
    node_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, a, dim, index):
        axis = wrap_dim(dim, a._array.ndim)
        _check_index("gather", a, axis, index)
        ctx.axis, ctx.input_shape, ctx.index = axis, a._array.shape, index._array
        return a._array[_grid_index(a._xp, index._array, axis)]

    @staticmethod
    def backward(ctx, grad):
        return (ScatterInto.apply(grad, shape=ctx.input_shape, dim=ctx.axis, index=ctx.index,
                                  accumulate=True), None, None)


class ScatterInto(Op):
    """zeros(shape) with ``src`` placed (or added) at ``index`` along ``dim``."""

    node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, src, shape, dim, index, accumulate=False):
        xp = src._xp
        out = xp.zeros(shape, dtype=src._array.dtype)
        where = _grid_index(xp, index, dim)
        if accumulate:
            xp.add.at(out, where, src._array)
        else:
            out[where] = src._array
        ctx.dim, ctx.index = dim, index
        return out

    @staticmethod
    def backward(ctx, grad):
        return (grad[_grid_index(grad._xp, ctx.index, ctx.dim)],)


class Scatter(Op):
    """``out = input.clone(); out[index along dim] = src`` (src a tensor or a number)."""

    node_name = "ScatterBackward0"

    @staticmethod
    def forward(ctx, a, dim, index, src, reduce=None):
        from ..tensor import Tensor

        axis = wrap_dim(dim, a._array.ndim)
        _check_index("scatter", a, axis, index)
        xp = a._xp
        where = _grid_index(xp, index._array, axis)
        out = a._array.copy()
        if isinstance(src, Tensor):
            part = src._array[tuple(slice(size) for size in index._array.shape)]
        else:
            part = src
        if reduce == "add":
            xp.add.at(out, where, part)
        elif reduce in ("multiply", "mul"):
            xp.multiply.at(out, where, part)
        elif reduce is None:
            out[where] = part
        else:
            raise ValueError(f"scatter(): reduce must be 'add' or 'multiply', got {reduce!r}")
        ctx.axis, ctx.index = axis, index._array
        ctx.src_shape = src._array.shape if isinstance(src, Tensor) else None
        return out

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        where = _grid_index(grad._xp, ctx.index, ctx.axis)
        grad_input = grad_src = None
        if needs[0]:
            grad_input = IndexPut.apply(grad, _zero_like(grad), index=where)
        if len(needs) > 3 and needs[3]:
            picked = Index.apply(grad, where)
            pad = tuple((0, full - part) for full, part in zip(ctx.src_shape, picked.shape))
            grad_src = picked if not any(p for _, p in pad) else _pad(picked, ctx.src_shape)
        return grad_input, None, None, grad_src


def _pad(tensor, shape):
    return IndexAccumulate.apply(tensor, shape=shape,
                                 index=tuple(slice(size) for size in tensor._array.shape))


class ScatterAdd(Op):
    node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, a, dim, index, src):
        axis = wrap_dim(dim, a._array.ndim)
        _check_index("scatter_add", a, axis, index)
        xp = a._xp
        where = _grid_index(xp, index._array, axis)
        out = a._array.copy()
        xp.add.at(out, where, src._array[tuple(slice(size) for size in index._array.shape)])
        ctx.where, ctx.src_shape = where, src._array.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        grad_src = None
        if needs[3]:
            grad_src = Index.apply(grad, ctx.where)
            if grad_src.shape != ctx.src_shape:
                grad_src = _pad(grad_src, ctx.src_shape)
        return (grad if needs[0] else None), None, None, grad_src


# -- masks ------------------------------------------------------------------------------
class MaskedFill(Op):
    node_name = "MaskedFillBackward0"

    @staticmethod
    def forward(ctx, a, mask, value):
        from ..tensor import Tensor

        if mask._array.dtype.kind != "b":
            raise DTypeError(f"masked_fill_ only supports boolean masks, but got mask with "
                             f"dtype {mask.dtype.name}")
        fill = value._array if isinstance(value, Tensor) else value
        ctx.mask = mask._array
        return a._xp.where(mask._array, a._xp.asarray(fill, dtype=a._array.dtype), a._array)

    @staticmethod
    def backward(ctx, grad):
        return (Where.apply(_wrap_bool(ctx.mask), 0.0, grad), None, None)


def _wrap_bool(array):
    from ..tensor import Tensor

    return Tensor._wrap(array, False)


class Where(Op):
    node_name = "WhereBackward0"

    @staticmethod
    def forward(ctx, condition, a, b):
        from ..tensor import Tensor

        x, y = operands(a, b) if isinstance(a, Tensor) or isinstance(b, Tensor) else (a, b)
        cond = condition._array
        if cond.dtype.kind != "b":
            raise DTypeError(f"where expected condition to be a boolean tensor, but got a "
                             f"tensor with dtype {condition.dtype.name}")
        ctx.condition = cond
        ctx.shapes = (getattr(a, "shape", ()), getattr(b, "shape", ()))
        xp = condition._xp
        return xp.where(cond, x, y)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        condition = _wrap_bool(ctx.condition)
        grad_a = sum_to(Where.apply(condition, grad, 0.0), ctx.shapes[0]) if needs[1] else None
        grad_b = sum_to(Where.apply(condition, 0.0, grad), ctx.shapes[1]) if needs[2] else None
        return None, grad_a, grad_b
