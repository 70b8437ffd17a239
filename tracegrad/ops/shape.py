"""Shape ops: view/reshape, transpose/permute, (un)squeeze, expand, cat/stack, clone."""

from __future__ import annotations

from .. import _memory_format
from .._layout import preserved, row_major
from ..autograd.function import Op
from ..errors import ShapeError
from . import _math
from ._checks import expand_shape, narrow_start  # torch's input checks (issue 16)
from ._saved import as_torch_int, as_torch_ints, show_given, show_input_sizes, show_saved


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


def _reshaped_view(array, shape):
    """``array`` reshaped without copying, or None when its strides do not allow it."""
    try:
        # copy=False raises instead of copying when the strides do not allow a view
        return array.reshape(shape, copy=False)
    except TypeError:  # an array module whose reshape has no copy= (cupy, numpy < 2.1)
        from .. import backends

        view = array.reshape(shape)
        return view if backends.array_module(array).may_share_memory(view, array) else None
    except ValueError:
        return None


class View(Op):
    """``x.view(shape)``: the same storage seen with another shape; refuses (as torch does)
    when the strides do not allow that."""

    node_name = "ViewBackward0"
    array_backward = True
    saved_names = ("self_sym_sizes=input_shape",)  # grad_fn._saved_<name>, as PyTorch names them
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        x = a._array
        ctx.input_shape = x.shape
        view = _reshaped_view(x, shape)
        if view is None:
            raise ShapeError(
                f"view size is not compatible with input tensor's size and stride (at least "
                f"one dimension spans across two contiguous subspaces) for "
                f"{a._describe()}. Use .reshape(...) instead.")
        return view

    @staticmethod
    def backward(ctx, grad):
        return (grad.reshape(ctx.input_shape),)  # Tensor.reshape is this module's reshape


class UnsafeView(Op):
    """The copying half of ``reshape`` (after a clone): not a view of the input."""

    node_name = "UnsafeViewBackward0"
    array_backward = True
    saved_names = ("self_sym_sizes=input_shape",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, shape):
        ctx.input_shape = a._array.shape
        return a._array.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return (grad.reshape(ctx.input_shape),)  # Tensor.reshape is this module's reshape


class ReshapeAlias(View):
    """What ``reshape`` records for a tensor that is not contiguous but whose strides allow
    the new shape as a view: torch's ``_reshape_alias``, a view like ``view``'s."""

    node_name = "ReshapeAliasBackward0"


def reshape(tensor, shape):
    """``torch.reshape``, as PyTorch decides: a contiguous tensor's view (ViewBackward0);
    else a view when the strides allow one (ReshapeAliasBackward0); else a copy
    (CloneBackward0 then UnsafeViewBackward0)."""
    shape = tuple(shape)
    array = tensor._array
    if array.flags.c_contiguous:
        return View.apply(tensor, shape=shape)
    if array.shape == shape or _reshaped_view(array, shape) is not None:
        return ReshapeAlias.apply(tensor, shape=shape)
    # (torch's ``clone(at::MemoryFormat::Contiguous)``, then the view)
    return UnsafeView.apply(Clone.apply(tensor, _memory_format.contiguous_format), shape=shape)


class Reshape:
    """``Reshape.apply(t, shape=...)``: what backward formulas call; see ``reshape``."""

    @staticmethod
    def apply(tensor, shape):
        return reshape(tensor, shape)


class Alias(Op):
    """``x[...]``: the whole tensor as a new view of itself."""

    node_name = "AliasBackward0"
    array_backward = True
    is_view = True

    @staticmethod
    def forward(ctx, a):
        return a._array.view()

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


class Transpose(Op):
    node_name = "TransposeBackward0"
    array_backward = True
    is_view = True

    @staticmethod
    def forward(ctx, a, dim0, dim1):
        ctx.given = (dim0, dim1)  # as written: grad_fn._saved_dim0/1 show them
        ndim = a._array.ndim
        ctx.dims = (wrap_dim(dim0, ndim), wrap_dim(dim1, ndim))
        return a._xp.swapaxes(a._array, *ctx.dims) if ndim > 1 else a._array.view()

    @staticmethod
    def backward(ctx, grad):
        return (_math.transpose(grad, *ctx.dims), None, None)


