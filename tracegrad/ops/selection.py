"""Selecting and placing by index along one dim, by mask, or by flat position:
index_select, index_add, index_copy, index_fill, index_put(accumulate), masked_select,
masked_scatter, take, scatter_reduce; and the value-only nonzero, argwhere, isin.

(Python indexing, gather and scatter live in indexing.py.)
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..errors import DTypeError, OutOfRangeError, ShapeError
from ..tensor import Tensor
from . import _math
from ._checks import wrap_dim
from ._edges import select_edges
from ._math import sum_to
from ._saved import as_torch_int, show_dim_and_sizes, show_saved
from .indexing import _save_positions, show_indices


def _wrap(array) -> Tensor:
    return Tensor._wrap(array, False)


def _index_vector(op_name: str, a, axis: int, index, dtype_message: str | None = None):
    """The index of an ``index_*`` op as an int64 array, with torch's checks."""
    if not isinstance(index, Tensor):
        from ..errors import ArgumentTypeError

        raise ArgumentTypeError(f"{op_name}(): argument 'index' must be Tensor, not "
                                f"{type(index).__name__}")
    array = index._array
    if array.dtype.kind not in "iu":
        raise DTypeError(
            (dtype_message or f"{op_name}(): Expected dtype int64 for index") +
            f" ({index._describe()}). Hint: convert it with .long().")
    if array.ndim > 1:
        raise OutOfRangeError(f"{op_name}(): Index is supposed to be a vector "
                              f"({index._describe()}). Hint: flatten it with .reshape(-1).")
    array = array.reshape(-1)
    size = a._array.shape[axis] if a._array.ndim else 1
    if array.size and (int(array.max()) >= size or int(array.min()) < -size):
        bad = int(array.max()) if int(array.max()) >= size else int(array.min())
        raise OutOfRangeError(
            f"index out of range in self ({op_name}: index {bad} for dimension {axis} of "
            f"size {size}, {a._describe()}). Hint: valid indices are {-size} to {size - 1}.")
    return array.astype(np.int64, copy=False)


def _along(axis: int, index):
    return (slice(None),) * axis + (index,)


class IndexSelect(Op):
    node_name = "IndexSelectBackward0"
    array_backward = True
    saved_names = ("index",)  # as PyTorch names them (a saved tensor); dim, sizes below

    @staticmethod
    def forward(ctx, a, dim, index):
        select_edges(ctx, (0,))  # torch's edges: a (no index/mask edge)
        axis = wrap_dim(dim, a._array.ndim, a)
        positions = _index_vector("index_select", a, axis, index,
                                  "index_select(): Expected dtype int32 or int64 for index")
        ctx.axis, ctx.positions = axis, positions
        if isinstance(index, Tensor):
            ctx.save_for_backward(index)
        ctx.given = dim
        if a._array.ndim == 0:
            return a._array.copy()
        return a._xp.take(a._array, positions, axis=axis)

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - the index's version check (ctx.positions: its array)
        shape = ctx._input_meta[0][0]
        if not len(shape):
            return (grad, None, None)
        return (_index_added(grad, shape, ctx.axis, ctx.positions), None, None)


show_dim_and_sizes(IndexSelect)


def _index_added(grad, shape, axis: int, positions):
    """zeros(shape) with ``grad``'s slices added at ``positions`` along ``axis``: a Tensor
    (recorded, IndexAddBackward0 as torch's) or an array."""
    zeros = _math.xp(grad).zeros(shape, dtype=_math.numpy_dtype(grad))
    if grad.__class__ is Tensor:
        return IndexAdd.apply(_wrap(zeros), axis, _wrap(positions), grad)
    _math.xp(grad).add.at(zeros, _along(axis, positions), grad)
    return zeros


def _check_source(op_name: str, a, axis: int, positions, source, trailing: str = ":") -> None:
    expected = list(a._array.shape)
    if a._array.ndim:
        expected[axis] = positions.size
    source_shape = list(source._array.shape)
    if a._array.ndim and (source._array.ndim != a._array.ndim or
                          source_shape[axis] != positions.size):
        size = source_shape[axis] if axis < len(source_shape) else "?"
        raise ShapeError(
            f"{op_name}(): Number of indices ({positions.size}) should be equal to "
            f"source.size(dim){trailing} ({size}), for dim: {axis} ({source._describe()} into "
            f"{a._describe()}). Hint: source needs shape {expected}.")
    if source_shape != expected:
        raise ShapeError(
            f"{op_name}(): source has shape {source_shape} but it must be {expected} "
            f"({source._describe()} into {a._describe()})")


