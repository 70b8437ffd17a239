"""Max pooling with indices, 2-d and 3-d (1-d goes through 2-d, as in torch), plain and
adaptive, and its partial inverse max_unpool. (Average pools are linear: ``resample.py``.)

The windows are an ``as_strided`` view of the input padded with -inf; one argmax over the
flattened window picks each output and its index into the input volume (torch's indices:
flat over the spatial dims). Backward scatters the gradient to those indices
(``ScatterInto`` beside Tensors, whose own backward is a gather: second derivatives work;
one array write beside arrays). The number of spatial dims is the kernel's length.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Op
from . import _math
from ._edges import select_edges
from .convolution import windows
from .indexing import _grid_index, scatter_into
from .resample import pooled_size


def _batched(array, dims: int):
    """(N, C, *spatial) from a batched or an unbatched (C, *spatial) array."""
    return array if array.ndim == dims + 2 else array[None]


def _picked(xp, blocks):
    """Max over the last axis of ``blocks`` (N, C, *out, K), and where it was (the first
    maximum, or the first NaN, as torch picks)."""
    position = blocks.argmax(axis=-1)
    values = xp.take_along_axis(blocks, position[..., None], axis=-1)[..., 0]
    return values, position


def _unbatched(array, ctx, dims: int):
    return array[0] if len(ctx.input_shape) == dims + 1 else array


class _MaxPoolWithIndices(Op):
    """``max_pool{2,3}d(..., return_indices=True)``: (values, int64 flat indices)."""

    array_backward = True
    # as torch: the input and the indices (output 1), and the pooling parameters
    # (the stride as given: () where it was None, as torch shows it)
    saved_names = ("self", "result1", "kernel_size=kernel", "stride=given_stride",
                   "padding=padding", "dilation=dilation", "ceil_mode=ceil_mode")
    saves_output = (1,)

    @staticmethod
    def forward(ctx, a, kernel, stride, padding, dilation, ceil_mode, given_stride=None):
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.kernel, ctx.padding = tuple(kernel), tuple(padding)
            ctx.given_stride = tuple(stride) if given_stride is None else given_stride
            ctx.dilation, ctx.ceil_mode = tuple(dilation), ceil_mode
        dims = len(kernel)
        xp = a._xp
        x = _batched(a._array, dims)
        spatial = x.shape[2:]
        sizes = tuple(pooled_size(size, k, s, p, d, ceil_mode) for size, k, s, p, d
                      in zip(spatial, kernel, stride, padding, dilation))
        pads = tuple((p, max(0, (o - 1) * s + d * (k - 1) + 1 - size - p))
                     for size, k, s, p, d, o in zip(spatial, kernel, stride, padding,
                                                   dilation, sizes))
        padded = x
        if any(before or after for before, after in pads):
            padded = xp.pad(x, ((0, 0), (0, 0)) + pads, constant_values=-xp.inf)
        view = windows(xp, padded, kernel, stride, dilation, sizes)  # (N, C, *kernel, *out)
        outer = tuple(range(2 + dims, 2 + 2 * dims))
        blocks = view.transpose((0, 1) + outer + tuple(range(2, 2 + dims))).reshape(
            x.shape[:2] + sizes + (-1,))
        values, position = _picked(xp, blocks)
        ctx.input_shape = a._array.shape
        # windows that share no element: the gradient is placed, not accumulated
        ctx.disjoint = all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))
        ctx.indices = _volume_index(xp, position, kernel, stride, padding, dilation, sizes,
                                    spatial)
        return _unbatched(values, ctx, dims), _unbatched(ctx.indices, ctx, dims)

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        return (scatter_to_indices(grad, ctx.indices, ctx.input_shape,
                                   accumulate=not ctx.disjoint),) + (None,) * 6


class MaxPool2DWithIndices(_MaxPoolWithIndices):
    node_name = "MaxPool2DWithIndicesBackward0"


class MaxPool3DWithIndices(_MaxPoolWithIndices):
    node_name = "MaxPool3DWithIndicesBackward0"


def _volume_index(xp, position, kernel, stride, padding, dilation, sizes, spatial):
    """Each maximum's flat index in its input volume, from its place in its window: plain
    integer arithmetic on the window grid (no gather). The last spatial dim varies fastest
    in ``position`` and in the index."""
    dims = len(kernel)
    index, place, volume = 0, position, 1
    for axis in reversed(range(dims)):
        offset, place = place % kernel[axis], place // kernel[axis]
        grid = (1,) * axis + (sizes[axis],) + (1,) * (dims - axis - 1)
        starts = (xp.arange(sizes[axis]) * stride[axis] - padding[axis]).reshape(grid)
        index = index + (starts + offset * dilation[axis]) * volume
        volume *= spatial[axis]
    return index


def scatter_to_indices(grad, indices, input_shape, accumulate: bool):
    """The gradient of a max pool: ``grad`` placed at ``indices`` of a zero input volume (a
    Tensor, recorded, or an array, as ``grad`` is). ``indices`` is batched; the volume has
    as many dims as ``indices`` has past (N, C)."""
    dims = indices.ndim - 2
    batched = (1,) + tuple(grad.shape) if len(input_shape) == dims + 1 else tuple(grad.shape)
    volume = batched[:2] + (math.prod(input_shape[-dims:]),)
    flat = grad.reshape(batched[:2] + (-1,))
    index = indices.reshape(batched[:2] + (-1,))
    return scatter_into(flat, volume, 2, index, accumulate).reshape(input_shape)


class _AdaptiveMaxPool(Op):
    """``adaptive_max_pool{2,3}d``: windows ``[floor(i*S/o), ceil((i+1)*S/o))`` per dim,
    gathered into equal-length blocks (a short window repeats its last element: harmless for
    a max)."""

    array_backward = True
    saved_names = ("self", "result1")  # as torch: the input and the indices (output 1)
    saves_output = (1,)

    @staticmethod
    def forward(ctx, a, output_size):
        ctx.save_for_backward(a)
        dims = len(output_size)
        xp = a._xp
        x = _batched(a._array, dims)
        spatial = x.shape[2:]
        # per dim, its positions (out, window) spread over the grid (*out, *window): an open
        # mesh, so x[:, :, *mesh] is every window at once and sum(mesh * volume) its indices
        mesh, flat, volume = [], 0, 1
        for axis in reversed(range(dims)):
            positions = _adaptive_positions(spatial[axis], output_size[axis])
            shape = [1] * (2 * dims)
            shape[axis], shape[dims + axis] = positions.shape
            mesh.insert(0, positions.reshape(shape))
            flat = flat + mesh[0] * volume
            volume *= spatial[axis]
        blocks = x[(slice(None), slice(None)) + tuple(xp.asarray(m) for m in mesh)].reshape(
            x.shape[:2] + tuple(output_size) + (-1,))
        values, position = _picked(xp, blocks)
        indices = xp.take_along_axis(
            xp.asarray(flat.reshape((1, 1) + tuple(output_size) + (-1,))),
            position[..., None], axis=-1)[..., 0]
        ctx.input_shape, ctx.indices = a._array.shape, indices
        return _unbatched(values, ctx, dims), _unbatched(indices, ctx, dims)

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        ctx.saved_tensors  # noqa: B018 - raises if the input changed in place, as in torch
        return scatter_to_indices(grad, ctx.indices, ctx.input_shape, accumulate=True), None


class AdaptiveMaxPool2D(_AdaptiveMaxPool):
    node_name = "AdaptiveMaxPool2DBackward0"


class AdaptiveMaxPool3D(_AdaptiveMaxPool):
    node_name = "AdaptiveMaxPool3DBackward0"


def _adaptive_positions(size: int, out_size: int) -> np.ndarray:
    starts = (np.arange(out_size) * size) // out_size
    ends = -((-(np.arange(out_size) + 1) * size) // out_size)
    longest = int((ends - starts).max())
    positions = starts[:, None] + np.arange(longest)[None, :]
    return np.minimum(positions, ends[:, None] - 1)


class _MaxUnpool(Op):
    """``max_unpool{2,3}d``: zeros of ``output_size`` with each input value placed at its
    flat index (a max pool's indices); backward picks the gradient at those indices."""

    array_backward = True
    saved_names = ("indices",)  # as torch names it (a saved tensor, version-checked)

    @staticmethod
    def forward(ctx, a, indices, output_size):
        select_edges(ctx, (0,))  # torch's edge: the input (no index edge)
        dims = len(output_size)
        x = _batched(a._array, dims)
        ctx.index = _batched(indices._array, dims).reshape(x.shape[:2] + (-1,))
        if ctx.needs_input_grad:
            ctx.save_for_backward(indices)
        ctx.input_shape = a._array.shape
        placed = scatter_into(x.reshape(x.shape[:2] + (-1,)),
                              x.shape[:2] + (math.prod(output_size),), 2, ctx.index, False)
        return placed.reshape(a._array.shape[:-dims] + tuple(output_size))

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - raises if the indices changed in place, as in torch
        flat = grad.reshape(ctx.index.shape[:2] + (-1,))
        return flat[_grid_index(_math.xp(flat), ctx.index, 2)].reshape(ctx.input_shape), None, None


class MaxUnpool2D(_MaxUnpool):
    node_name = "MaxUnpool2DBackward0"


class MaxUnpool3D(_MaxUnpool):
    node_name = "MaxUnpool3DBackward0"