class T(Op):
    node_name = "TBackward0"
    array_backward = True
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
        return (_math.t(grad),)


class Permute(Op):
    node_name = "PermuteBackward0"
    array_backward = True
    is_view = True

    @staticmethod
    def forward(ctx, a, dims):
        ctx.given = tuple(dims)  # as written: grad_fn._saved_dims shows it
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
        return (_math.permute(grad, tuple(inverse)),)


class Unsqueeze(Op):
    node_name = "UnsqueezeBackward0"
    array_backward = True
    is_view = True

    @staticmethod
    def forward(ctx, a, dim):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        axis = wrap_dim(dim, a._array.ndim + 1)
        ctx.axis = axis
        return a._xp.expand_dims(a._array, axis)

    @staticmethod
    def backward(ctx, grad):
        return (grad.squeeze(ctx.axis),)  # Tensor.squeeze(int) is Squeeze


class Squeeze(Op):
    """``x.squeeze(dim)`` with one dim (SqueezeBackward1)."""

    node_name = "SqueezeBackward1"
    array_backward = True
    saved_names = ("self_sym_sizes=input_shape",)  # grad_fn._saved_<name>, as PyTorch names them
    is_view = True

    @staticmethod
    def forward(ctx, a, dim=None):
        x = a._array
        ctx.input_shape = x.shape
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        if dim is None:
            return x.reshape(tuple(size for size in x.shape if size != 1))
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        axes = tuple(axis for axis in (wrap_dim(d, x.ndim) for d in dims)
                     if x.ndim and x.shape[axis] == 1)
        return x.squeeze(axes) if axes else x.view()

    @staticmethod
    def backward(ctx, grad):
        return (grad.reshape(ctx.input_shape),)  # Tensor.reshape is this module's reshape


class SqueezeAll(Squeeze):
    """``x.squeeze()``: every size-1 dim (SqueezeBackward0)."""

    node_name = "SqueezeBackward0"


class SqueezeDims(Squeeze):
    """``x.squeeze((0, 2))``: several dims at once (SqueezeBackward2)."""

    node_name = "SqueezeBackward2"


class Expand(Op):
    node_name = "ExpandBackward0"
    array_backward = True
    saved_names = ("self_sym_sizes=input_shape",)  # grad_fn._saved_<name>, as PyTorch names them
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        x = a._array
        resolved = expand_shape(a, shape)  # torch's checks and messages (ops/_checks.py)
        ctx.input_shape = x.shape
        lead = len(resolved) - x.ndim
        if all(size == 1 for size in resolved[:lead]) and resolved[lead:] == x.shape:
            return x.reshape(resolved)  # nothing repeats: a writable view, as in torch
        return a._xp.broadcast_to(x, resolved)

    @staticmethod
    def backward(ctx, grad):
        return (_math.sum_to(grad, ctx.input_shape),)


def check_expandable(target: tuple, shape: tuple, tensor=None) -> None:
    """PyTorch's expand errors, for ``expand`` and for values assigned into a slice."""
    if len(target) < len(shape):
        raise ShapeError(
            f"expand({_torch_type(tensor)}{{{list(shape)}}}, size={list(target)}): the number "
            f"of sizes provided ({len(target)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(shape)})")
    lead = len(target) - len(shape)
    for axis, size in enumerate(shape):
        wanted = target[lead + axis]
        if size != 1 and size != wanted:
            raise ShapeError(
                f"The expanded size of the tensor ({wanted}) must match the existing size "
                f"({size}) at non-singleton dimension {lead + axis}.  Target sizes: "
                f"{list(target)}.  Tensor sizes: {list(shape)}")


