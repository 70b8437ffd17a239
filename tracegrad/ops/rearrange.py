"""Ops that move elements without computing new values: flip, roll, rot90, tril/triu,
diag (a copy of the diagonal), diag_embed, diagonal_scatter.

(view/reshape/transpose/permute/expand/cat/stack/split and the ``diagonal`` view live in
shape.py.)
"""

from __future__ import annotations

from .._layout import preserved, row_major
from ..autograd.function import Op
from ..errors import ArgumentTypeError, InvalidValueError, ShapeError
from . import _math
from ._checks import wrap_dim
from ._saved import as_torch_int, as_torch_ints, show_given, show_input_sizes, show_saved


def _dims(dims, tensor) -> tuple:
    if isinstance(dims, int):
        dims = (dims,)
    axes = tuple(wrap_dim(d, tensor._array.ndim, tensor) for d in dims)
    if len(set(axes)) != len(axes):
        raise InvalidValueError(f"dims has duplicates, original flip dims size={len(axes)}, "
                                f"but unique flip dims size={len(set(axes))} ({tensor._describe()})."
                                " Hint: name each dimension once.")
    return axes


class Flip(Op):
    node_name = "FlipBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, dims):
        ctx.given = dims  # as written: grad_fn._saved_dims shows it
        axes = _dims(dims, a)
        ctx.axes = axes
        if not axes:
            return a._array.copy()
        return preserved(a._xp.flip(a._array, axis=axes).copy(), a._array)  # (as torch's)

    @staticmethod
    def backward(ctx, grad):
        return (_math.reapply(Flip, grad, dims=ctx.axes), None)


class Roll(Op):
    node_name = "RollBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, shifts, dims=None):
        x = a._array
        shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        ctx.given = dims  # as written: grad_fn._saved_dims shows it
        if dims is None:
            if len(shifts) != 1:
                raise InvalidValueError(
                    f"roll: shifts and dims must align. shifts: {len(shifts)}, dims: 0 "
                    f"({a._describe()}). Hint: give one dim per shift.")
            ctx.shifts, ctx.axes = shifts, None
            return row_major(a._xp.roll(x, shifts[0]))  # (torch: a contiguous result)
        axes = (dims,) if isinstance(dims, int) else tuple(dims)
        if len(axes) != len(shifts):
            raise InvalidValueError(
                f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(axes)} "
                f"({a._describe()}). Hint: give one dim per shift.")
        axes = tuple(wrap_dim(d, x.ndim, a) for d in axes)
        ctx.shifts, ctx.axes = shifts, axes
        return row_major(a._xp.roll(x, shifts, axis=axes))

    @staticmethod
    def backward(ctx, grad):
        back = tuple(-shift for shift in ctx.shifts)
        return (_math.reapply(Roll, grad, back, ctx.axes), None, None)


class Rot90(Op):
    node_name = "Rot90Backward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, k=1, dims=(0, 1)):
        ctx.given = dims  # as written: grad_fn._saved_dims shows it
        x = a._array
        dims = tuple(dims)
        if len(dims) != 2:
            raise InvalidValueError(f"expected total rotation dims == 2, but got dims = "
                                    f"{len(dims)} ({a._describe()})")
        if x.ndim < 2:
            raise InvalidValueError(f"expected total dims >= 2, but got total dims = "
                                    f"{x.ndim} ({a._describe()}). Hint: rot90 turns a plane "
                                    "of two dimensions.")
        axes = (wrap_dim(dims[0], x.ndim, a), wrap_dim(dims[1], x.ndim, a))
        if axes[0] == axes[1]:
            raise InvalidValueError(
                f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 "
                f"= {dims[1]} ({a._describe()})")
        ctx.k, ctx.axes = k, axes
        # torch's steps, for torch's layout: a flip (a copy in the input's layout), then for
        # an odd k the two dims swapped (a transposed result); k % 4 == 0 a contiguous clone
        xp, turn = a._xp, k % 4
        if turn == 0:
            return x.copy(order="C")
        if turn == 2:
            return preserved(xp.flip(x, axis=axes).copy(), x)
        flipped = preserved(xp.flip(x, axis=axes[1] if turn == 1 else axes[0]).copy(), x)
        return xp.swapaxes(flipped, *axes)

    @staticmethod
    def backward(ctx, grad):
        return (_math.apply(Rot90, grad, -ctx.k, ctx.axes), None, None)