class IndexAdd(Op):
    """``index_add(dim, index, source, alpha)``: source's slices added at index."""

    node_name = "IndexAddBackward0"
    array_backward = True
    # as PyTorch names them: the index and source kept when source's gradient is needed
    saved_names = ("index", "source", "alpha=alpha")

    @staticmethod
    @silenced
    def forward(ctx, a, dim, index, source, alpha=1):
        select_edges(ctx, (0, 3))  # torch's edges: a, source (no index/mask edge)
        axis = wrap_dim(dim, a._array.ndim, a)
        positions = _index_vector("index_add", a, axis, index)
        _check_source("index_add_", a, axis, positions, source)
        out = a._array.copy()
        values = source._array if alpha == 1 else source._array * alpha
        if out.ndim == 0:
            out = out + values.sum()
        else:
            a._xp.add.at(out, _along(axis, positions), values.astype(out.dtype, copy=False))
        ctx.axis, ctx.positions, ctx.alpha = axis, positions, alpha
        needs = ctx.needs_input_grad
        _save_index(ctx, dim, index, source, needs and needs[3], needs and needs[3])
        return out

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - the version checks (ctx.positions: the index)
        needs = ctx.needs_input_grad
        grad_source = None
        if needs[3]:
            grad_source = _math.apply(IndexSelect, grad, ctx.axis, ctx.positions)
            if ctx.alpha != 1:
                grad_source = grad_source * ctx.alpha
        return (grad if needs[0] else None), None, None, grad_source, None


class IndexCopy(Op):
    """``index_copy(dim, index, source)``: source's slices written at index."""

    node_name = "IndexCopyBackward0"
    array_backward = True
    # as PyTorch names them: the index always, source when its gradient is needed
    saved_names = ("index", "source")

    @staticmethod
    def forward(ctx, a, dim, index, source):
        select_edges(ctx, (0, 3))  # torch's edges: a, source (no index/mask edge)
        axis = wrap_dim(dim, a._array.ndim, a)
        positions = _index_vector("index_copy", a, axis, index)
        if a._array.ndim and (source._array.ndim != a._array.ndim
                              or source._array.shape[axis] != positions.size):
            size = source._array.shape[axis] if source._array.ndim > axis else 0
            raise OutOfRangeError(
                f"index_copy_(): Number of indices ({positions.size}) should be equal to "
                f"source.size(dim) ({size}) ({source._describe()} into {a._describe()}). "
                "Hint: source needs one slice per index.")
        _check_source("index_copy_", a, axis, positions, source)
        out = a._array.copy()
        out[_along(axis, positions)] = source._array
        ctx.axis, ctx.positions = axis, positions
        needs = ctx.needs_input_grad
        _save_index(ctx, dim, index, source, True, needs and needs[3])
        return out

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - the version checks (ctx.positions: the index)
        needs = ctx.needs_input_grad
        positions = ctx.positions
        return ((_math.apply(IndexFill, grad, ctx.axis, positions, 0.0) if needs[0] else None),
                None, None,
                (_math.apply(IndexSelect, grad, ctx.axis, positions) if needs[3] else None))


class IndexFill(Op):
    """``index_fill(dim, index, value)``: the slices at index set to a number (or a 0-d
    tensor, which then gets the sum of their gradients)."""

    node_name = "IndexFillBackward0"
    array_backward = True
    saved_names = ("index",)  # as PyTorch names it (a saved tensor, version-checked)

    @staticmethod
    def forward(ctx, a, dim, index, value):
        # torch's edges: the input, and a tensor value (IndexFillBackward1); never the index
        select_edges(ctx, (0, 3) if isinstance(value, Tensor) else (0,))
        axis = wrap_dim(dim, a._array.ndim, a)
        positions = _index_vector("index_fill", a, axis, index)
        fill = value
        if isinstance(value, Tensor):
            if value._array.ndim:
                raise ShapeError(
                    f"index_fill_ only supports a 0-dimensional value tensor, but got tensor "
                    f"with {value._array.ndim} dimension(s). ({value._describe()})")
            fill = value._array
        out = a._array.copy()
        out[_along(axis, positions)] = fill
        ctx.axis, ctx.positions = axis, positions
        ctx.save_for_backward(index if isinstance(index, Tensor) else None)
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        return out

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - the index's version check (ctx.positions: its array)
        needs = ctx.needs_input_grad
        positions = ctx.positions
        grad_value = None
        if len(needs) > 3 and needs[3]:
            grad_value = _math.apply(IndexSelect, grad, ctx.axis, positions).sum()
        return ((_math.apply(IndexFill, grad, ctx.axis, positions, 0.0) if needs[0] else None),
                None, None, grad_value)