_TORCH_TYPES = {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor",
                "int32": "IntTensor", "bool": "BoolTensor", "float16": "HalfTensor",
                "uint8": "ByteTensor", "int8": "CharTensor", "int16": "ShortTensor"}


def _torch_type(tensor) -> str:
    name = tensor.dtype.name if tensor is not None else "float32"
    return "tracegrad." + _TORCH_TYPES.get(name, name)


class Clone(Op):
    node_name = "CloneBackward0"
    array_backward = True

    @staticmethod
    def inference_overload(a, *rest):  # (autograd/inference.py)
        from .arith import copy_into_new

        return copy_into_new(a)

    @staticmethod
    def forward(ctx, a, memory_format=None):
        # torch.preserve_format (the default): the input's layout, as torch's empty_like
        if memory_format is None or memory_format is _memory_format.preserve_format:
            return preserved(a._array.copy(order="K"), a._array)
        return a._array.copy()  # torch.contiguous_format

    @staticmethod
    def backward(ctx, grad):
        return (grad, None)


class Cat(Op):
    node_name = "CatBackward0"
    array_backward = True

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
        ctx.axis, ctx._dim = axis, dim  # _dim as given: grad_fn._saved_dim shows it
        ctx.sizes = [array.shape[axis] for array in arrays]
        dtype = arrays[0].dtype
        for array in arrays[1:]:
            if array.dtype != dtype:
                from .. import _dtype

                dtype = _dtype.promote(dtype, array.dtype)
        # (torch writes into a fresh contiguous tensor; NumPy keeps its inputs' layout)
        return row_major(tensors[0]._xp.concatenate(
            [a.astype(dtype, copy=False) for a in arrays], axis=axis))

    @staticmethod
    def backward(ctx, grad):
        grads, start = [], 0
        for size, needed in zip(ctx.sizes, ctx.needs_input_grad):
            grads.append(_math.narrow(grad, ctx.axis, start, start + size) if needed else None)
            start += size
        return tuple(grads)


show_saved(Cat, "dim", lambda node: as_torch_int(node._dim))


class Stack(Op):
    node_name = "StackBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, *tensors, dim=0):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
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
        return row_major(tensors[0]._xp.stack([t._array for t in tensors], axis=axis))

    @staticmethod
    def backward(ctx, grad):
        return tuple(_math.select(grad, ctx.axis, index) if needed else None
                     for index, needed in enumerate(ctx.needs_input_grad))


class Repeat(Op):
    """``x.repeat(*sizes)``: tile the tensor; the gradient sums the tiles back."""

    node_name = "RepeatBackward0"
    array_backward = True
    saved_names = ("repeats=repeats", "self_sym_sizes=input_shape")

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
        tiles = _math.apply(Reshape, grad, shape=tuple(split))
        from .reduce import Sum

        summed = _math.apply(Sum, tiles, dim=tuple(range(0, len(split), 2)), keepdim=False)
        return (_math.apply(Reshape, summed, shape=tuple(input_shape)), None)


class _Pieces:
    """Several views of the input along one dim (split, split_with_sizes): each output is a
    view, and an in-place change through one of them is refused, as in torch. (A mixin, so
    that the registry lists only the two ops.)"""

    is_view = True
    array_backward = True

    @staticmethod
    def forward(ctx, a, sizes, dim, given=None, split_size=None):
        x = a._array
        ctx.axis, ctx.sizes = dim, tuple(sizes)
        # as written: grad_fn._saved_dim and _saved_split_size show them
        ctx.given, ctx.split_size = (dim if given is None else given), split_size
        pieces, start = [], 0
        lead = (slice(None),) * dim
        for size in sizes:
            pieces.append(x[lead + (slice(start, start + size),)])
            start += size
        return tuple(pieces)

    @staticmethod
    def backward(ctx, *grads):
        return (_math.cat(grads, ctx.axis), None, None)


class Split(_Pieces, Op):
    node_name = "SplitBackward0"


class SplitWithSizes(_Pieces, Op):
    node_name = "SplitWithSizesBackward0"


