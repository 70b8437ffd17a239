"""Max pooling with indices: max_pool2d (1-d goes through it, as in torch) and
adaptive_max_pool2d. (Average pools are linear: ``resample.py``.)

The windows are an ``as_strided`` view of the input padded with -inf; one argmax over the
flattened window picks each output and its index into the input plane (torch's indices).
Backward scatters the gradient to those indices (``ScatterInto`` beside Tensors, whose own
backward is a gather: second derivatives work; one array write beside arrays).
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Op
from .convolution import windows
from .indexing import scatter_into
from .resample import pooled_size


def _batched(array):
    """(N, C, H, W) from a batched or an unbatched (C, H, W) array."""
    return array if array.ndim == 4 else array[None]


def _picked(xp, blocks):
    """Max over the last axis of ``blocks`` (N, C, oh, ow, K), and where it was (the first
    maximum, or the first NaN, as torch picks)."""
    position = blocks.argmax(axis=-1)
    values = xp.take_along_axis(blocks, position[..., None], axis=-1)[..., 0]
    return values, position


class MaxPool2DWithIndices(Op):
    """``max_pool2d(..., return_indices=True)``: (values, int64 indices into H*W)."""

    node_name = "MaxPool2DWithIndicesBackward0"
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
        xp = a._xp
        x = _batched(a._array)
        height, width = x.shape[2:]
        sizes = tuple(pooled_size(size, k, s, p, d, ceil_mode) for size, k, s, p, d
                      in zip((height, width), kernel, stride, padding, dilation))
        pads = tuple((p, max(0, (o - 1) * s + d * (k - 1) + 1 - size - p))
                     for size, k, s, p, d, o in zip((height, width), kernel, stride, padding,
                                                   dilation, sizes))
        padded = x
        if any(before or after for before, after in pads):
            padded = xp.pad(x, ((0, 0), (0, 0)) + pads, constant_values=-xp.inf)
        view = windows(xp, padded, kernel, stride, dilation, sizes)  # (N, C, kh, kw, oh, ow)
        blocks = view.transpose(0, 1, 4, 5, 2, 3).reshape(x.shape[:2] + sizes + (-1,))
        values, position = _picked(xp, blocks)
        indices = _plane_index(xp, position, kernel, stride, padding, dilation, sizes, width)
        ctx.input_shape = a._array.shape
        # windows that share no element: the gradient is placed, not accumulated
        ctx.disjoint = all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))
        ctx.indices = indices
        if a._array.ndim == 3:
            return values[0], indices[0]
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        return (scatter_to_indices(grad, ctx.indices, ctx.input_shape,
                                   accumulate=not ctx.disjoint),) + (None,) * 6


def _plane_index(xp, position, kernel, stride, padding, dilation, sizes, width):
    """Each maximum's flat index in its input plane, from its place in its window: plain
    integer arithmetic on the window grid (no gather)."""
    (_, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = kernel, stride, padding, dilation, sizes
    rows = (xp.arange(oh)[:, None] * sh - ph) + (position // kw) * dh
    cols = (xp.arange(ow)[None, :] * sw - pw) + (position % kw) * dw
    return rows * width + cols


def scatter_to_indices(grad, indices, input_shape, accumulate: bool):
    """The gradient of a max pool: ``grad`` placed at ``indices`` of a zero input plane (a
    Tensor, recorded, or an array, as ``grad`` is)."""
    batched = (1,) + tuple(grad.shape) if len(input_shape) == 3 else tuple(grad.shape)
    plane = batched[:2] + (input_shape[-2] * input_shape[-1],)
    flat = grad.reshape(batched[:2] + (-1,))
    index = indices.reshape(batched[:2] + (-1,))
    return scatter_into(flat, plane, 2, index, accumulate).reshape(input_shape)


class AdaptiveMaxPool2D(Op):
    """``adaptive_max_pool2d``: windows ``[floor(i*H/oh), ceil((i+1)*H/oh))``, gathered
    into equal-length blocks (a short window repeats its last row: harmless for a max)."""

    node_name = "AdaptiveMaxPool2DBackward0"
    array_backward = True
    saved_names = ("self", "result1")  # as torch: the input and the indices (output 1)
    saves_output = (1,)

    @staticmethod
    def forward(ctx, a, output_size):
        ctx.save_for_backward(a)
        xp = a._xp
        x = _batched(a._array)
        height, width = x.shape[2:]
        rows = _adaptive_positions(height, output_size[0])  # (oh, kh)
        cols = _adaptive_positions(width, output_size[1])  # (ow, kw)
        gathered = x[:, :, xp.asarray(rows[:, :, None, None]),
                     xp.asarray(cols[None, None, :, :])]  # (N, C, oh, kh, ow, kw)
        blocks = gathered.transpose(0, 1, 2, 4, 3, 5).reshape(x.shape[:2] + output_size + (-1,))
        shape = (output_size[0], output_size[1], rows.shape[1], cols.shape[1])
        row_grid = np.broadcast_to(rows[:, None, :, None], shape).reshape(
            (1, 1) + output_size + (-1,))
        col_grid = np.broadcast_to(cols[None, :, None, :], shape).reshape(
            (1, 1) + output_size + (-1,))
        values, position = _picked(xp, blocks)
        where = position[..., None]
        indices = (xp.take_along_axis(xp.asarray(row_grid), where, axis=-1)[..., 0] * width
                   + xp.take_along_axis(xp.asarray(col_grid), where, axis=-1)[..., 0])
        ctx.input_shape, ctx.indices = a._array.shape, indices
        if a._array.ndim == 3:
            return values[0], indices[0]
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        ctx.saved_tensors  # noqa: B018 - raises if the input changed in place, as in torch
        return scatter_to_indices(grad, ctx.indices, ctx.input_shape, accumulate=True), None


def _adaptive_positions(size: int, out_size: int) -> np.ndarray:
    starts = (np.arange(out_size) * size) // out_size
    ends = -((-(np.arange(out_size) + 1) * size) // out_size)
    longest = int((ends - starts).max())
    positions = starts[:, None] + np.arange(longest)[None, :]
    return np.minimum(positions, ends[:, None] - 1)