class IndexFillTensor(IndexFill):
    node_name = "IndexFillBackward1"


def _save_index(ctx, dim, index, source, keep_index: bool, keep_source: bool) -> None:
    """index_add's and index_copy's saving, as torch's nodes: the index and the source
    tensors when their formulas need them (an index given as an array by a backward formula
    is not kept), dim as given and source's dim count."""
    ctx.save_for_backward(index if keep_index and isinstance(index, Tensor) else None,
                          source if keep_source else None)
    ctx.given, ctx.source_dim = dim, source._array.ndim


for _op in (IndexAdd, IndexCopy, IndexFill, IndexFillTensor):
    show_saved(_op, "dim", lambda node: as_torch_int(node.given))
for _op in (IndexAdd, IndexCopy):
    show_saved(_op, "source_dim", lambda node: node.source_dim)


class IndexPutAccumulate(Op):
    """``index_put(indices, values, accumulate=True)``: values added at the (possibly
    repeated) positions."""

    node_name = "IndexPutBackward0"
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, a, values, index):
        select_edges(ctx, (0, 1))  # torch's edges: a, values (no index/mask edge)
        out = a._array.copy()
        try:
            a._xp.add.at(out, index, values._array.astype(out.dtype, copy=False))
        except (ValueError, IndexError) as error:
            raise ShapeError(f"index_put_ with accumulate=True: {error} (values "
                             f"{values._describe()} into {a._describe()})") from None
        ctx.index, ctx.value_shape = index, values._array.shape
        _save_positions(ctx, index)
        return out

    @staticmethod
    def backward(ctx, grad):
        from .indexing import Index

        ctx.saved_tensors  # noqa: B018 - raises once backward freed them, as in torch
        needs = ctx.needs_input_grad
        grad_values = None
        if needs[1]:
            grad_values = sum_to(_math.apply(Index, grad, ctx.index), ctx.value_shape)
        return (grad if needs[0] else None), grad_values, None


show_indices(IndexPutAccumulate, accumulate=True)


def _mask_array(op_name: str, mask, like) -> np.ndarray:
    if not isinstance(mask, Tensor) or mask._array.dtype.kind != "b":
        raise DTypeError(
            f"{op_name}: expected BoolTensor for mask (got "
            f"{mask._describe() if isinstance(mask, Tensor) else type(mask).__name__}). "
            "Hint: make the mask with a comparison, or convert it with .bool().")
    return mask._array


class MaskedSelect(Op):
    """``masked_select(mask)``: the elements where mask (broadcast) is True, flattened."""

    node_name = "MaskedSelectBackward0"
    array_backward = True
    saved_names = ("self", "mask")  # as torch keeps them (the mask as given)

    @staticmethod
    def forward(ctx, a, mask):
        select_edges(ctx, (0,))  # torch's edges: a (no index/mask edge)
        selector = _mask_array("masked_select", mask, a)
        ctx.save_for_backward(a, mask)
        xp = a._xp
        try:
            shape = xp.broadcast_shapes(a._array.shape, selector.shape)
        except ValueError:
            from ._operands import broadcast_error

            raise broadcast_error("masked_select", a, mask) from None
        ctx.mask = xp.broadcast_to(selector, shape)
        ctx.shape = shape
        return xp.broadcast_to(a._array, shape)[ctx.mask]

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - raises if one changed in place, as in torch
        zeros = _math.xp(grad).zeros(ctx.shape, dtype=_math.numpy_dtype(grad))
        spread = _math.apply(MaskedScatter, zeros, ctx.mask, grad)
        return (sum_to(spread, ctx._input_meta[0][0]), None)