class UnsafeSplit(_Pieces, Op):
    """``unsafe_split``: the same pieces, sharing storage, but not tracked as views (an
    in-place change through one is allowed and autograd does not see the others change)."""

    node_name = "UnsafeSplitBackward0"
    is_view = False


class UnsafeSplitWithSizes(_Pieces, Op):
    node_name = "UnsafeSplitWithSizesBackward0"
    is_view = False


class Unbind(Op):
    """``x.unbind(dim)``: every slice along ``dim``, each a view with that dim removed."""

    node_name = "UnbindBackward0"
    is_view = True
    array_backward = True

    @staticmethod
    def forward(ctx, a, dim):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        ctx.axis = dim
        lead = (slice(None),) * dim
        return tuple(x[lead + (index, Ellipsis)] for index in range(x.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        return (_math.stack(grads, ctx.axis), None)


def split(tensor, split_size_or_sections, dim: int = 0, unsafe: bool = False) -> tuple:
    """``torch.split``: pieces of ``split_size`` along ``dim`` (the last may be smaller), or
    pieces of the listed sizes. Each piece is a view (SplitBackward0 or
    SplitWithSizesBackward0, one node for all the pieces).

    >>> import tracegrad as torch
    >>> [piece.tolist() for piece in torch.arange(5).split(2)]
    [[0, 1], [2, 3], [4]]
    """
    axis = wrap_dim(dim, tensor._array.ndim)
    length = tensor._array.shape[axis]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0 or (step == 0 and length):
            raise ValueError(f"split expects split_size be non-negative, but got split_size={step}"
                             if step < 0 else "split_size can only be 0 if dimension size is 0, "
                             f"but got dimension size of {length}")
        sizes = [min(step, length - start) for start in range(0, length, step)] if step else []
        return (UnsafeSplit if unsafe else Split).apply(tensor, sizes or [0], axis, given=dim,
                                                        split_size=step)
    return split_with_sizes(tensor, split_size_or_sections, dim, unsafe)


def split_with_sizes(tensor, split_sizes, dim: int = 0, unsafe: bool = False) -> tuple:
    """Pieces of the listed sizes along ``dim`` (SplitWithSizesBackward0)."""
    axis = wrap_dim(dim, tensor._array.ndim)
    length = tensor._array.shape[axis]
    sizes = [int(size) for size in split_sizes]
    if sum(sizes) != length or any(size < 0 for size in sizes):
        raise ShapeError(
            f"split_with_sizes expects split_sizes to sum exactly to {length} (input "
            f"tensor's size at dimension {axis}), but got split_sizes={sizes} "
            f"({tensor._describe()}). Hint: tensor_split cuts at indices instead.")
    return (UnsafeSplitWithSizes if unsafe else SplitWithSizes).apply(tensor, sizes, axis,
                                                                      given=dim)


def chunk(tensor, chunks: int, dim: int = 0, unsafe: bool = False) -> tuple:
    """``torch.chunk``: at most ``chunks`` pieces of equal size (the last may be smaller)."""
    if chunks <= 0:
        raise ValueError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    length = tensor._array.shape[wrap_dim(dim, tensor._array.ndim)]
    return split(tensor, max(1, -(-length // chunks)), dim, unsafe)


def unbind(tensor, dim: int = 0) -> tuple:
    """``torch.unbind``: the slices along ``dim``, that dimension removed."""
    if tensor._array.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return Unbind.apply(tensor, wrap_dim(dim, tensor._array.ndim))


def narrow(tensor, dim: int, start: int, length: int):
    """``torch.narrow``: ``length`` positions from ``start`` along ``dim`` (a view)."""
    from .indexing import slice_view

    axis = wrap_dim(dim, tensor._array.ndim)
    start = narrow_start(tensor, axis, start, length)  # torch's checks (ops/_checks.py)
    return slice_view(tensor, axis, start, start + length, 1)


# -- diagonals and arbitrary strides -----------------------------------------------------
def _as_strided(array, shape, strides):
    from .. import backends

    return backends.array_module(array).lib.stride_tricks.as_strided(
        array, shape=tuple(shape), strides=tuple(strides))


class Diagonal(Op):
    """``x.diagonal(offset, dim1, dim2)``: a view of the diagonal, as the last dim."""

    node_name = "DiagonalBackward0"
    array_backward = True
    is_view = True

    @staticmethod
    def forward(ctx, a, offset=0, dim1=0, dim2=1):
        x = a._array
        d1, d2 = wrap_dim(dim1, x.ndim), wrap_dim(dim2, x.ndim)
        if d1 == d2:
            raise ShapeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        ctx.input_shape, ctx.offset, ctx.dim1, ctx.dim2 = x.shape, offset, d1, d2
        ctx.given = (offset, dim1, dim2)  # as written: grad_fn._saved_offset, _dim1, _dim2
        if offset >= 0:
            length = max(0, min(x.shape[d1], x.shape[d2] - offset))
            start = [0] * x.ndim
            start[d2] = min(offset, x.shape[d2])
        else:
            length = max(0, min(x.shape[d1] + offset, x.shape[d2]))
            start = [0] * x.ndim
            start[d1] = min(-offset, x.shape[d1])
        corner = x[tuple(slice(first, None) for first in start)]
        kept = [axis for axis in range(x.ndim) if axis not in (d1, d2)]
        shape = [x.shape[axis] for axis in kept] + [length]
        strides = [x.strides[axis] for axis in kept] + [x.strides[d1] + x.strides[d2]]
        return _as_strided(corner, shape, strides)

    @staticmethod
    def backward(ctx, grad):
        return (_math.apply(DiagonalBackward, grad, ctx.input_shape, ctx.offset, ctx.dim1,
                            ctx.dim2),
                None, None, None)


class DiagonalBackward(Op):
    """zeros(shape) with ``grad`` on the diagonal: the backward of ``diagonal``."""

    node_name = "DiagonalBackwardBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, grad, shape, offset, dim1, dim2):
        ctx.offset, ctx.dim1, ctx.dim2 = offset, dim1, dim2
        out = grad._xp.zeros(shape, dtype=grad._array.dtype)
        target = Diagonal.forward(ctx, _wrap(out), offset, dim1, dim2)
        target[...] = grad._array
        return out

    @staticmethod
    def backward(ctx, grad):
        return (_math.apply(Diagonal, grad, ctx.offset, ctx.dim1, ctx.dim2),
                None, None, None, None)


def _wrap(array):
    from ..tensor import Tensor

    return Tensor._wrap(array, False)


class AsStrided(Op):
    """``x.as_strided(size, stride, storage_offset)``: a view of x's storage with any
    geometry. Also the grad_fn PyTorch gives a view after an in-place change of its base
    (autograd/views.py), so the node keeps ``size``, ``stride``, ``storage_offset`` and
    the input's own geometry."""

    node_name = "AsStridedBackward0"
    array_backward = True
    is_view = True

    @staticmethod
    def forward(ctx, a, size, stride, storage_offset=None):
        from ..autograd import views

        root = a._base if a._base is not None else a
        input_geometry = views.geometry(a, root)
        size, stride = tuple(int(n) for n in size), tuple(int(n) for n in stride)
        ctx.given_offset = storage_offset  # as written (None when not given): torch's node
        if storage_offset is None:
            storage_offset = input_geometry[2]
        if len(size) != len(stride):
            raise ShapeError(f"mismatch in length of strides and shape ({list(size)} and "
                             f"{list(stride)})")
        if any(n < 0 for n in size) or any(n < 0 for n in stride) or storage_offset < 0:
            raise ShapeError(f"as_strided: sizes, strides and storage offset must be "
                             f"non-negative (got {list(size)}, {list(stride)}, "
                             f"{storage_offset})")
        geometry = (size, stride, int(storage_offset))
        root_geometry = views.geometry(root, root)
        available = views.extent(root_geometry)
        needed = views.extent(geometry)
        if needed > available:
            itemsize = a._array.itemsize
            raise ShapeError(
                f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                f"{storage_offset}, and itemsize {itemsize} requiring a storage size of "
                f"{needed * itemsize} are out of bounds for storage of size "
                f"{available * itemsize} ({a._describe()})")
        ctx.size, ctx.stride, ctx.storage_offset = geometry
        ctx.input_geometry = input_geometry
        storage = _as_strided(root._array, (available,), (root._array.itemsize,)) \
            if root_geometry[2] == 0 else None
        if storage is None:  # a root whose first element is not its lowest address
            raise ShapeError("as_strided of a tensor with negative strides is not supported "
                             "by tracegrad")
        return views.strided(storage, geometry)

    @staticmethod
    def backward(ctx, grad):
        geometry = (ctx.size, ctx.stride, ctx.storage_offset)
        return (_math.apply(StridedScatter, None, grad, ctx.input_geometry, geometry, True),
                None, None, None)


class StridedRead(Op):
    """The part of a tensor that ``geometry`` picks, reading the tensor as laid out with
    ``input_geometry`` (a copy): CopySlices' view of the gradient."""

    node_name = "AsStridedBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, input_geometry, geometry):
        from ..autograd import views

        ctx.input_geometry, ctx.geometry = input_geometry, geometry
        x = a._array
        storage = a._xp.empty(views.extent(input_geometry, geometry), dtype=x.dtype)
        views.strided(storage, input_geometry)[...] = x
        return views.strided(storage, geometry).copy()

    @staticmethod
    def backward(ctx, grad):
        return (_math.apply(StridedScatter, None, grad, ctx.input_geometry, ctx.geometry,
                            True),
                None, None)


class StridedScatter(Op):
    """``base`` (laid out with ``input_geometry``; zeros when None) with ``src`` written
    (or, with ``accumulate``, added) where ``geometry`` points: the backward of a strided
    view, and how CopySlices puts a view's gradient back into its base's."""

    node_name = "AsStridedScatterBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, base, src, input_geometry, geometry, accumulate):
        from ..autograd import views

        ctx.input_geometry, ctx.geometry, ctx.accumulate = input_geometry, geometry, accumulate
        ctx.src_shape = src._array.shape
        xp = src._xp
        storage = xp.zeros(views.extent(input_geometry, geometry), dtype=src._array.dtype)
        whole = views.strided(storage, input_geometry)
        if base is not None:
            whole[...] = base._array
        if accumulate and views.overlaps(geometry):
            slots = views.strided(xp.arange(storage.size), geometry)
            xp.add.at(storage, slots, xp.broadcast_to(src._array, geometry[0]))
        elif accumulate:
            views.strided(storage, geometry)[...] += src._array
        else:
            views.strided(storage, geometry)[...] = src._array
        return whole.copy()

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        grad_base = grad_src = None
        if needs[0]:
            if ctx.accumulate:
                grad_base = grad
            else:
                zero = _math.xp(grad).zeros((), dtype=_math.numpy_dtype(grad))
                grad_base = _math.apply(StridedScatter, grad, zero, ctx.input_geometry,
                                        ctx.geometry, False)
        if needs[1]:
            grad_src = _math.sum_to(_math.apply(StridedRead, grad, ctx.input_geometry,
                                                ctx.geometry), ctx.src_shape)
        return grad_base, grad_src, None, None, None

# -- torch's in-place metadata ops inside composite ops -----------------------------------
# torch's composites (matmul of a vector, quantile, the RNN layers) reshape a tensor they made
# themselves with squeeze_, unsqueeze_ or transpose_: the tensor gets a node of the in-place
# op's own name and one more version. Here the op makes a new tensor (no one else holds the
# old one) with torch's node, and ``in_place`` gives it torch's version.
class SqueezeInPlace(Op):
    """``squeeze_(dim)``: SqueezeBackward4."""

    node_name = "SqueezeBackward4"
    array_backward = True

    @staticmethod
    def forward(ctx, a, dim):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        ctx.axis = wrap_dim(dim, a._array.ndim)
        return a._xp.squeeze(a._array, ctx.axis)

    @staticmethod
    def backward(ctx, grad):
        return (_math.unsqueeze(grad, ctx.axis), None)


class UnsqueezeInPlace(Op):
    """``unsqueeze_(dim)``: UnsqueezeBackward1."""

    node_name = "UnsqueezeBackward1"
    array_backward = True

    @staticmethod
    def forward(ctx, a, dim):
        ctx.given = dim
        ctx.axis = wrap_dim(dim, a._array.ndim + 1)
        return a._xp.expand_dims(a._array, ctx.axis)

    @staticmethod
    def backward(ctx, grad):
        return (grad.squeeze(ctx.axis), None)


class TransposeInPlace(Op):
    """``transpose_(dim0, dim1)``: TransposeBackward1."""

    node_name = "TransposeBackward1"
    array_backward = True

    @staticmethod
    def forward(ctx, a, dim0, dim1):
        ctx.given = (dim0, dim1)
        ndim = a._array.ndim
        ctx.dims = (wrap_dim(dim0, ndim), wrap_dim(dim1, ndim))
        return a._xp.swapaxes(a._array, *ctx.dims)

    @staticmethod
    def backward(ctx, grad):
        return (_math.transpose(grad, *ctx.dims), None, None)


def in_place(op, tensor, *dims):
    """``op`` (one of the three above) applied as torch applies its in-place op to a tensor
    a composite made: the result at the version torch's tensor reaches (one more)."""
    result = op.apply(tensor, *dims)
    counter = result._version_counter
    counter.value = tensor._version + 1
    counter.last_op = op.node_name
    return result


for _op in (Transpose, TransposeInPlace):
    show_saved(_op, "dim0", lambda node: as_torch_int(node.given[0]))
    show_saved(_op, "dim1", lambda node: as_torch_int(node.given[1]))
show_saved(UnsqueezeInPlace, "dim", lambda node: as_torch_int(node.given))
show_saved(SqueezeInPlace, "dim", lambda node: as_torch_int(node.given))
show_input_sizes(SqueezeInPlace)

show_saved(Unsqueeze, "dim", lambda node: as_torch_int(node.given))

show_saved(Permute, "dims", lambda node: as_torch_ints(node.given))

show_saved(Stack, "dim", lambda node: as_torch_int(node.given))

show_saved(Unbind, "dim", lambda node: as_torch_int(node.given))
show_saved(Squeeze, "dim", lambda node: as_torch_int(node.given))
show_saved(SqueezeDims, "dim", lambda node: as_torch_ints(node.given))


for _op in (Split, UnsafeSplit, SplitWithSizes, UnsafeSplitWithSizes):
    show_saved(_op, "dim", lambda node: as_torch_int(node.given))
    show_input_sizes(_op)
for _op in (Split, UnsafeSplit):
    show_saved(_op, "split_size", lambda node: node.split_size)
for _op in (SplitWithSizes, UnsafeSplitWithSizes):
    show_saved(_op, "split_sizes", lambda node: node.sizes)
show_given(Diagonal, ("offset", "dim1", "dim2"))
show_input_sizes(Diagonal)
show_saved(AsStrided, "size", lambda node: node.size)
show_saved(AsStrided, "stride", lambda node: node.stride)
# (a view's grad_fn remade after an in-place change of its base, autograd/views.py, was
# given none: torch's shows the view's offset)
AsStrided._node_class.given_offset = _REMADE = object()
show_saved(AsStrided, "storage_offset", lambda node: node.storage_offset
           if node.given_offset is _REMADE else node.given_offset)
# a view's grad_fn remade after an in-place change of its base: torch's as_strided with the
# view's own geometry
show_saved(StridedRead, "size", lambda node: node.geometry[0])
show_saved(StridedRead, "stride", lambda node: node.geometry[1])
show_saved(StridedRead, "storage_offset", lambda node: node.geometry[2])
