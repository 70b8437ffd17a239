"""Shape ops: view/reshape, transpose/permute, (un)squeeze, expand, cat/stack, clone."""

from __future__ import annotations

from ..autograd.function import Op
from ..errors import ShapeError
from ._checks import expand_shape, narrow_start  # torch's input checks (issue 16)


def wrap_dim(dim: int, ndim: int) -> int:
    """A non-negative axis for ``dim``, with PyTorch's IndexError when out of range."""
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but "
            f"got {dim})")
    return dim + rank if dim < 0 else dim


def infer_shape(shape, numel: int, source) -> tuple:
    """Resolve one -1 in a requested shape; a clear error when it cannot fit."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(size) for size in shape)
    unknown = [axis for axis, size in enumerate(shape) if size == -1]
    known = 1
    for size in shape:
        if size != -1:
            known *= size
    if len(unknown) > 1:
        raise ShapeError("only one dimension can be inferred")
    if unknown:
        if known == 0 or numel % known:
            raise ShapeError(f"shape '{list(shape)}' is invalid for input of size {numel} "
                             f"({source._describe()})")
        shape = shape[:unknown[0]] + (numel // known,) + shape[unknown[0] + 1:]
    elif known != numel:
        raise ShapeError(f"shape '{list(shape)}' is invalid for input of size {numel} "
                         f"({source._describe()})")
    return shape


class Reshape(Op):
    node_name = "ViewBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        ctx.input_shape = a._array.shape
        return a._array.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return (Reshape.apply(grad, shape=ctx.input_shape),)


class View(Reshape):
    """Like reshape, but refuses when the result could not share storage (as torch does)."""

    node_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, a, shape):
        x = a._array
        ctx.input_shape = x.shape
        try:
            # copy=False raises instead of copying when the strides do not allow a view
            view = x.reshape(shape, copy=False)
        except TypeError:  # an array module whose reshape has no copy= (cupy, numpy < 2.1)
            view = x.reshape(shape)
        except ValueError:
            raise ShapeError(
                f"view size is not compatible with input tensor's size and stride (at least "
                f"one dimension spans across two contiguous subspaces) for "
                f"{a._describe()}. Use .reshape(...) instead.") from None
        return view


class Transpose(Op):
    node_name = "TransposeBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, dim0, dim1):
        ndim = a._array.ndim
        ctx.dims = (wrap_dim(dim0, ndim), wrap_dim(dim1, ndim))
        return a._xp.swapaxes(a._array, *ctx.dims) if ndim > 1 else a._array.view()

    @staticmethod
    def backward(ctx, grad):
        return (Transpose.apply(grad, *ctx.dims), None, None)


class T(Op):
    node_name = "TBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a):
        if a._array.ndim > 2:
            raise ShapeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                             f"{a._array.ndim}D ({a._describe()}). Hint: use .transpose(0, 1) "
                             "or .mT.")
        return a._array.T

    @staticmethod
    def backward(ctx, grad):
        return (T.apply(grad),)


class Permute(Op):
    node_name = "PermuteBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, dims):
        ndim = a._array.ndim
        dims = tuple(wrap_dim(d, ndim) for d in dims)
        if sorted(dims) != list(range(ndim)):
            raise ShapeError(f"permute(): dims {list(dims)} are not a permutation of the "
                             f"{ndim} dimensions of {a._describe()}")
        ctx.dims = dims
        return a._array.transpose(dims)

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for position, axis in enumerate(ctx.dims):
            inverse[axis] = position
        return (Permute.apply(grad, dims=tuple(inverse)),)


class Unsqueeze(Op):
    node_name = "UnsqueezeBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, dim):
        axis = wrap_dim(dim, a._array.ndim + 1)
        ctx.axis = axis
        return a._xp.expand_dims(a._array, axis)

    @staticmethod
    def backward(ctx, grad):
        return (Squeeze.apply(grad, dim=ctx.axis),)


class Squeeze(Op):
    node_name = "SqueezeBackward1"
    is_view = True

    @staticmethod
    def forward(ctx, a, dim=None):
        x = a._array
        ctx.input_shape = x.shape
        if dim is None:
            return x.reshape(tuple(size for size in x.shape if size != 1))
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        axes = tuple(axis for axis in (wrap_dim(d, x.ndim) for d in dims)
                     if x.ndim and x.shape[axis] == 1)
        return x.squeeze(axes) if axes else x.view()

    @staticmethod
    def backward(ctx, grad):
        return (Reshape.apply(grad, shape=ctx.input_shape),)


class SqueezeAll(Squeeze):
    node_name = "SqueezeBackward0"


class Expand(Op):
    node_name = "ExpandBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        x = a._array
        resolved = expand_shape(a, shape)
        ctx.input_shape = x.shape
        return a._xp.broadcast_to(x, resolved)

    @staticmethod
    def backward(ctx, grad):
        from .reduce import sum_to

        return (sum_to(grad, ctx.input_shape),)


class Clone(Op):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, a):
        return a._array.copy()

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


class Cat(Op):
    node_name = "CatBackward0"

    @staticmethod
    def forward(ctx, *tensors, dim=0):
        from ._operands import check_same_device

        if not tensors:
            raise ShapeError("cat(): expected a non-empty list of Tensors")
        check_same_device("cat", tensors)
        arrays = [t._array for t in tensors]
        ndim = arrays[0].ndim
        axis = wrap_dim(dim, ndim)
        for index, array in enumerate(arrays):
            if array.ndim != ndim or any(
                    array.shape[d] != arrays[0].shape[d] for d in range(ndim) if d != axis):
                raise ShapeError(
                    f"cat(): Sizes of tensors must match except in dimension {axis}. Expected "
                    f"{list(arrays[0].shape)} (tensor 0) but got {list(array.shape)} for "
                    f"tensor number {index} in the list.")
        ctx.axis = axis
        ctx.sizes = [array.shape[axis] for array in arrays]
        dtype = arrays[0].dtype
        for array in arrays[1:]:
            if array.dtype != dtype:
                from .. import _dtype

                dtype = _dtype.promote(dtype, array.dtype)
        return tensors[0]._xp.concatenate([a.astype(dtype, copy=False) for a in arrays],
                                          axis=axis)

    @staticmethod
    def backward(ctx, grad):
        from .indexing import select_range

        grads, start = [], 0
        for size, needed in zip(ctx.sizes, ctx.needs_input_grad):
            grads.append(select_range(grad, ctx.axis, start, start + size) if needed else None)
            start += size
        return tuple(grads)


class Stack(Op):
    node_name = "StackBackward0"

    @staticmethod
    def forward(ctx, *tensors, dim=0):
        from ._operands import check_same_device

        if not tensors:
            raise ShapeError("stack expects a non-empty TensorList")
        check_same_device("stack", tensors)
        first = tensors[0]._array.shape
        for index, tensor in enumerate(tensors):
            if tensor._array.shape != first:
                raise ShapeError(
                    f"stack expects each tensor to be equal size, but got {list(first)} at "
                    f"entry 0 and {list(tensor._array.shape)} at entry {index}")
        axis = wrap_dim(dim, len(first) + 1)
        ctx.axis = axis
        return tensors[0]._xp.stack([t._array for t in tensors], axis=axis)

    @staticmethod
    def backward(ctx, grad):
        from .indexing import select_index

        return tuple(select_index(grad, ctx.axis, index) if needed else None
                     for index, needed in enumerate(ctx.needs_input_grad))


class Repeat(Op):
    """``x.repeat(*sizes)``: tile the tensor; the gradient sums the tiles back."""

    node_name = "RepeatBackward0"

    @staticmethod
    def forward(ctx, a, repeats):
        x = a._array
        if len(repeats) < x.ndim:
            raise ShapeError(
                f"Number of dimensions of repeat dims ({len(repeats)}) can not be smaller than "
                f"number of dimensions of tensor ({x.ndim}) for {a._describe()}")
        ctx.input_shape, ctx.repeats = x.shape, tuple(repeats)
        return a._xp.tile(x, repeats)

    @staticmethod
    def backward(ctx, grad):
        repeats, input_shape = ctx.repeats, ctx.input_shape
        shape = (1,) * (len(repeats) - len(input_shape)) + tuple(input_shape)
        # Each output dim d is (repeats[d], shape[d]) laid out tile-major: split, then sum.
        split = []
        for count, size in zip(repeats, shape):
            split.extend((count, size))
        tiles = Reshape.apply(grad, shape=tuple(split))
        from .reduce import Sum

        summed = Sum.apply(tiles, dim=tuple(range(0, len(split), 2)), keepdim=False)
        return (Reshape.apply(summed, shape=tuple(input_shape)), None)


def split(tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """``torch.split``: pieces of ``split_size`` along ``dim`` (the last may be smaller), or
    pieces of the listed sizes. Each piece is a view (a SliceBackward0 node).

    >>> import tracegrad as torch
    >>> [piece.tolist() for piece in torch.arange(5).split(2)]
    [[0, 1], [2, 3], [4]]
    """
    from .indexing import select_range

    axis = wrap_dim(dim, tensor._array.ndim)
    length = tensor._array.shape[axis]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise ValueError(f"split expects split_size be positive, but got {step}")
        sizes = [min(step, length - start) for start in range(0, length, step)] or [0]
    else:
        sizes = [int(size) for size in split_size_or_sections]
        if sum(sizes) != length:
            raise ShapeError(
                f"split_with_sizes expects split_sizes to sum exactly to {length} (input "
                f"tensor's size at dimension {axis}), but got split_sizes={sizes}")
    pieces, start = [], 0
    for size in sizes:
        pieces.append(select_range(tensor, axis, start, start + size))
        start += size
    return tuple(pieces)


def chunk(tensor, chunks: int, dim: int = 0) -> tuple:
    """``torch.chunk``: at most ``chunks`` pieces of equal size (the last may be smaller)."""
    if chunks <= 0:
        raise ValueError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    length = tensor._array.shape[wrap_dim(dim, tensor._array.ndim)]
    return split(tensor, max(1, -(-length // chunks)), dim)


def unbind(tensor, dim: int = 0) -> tuple:
    """``torch.unbind``: the slices along ``dim``, that dimension removed."""
    from .indexing import select_index

    axis = wrap_dim(dim, tensor._array.ndim)
    return tuple(select_index(tensor, axis, index) for index in range(tensor._array.shape[axis]))


def narrow(tensor, dim: int, start: int, length: int):
    from .indexing import select_range

    axis = wrap_dim(dim, tensor._array.ndim)
    start = narrow_start(tensor, axis, start, length)
    return select_range(tensor, axis, start, start + length)