class MaskedScatter(Op):
    """``masked_scatter(mask, source)``: source's elements, in order, written where mask
    is True."""

    node_name = "MaskedScatterBackward0"
    array_backward = True
    saved_names = ("mask",)  # as torch keeps it (as given); source_sym_sizes below

    @staticmethod
    def forward(ctx, a, mask, source):
        select_edges(ctx, (0, 2))  # torch's edges: a, source (no index/mask edge)
        selector = _mask_array("masked_scatter_", mask, a)
        ctx.save_for_backward(mask)
        xp = a._xp
        try:
            selector = xp.broadcast_to(selector, a._array.shape)
        except ValueError:
            from ._operands import broadcast_error

            raise broadcast_error("masked_scatter", a, mask) from None
        count = int(selector.sum())
        if source._array.size < count:
            raise ShapeError(
                f"Number of elements of source < number of ones in mask ({source._array.size} "
                f"< {count}; source {source._describe()}, mask {mask._describe()}). Hint: "
                "source needs at least one element per True in the mask.")
        out = a._array.copy()
        out[selector] = source._array.reshape(-1)[:count]
        ctx.mask, ctx.count, ctx.source_shape = selector, count, source._array.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        from .indexing import MaskedFill

        ctx.saved_tensors  # noqa: B018 - raises if the mask changed in place, as in torch
        needs = ctx.needs_input_grad
        mask = ctx.mask
        grad_input = _math.apply(MaskedFill, grad, mask, 0.0) if needs[0] else None
        grad_source = None
        if needs[2]:
            picked = _math.apply(MaskedSelect, grad, mask)
            size = int(np.prod(ctx.source_shape))
            if size != ctx.count:
                zeros = _math.xp(grad).zeros(size - ctx.count, dtype=_math.numpy_dtype(grad))
                from .shape import Cat

                picked = _math.apply(Cat, picked, zeros, dim=0)
            grad_source = picked.reshape(ctx.source_shape)
        return grad_input, None, grad_source


show_saved(MaskedScatter, "source_sym_sizes", lambda node: tuple(node.source_shape))


class Take(Op):
    """``take(index)``: elements of the flattened input, in index's shape."""

    node_name = "TakeBackward0"
    array_backward = True
    saved_names = ("self", "index")  # as torch keeps them

    @staticmethod
    def forward(ctx, a, index):
        select_edges(ctx, (0,))  # torch's edges: a (no index/mask edge)
        x = a._array
        if index._array.dtype.kind not in "iu":
            raise DTypeError(f"take(): Expected a long tensor for index, but got "
                             f"{index.dtype.name} ({index._describe()})")
        positions = index._array.astype(np.int64, copy=False)
        if positions.size:
            high, low = int(positions.max()), int(positions.min())
            if high >= x.size or low < -x.size:
                bad = high if high >= x.size else low
                raise OutOfRangeError(
                    f"out of range: tried to access index {bad} on a tensor of {x.size} "
                    f"elements. ({a._describe()}) Hint: take indexes the flattened tensor, "
                    f"0 to {x.size - 1}.")
        ctx.save_for_backward(a, index)
        ctx.positions = positions
        return x.reshape(-1)[positions]

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - raises if one changed in place, as in torch
        shape = ctx._input_meta[0][0]
        size = int(np.prod(shape))
        zeros = _math.xp(grad).zeros(size, dtype=_math.numpy_dtype(grad))
        flat = _math.apply(IndexAdd, zeros, 0, (ctx.positions.reshape(-1) % max(size, 1)),
                              grad.reshape(-1))
        return (flat.reshape(shape), None)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