def _check_matrix(op_name: str, a) -> None:
    if a._array.ndim < 2:
        raise ShapeError(f"{op_name}: input tensor must have at least 2 dimensions "
                         f"({a._describe()}). Hint: {op_name} keeps a triangle of a matrix; "
                         "use unsqueeze(0) or diag() for a vector.")


class Tril(Op):
    node_name = "TrilBackward0"
    array_backward = True
    # grad_fn._saved_diagonal below (as torch shows it: -1 reads 2**64 - 1)

    @staticmethod
    def forward(ctx, a, diagonal=0):
        _check_matrix("tril", a)
        ctx.diagonal = diagonal
        return row_major(a._xp.tril(a._array, diagonal))  # (torch: a contiguous result)

    @staticmethod
    def backward(ctx, grad):
        return (_math.reapply(Tril, grad, ctx.diagonal), None)


class Triu(Op):
    node_name = "TriuBackward0"
    array_backward = True
    # grad_fn._saved_diagonal below (as torch shows it: -1 reads 2**64 - 1)

    @staticmethod
    def forward(ctx, a, diagonal=0):
        _check_matrix("triu", a)
        ctx.diagonal = diagonal
        return row_major(a._xp.triu(a._array, diagonal))

    @staticmethod
    def backward(ctx, grad):
        return (_math.reapply(Triu, grad, ctx.diagonal), None)


# -- diagonals ---------------------------------------------------------------------------
def diagonal_view(xp, x, offset: int, axis1: int, axis2: int):
    """A writable strided view of a diagonal, placed last (as torch and NumPy place it).

    NumPy's own ``diagonal`` gives a read-only view, and torch's diagonal is writable
    (``x.diagonal().fill_(0)`` changes x), hence ``as_strided``.
    """
    size1, size2 = x.shape[axis1], x.shape[axis2]
    if offset >= 0:
        length = max(min(size1, size2 - offset), 0)
        start = (0, offset)
    else:
        length = max(min(size1 + offset, size2), 0)
        start = (-offset, 0)
    rest = [axis for axis in range(x.ndim) if axis not in (axis1, axis2)]
    shape = tuple(x.shape[axis] for axis in rest) + (length,)
    strides = tuple(x.strides[axis] for axis in rest) + (x.strides[axis1] + x.strides[axis2],)
    index = [slice(None)] * x.ndim
    if length:
        index[axis1], index[axis2] = slice(start[0], None), slice(start[1], None)
        base = x[tuple(index)]
    else:
        base = x
    return xp.lib.stride_tricks.as_strided(base, shape=shape, strides=strides)


def _diagonal_axes(a, dim1: int, dim2: int) -> tuple:
    ndim = a._array.ndim
    axis1, axis2 = wrap_dim(dim1, ndim, a), wrap_dim(dim2, ndim, a)
    if axis1 == axis2:
        raise InvalidValueError(f"diagonal dimensions cannot be identical {dim1}, {dim2} "
                                f"({a._describe()})")
    return axis1, axis2


class DiagonalCopy(Op):
    """``torch.diag(matrix)``: the diagonal as a new tensor (torch names it so). The view
    form, ``diagonal``, is shape.Diagonal."""

    node_name = "DiagonalBackward0_copy"
    array_backward = True

    @staticmethod
    def forward(ctx, a, offset=0, dim1=0, dim2=1):
        if a._array.ndim < 2:
            raise InvalidValueError(
                f"diagonal(): expected a tensor with at least 2 dimensions, got "
                f"{a._describe()}. Hint: diag() of a vector builds a matrix instead.")
        axis1, axis2 = _diagonal_axes(a, dim1, dim2)
        ctx.offset, ctx.axes, ctx.input_shape = offset, (axis1, axis2), a._array.shape
        ctx.given = (offset, dim1, dim2)  # as written: grad_fn._saved_offset, _dim1, _dim2
        return diagonal_view(a._xp, a._array, offset, axis1, axis2).copy()

    @staticmethod
    def backward(ctx, grad):
        zeros = _math.xp(grad).zeros(ctx.input_shape, dtype=_math.numpy_dtype(grad))
        return (_math.apply(DiagonalScatter, zeros, grad, ctx.offset, *ctx.axes),
                None, None, None)