class ScatterReduce(Op):
    """``scatter_reduce(dim, index, src, reduce, include_self)`` for sum, prod, mean,
    amax, amin."""

    node_name = "ScatterReduceBackward0"
    array_backward = True
    saves_output = True
    # as torch keeps them; dim (as given) below
    saved_names = ("self", "index", "src", "result", "reduce=reduce",
                   "include_self=include_self")

    @staticmethod
    @silenced
    def forward(ctx, a, dim, index, src, reduce, include_self=True):
        select_edges(ctx, (0, 3))  # torch's edges: a, src (no index/mask edge)
        from .indexing import _check_index, _grid_index

        if reduce not in _REDUCTIONS:
            raise ShapeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                             f"got {reduce} ({a._describe()}). Hint: 'amax'/'amin' are the "
                             "maximum and minimum.")
        axis = wrap_dim(dim, a._array.ndim, a)
        _check_index("scatter_reduce", a, axis, index, src)
        xp = a._xp
        where = _grid_index(xp, index._array, axis)
        values = src._array[tuple(slice(size) for size in index._array.shape)]
        x = a._array
        out = x.copy()
        counts = xp.zeros(x.shape, dtype=np.int64)
        xp.add.at(counts, where, 1)
        touched = counts > 0
        if not include_self:
            identity = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
            if x.dtype.kind != "f" and reduce in ("amax", "amin"):
                info = np.iinfo(x.dtype)
                identity = info.min if reduce == "amax" else info.max
            out[touched] = identity
        if reduce in ("sum", "mean"):
            xp.add.at(out, where, values)
            if reduce == "mean":
                total = counts + (1 if include_self else 0)
                divided = out / xp.maximum(total, 1)
                out = xp.where(touched, divided, x).astype(x.dtype) if x.dtype.kind == "f" \
                    else xp.where(touched, out // xp.maximum(total, 1), x)
        elif reduce == "prod":
            xp.multiply.at(out, where, values)
        elif reduce == "amax":
            xp.maximum.at(out, where, values)
        else:
            xp.minimum.at(out, where, values)
        ctx.save_for_backward(a, index, src)
        ctx.axis, ctx.where, ctx.reduce, ctx.given = axis, where, reduce, dim
        ctx.include_self, ctx.counts = include_self, counts
        return out

    @staticmethod
    def backward(ctx, grad):
        from .indexing import Index, IndexAccumulate

        # (under create_graph the saved result is this node's output: it carries the
        # inputs' graph through this node, as torch's does)
        a, _, src, result = ctx.saved_tensors
        needs = ctx.needs_input_grad
        where, reduce = ctx.where, ctx.reduce
        index_shape = where[0].shape if where else ()
        touched = _math.constant(grad, ctx.counts > 0)
        grad_self = grad_src = None
        if reduce == "sum":
            grad_self = grad if ctx.include_self else _math.where(touched, 0.0, grad)
            grad_src_part = _math.apply(Index, grad, where)
        elif reduce == "mean":
            total = _math.constant(grad, (ctx.counts + (1 if ctx.include_self else 0))
                                   .clip(min=1).astype(_math.numpy_dtype(grad)))
            scaled = grad / total
            grad_self = scaled if ctx.include_self else _math.where(touched, 0.0, grad)
            grad_src_part = _math.apply(Index, scaled, where)
        elif reduce == "prod":
            product = grad * result
            grad_self = product / a if ctx.include_self else _math.where(touched, 0.0, grad)
            part_src = src[tuple(slice(size) for size in index_shape)]
            grad_src_part = _math.apply(Index, product, where) / part_src
        else:  # amax / amin: shared evenly among every contributor equal to the result
            part_src = src[tuple(slice(size) for size in index_shape)]
            value = _math.apply(Index, result, where)
            src_hits = _math.like_dtype(part_src == value, grad)
            self_hits = _math.like_dtype(a == result, grad) if ctx.include_self else \
                _math.like_dtype(~touched, grad)
            hits = self_hits + _math.apply(IndexAccumulate, src_hits, shape=tuple(a.shape),
                                           index=where)
            share = grad / hits
            grad_self = share * self_hits
            grad_src_part = _math.apply(Index, share, where) * src_hits
        if needs[3]:
            grad_src = grad_src_part
            if tuple(grad_src.shape) != tuple(src.shape):
                grad_src = _math.apply(IndexAccumulate, grad_src, shape=tuple(src.shape),
                                       index=tuple(slice(size) for size in index_shape))
        return (grad_self if needs[0] else None), None, None, grad_src, None, None


show_saved(ScatterReduce, "dim", lambda node: as_torch_int(node.given))


# -- value-only -------------------------------------------------------------------------
def nonzero(a, *, as_tuple: bool = False):
    """Indices of the nonzero elements: an [n, ndim] int64 tensor, or one per dim."""
    xp = a._xp
    x = a._array
    found = xp.nonzero(x) if x.ndim else xp.nonzero(xp.reshape(x, (1,)))
    if as_tuple:
        if x.ndim == 0:
            return (_wrap(found[0].astype(np.int64)),)
        return tuple(_wrap(axis.astype(np.int64)) for axis in found)
    if x.ndim == 0:
        return _wrap(xp.zeros((found[0].size, 0), dtype=np.int64))
    return _wrap(xp.stack(found, axis=1).astype(np.int64) if found else
                 xp.zeros((0, 0), np.int64))


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """Whether each element is in ``test_elements`` (either may be a number)."""
    source = elements if isinstance(elements, Tensor) else test_elements
    xp = source._xp
    left = elements._array if isinstance(elements, Tensor) else xp.asarray(elements)
    right = test_elements._array if isinstance(test_elements, Tensor) else \
        xp.asarray(test_elements)
    return _wrap(xp.asarray(xp.isin(left, right, invert=invert)))