class DiagonalScatter(Op):
    """``diagonal_scatter(input, src, offset, dim1, dim2)``: input with its diagonal
    replaced by src."""

    node_name = "DiagonalScatterBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, src, offset=0, dim1=0, dim2=1):
        axis1, axis2 = _diagonal_axes(a, dim1, dim2)
        ctx.given = (offset, dim1, dim2)  # as written: grad_fn._saved_offset, _dim1, _dim2
        out = a._array.copy()
        view = diagonal_view(a._xp, out, offset, axis1, axis2)
        if view.shape != src._array.shape:
            raise ShapeError(
                f"diagonal_scatter: src must have shape {list(view.shape)}, got "
                f"{src._describe()}")
        view[...] = src._array
        ctx.offset, ctx.axes = offset, (axis1, axis2)
        return out

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        grad_input = grad_src = None
        if needs[0]:
            zeros = _math.xp(grad).zeros(ctx._input_meta[1][0], dtype=_math.numpy_dtype(grad))
            grad_input = _math.apply(DiagonalScatter, grad, zeros, ctx.offset, *ctx.axes)
        if needs[1]:
            grad_src = _math.apply(DiagonalCopy, grad, ctx.offset, *ctx.axes)
        return grad_input, grad_src, None, None, None


class DiagEmbed(Op):
    """``diag_embed(input, offset, dim1, dim2)``: the last dim of input placed on the
    diagonal of two new dims."""

    node_name = "DiagEmbedBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, offset=0, dim1=-2, dim2=-1):
        x = a._array
        ndim = x.ndim + 1
        ctx.given = (offset, dim1, dim2)  # as written: grad_fn._saved_offset, _dim1, _dim2
        axis1, axis2 = wrap_dim(dim1, ndim, a), wrap_dim(dim2, ndim, a)
        if axis1 == axis2:
            raise InvalidValueError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        size = x.shape[-1] + abs(offset) if x.ndim else 1 + abs(offset)
        rest = list(x.shape[:-1])
        shape = []
        for axis in range(ndim):
            if axis in (axis1, axis2):
                shape.append(size)
            else:
                shape.append(rest.pop(0))
        out = a._xp.zeros(tuple(shape), dtype=x.dtype)
        diagonal_view(a._xp, out, offset, axis1, axis2)[...] = x
        ctx.offset, ctx.axes = offset, (axis1, axis2)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (_math.apply(DiagonalCopy, grad, ctx.offset, *ctx.axes), None, None, None)


def diag(a, diagonal: int = 0):
    """``torch.diag``: a vector's diagonal matrix, or a matrix's diagonal."""
    ndim = a._array.ndim
    if ndim == 1:
        return DiagEmbed.apply(a, diagonal, -2, -1)  # (torch's diag_embed defaults)
    if ndim == 2:
        return DiagonalCopy.apply(a, diagonal, 0, 1)
    raise InvalidValueError(f"diag(): Supports 1D or 2D tensors. Got {ndim}D "
                            f"({a._describe()}). Hint: diagonal(offset, dim1, dim2) takes "
                            "the diagonal of batches.")


def check_int_sequence(op_name: str, name: str, value) -> tuple:
    if isinstance(value, int):
        return (value,)
    if not all(isinstance(item, int) for item in value):
        raise ArgumentTypeError(f"{op_name}(): argument '{name}' must be tuple of ints, but "
                                f"found element of type {type(value[0]).__name__}")
    return tuple(value)

show_saved(Flip, "dims", lambda node: as_torch_ints(node.given))

show_saved(Rot90, "dims", lambda node: as_torch_ints(node.given))
show_saved(Rot90, "k", lambda node: as_torch_int(node.k))

show_saved(Tril, "diagonal", lambda node: as_torch_int(node.diagonal))

show_saved(Triu, "diagonal", lambda node: as_torch_int(node.diagonal))


show_saved(Roll, "shifts", lambda node: as_torch_ints(node.shifts))
show_saved(Roll, "dims", lambda node: as_torch_ints(node.given) or ())
for _op in (DiagonalCopy, DiagonalScatter, DiagEmbed):
    show_given(_op, ("offset", "dim1", "dim2"))
show_input_sizes(DiagonalCopy)
