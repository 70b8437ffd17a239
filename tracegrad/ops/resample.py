"""Ops that map each trailing axis through a fixed linear map of its own: reflection and
replication padding, nearest and (bi)linear upsampling, average and adaptive average
pooling.

Each of them acts on one axis at a time -- "row ``j`` of the output is a weighted sum of
rows of the input" -- so one mechanism serves them all: an ``AxisMap`` per axis, either an
index gather (padding, nearest) or a small matrix (interpolation, pooling). Forward
applies the maps; backward applies their transposes (``ResampleBackward``), whose own
backward is the forward again, so every derivative order works. The subclasses only name
the node as torch does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..autograd.function import Op


@dataclass(frozen=True)
class AxisMap:
    """How one axis of ``in_size`` rows becomes ``out_size`` rows: ``index`` (gather:
    output row ``j`` is input row ``index[j]``) or ``matrix`` (out_size x in_size)."""

    in_size: int
    out_size: int
    index: np.ndarray | None = None
    matrix: np.ndarray | None = None

    def dense(self, dtype) -> np.ndarray:
        """The map as a matrix (out_size x in_size)."""
        if self.matrix is not None:
            return self.matrix.astype(dtype, copy=False)
        dense = np.zeros((self.out_size, self.in_size), dtype=dtype)
        dense[np.arange(self.out_size), self.index] = 1
        return dense


def apply_maps(xp, array, maps, adjoint: bool = False):
    """Apply ``maps`` (one per trailing axis) to ``array``; their transposes with
    ``adjoint``."""
    first = array.ndim - len(maps)
    for offset, axis_map in enumerate(maps):
        axis = first + offset
        if axis_map.index is not None and not adjoint:
            array = xp.take(array, xp.asarray(axis_map.index), axis=axis)
            continue
        matrix = xp.asarray(axis_map.dense(array.dtype))
        if adjoint:
            matrix = matrix.T
        if axis == array.ndim - 1:
            array = array @ matrix.T
        elif axis == array.ndim - 2:
            array = matrix @ array
        else:
            array = xp.moveaxis(xp.tensordot(matrix, array, axes=([1], [axis])), 0, axis)
    return xp.ascontiguousarray(array)


class Resample(Op):
    """Base of the per-axis linear ops; ``maps`` covers the trailing axes."""

    node_name = "ResampleBackward0"

    @staticmethod
    def forward(ctx, a, maps):
        ctx.maps = maps
        return apply_maps(a._xp, a._array, maps)

    @staticmethod
    def backward(ctx, grad):
        return ResampleBackward.apply(grad, ctx.maps, ctx._function), None


class ResampleBackward(Op):
    """The transpose of a ``Resample`` op's maps: its backward, as a node."""

    node_name = "ResampleBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, maps, forward_op):
        ctx.maps, ctx.forward_op = maps, forward_op
        return apply_maps(grad._xp, grad._array, maps, adjoint=True)

    @staticmethod
    def backward(ctx, grad_grad):
        return ctx.forward_op.apply(grad_grad, ctx.maps), None, None


class ReflectionPad1D(Resample):
    node_name = "ReflectionPad1DBackward0"


class ReflectionPad2D(Resample):
    node_name = "ReflectionPad2DBackward0"


class ReflectionPad3D(Resample):
    node_name = "ReflectionPad3DBackward0"


class ReplicationPad1D(Resample):
    node_name = "ReplicationPad1DBackward0"


class ReplicationPad2D(Resample):
    node_name = "ReplicationPad2DBackward0"


class ReplicationPad3D(Resample):
    node_name = "ReplicationPad3DBackward0"


class UpsampleNearest1D(Resample):
    node_name = "UpsampleNearest1DBackward0"


class UpsampleNearest2D(Resample):
    node_name = "UpsampleNearest2DBackward0"


class UpsampleNearestExact1D(Resample):
    node_name = "UpsampleNearestExact1DBackward0"


class UpsampleNearestExact2D(Resample):
    node_name = "UpsampleNearestExact2DBackward0"


class UpsampleLinear1D(Resample):
    node_name = "UpsampleLinear1DBackward0"


class UpsampleBilinear2D(Resample):
    node_name = "UpsampleBilinear2DBackward0"


class AvgPool2D(Resample):
    node_name = "AvgPool2DBackward0"


class AdaptiveAvgPool2D(Resample):
    node_name = "AdaptiveAvgPool2DBackward0"


PAD_OPS = {("reflect", 1): ReflectionPad1D, ("reflect", 2): ReflectionPad2D,
           ("reflect", 3): ReflectionPad3D, ("replicate", 1): ReplicationPad1D,
           ("replicate", 2): ReplicationPad2D, ("replicate", 3): ReplicationPad3D}


# -- the maps -----------------------------------------------------------------------------
def pad_map(mode: str, size: int, before: int, after: int) -> AxisMap:
    positions = np.arange(-before, size + after)
    if mode == "reflect":
        index = np.abs(positions)
        index = np.where(index >= size, 2 * (size - 1) - index, index)
    elif mode == "replicate":
        index = np.clip(positions, 0, size - 1)
    else:  # circular
        index = positions % size
    return AxisMap(size, len(positions), index=index.astype(np.int64))


def nearest_map(in_size: int, out_size: int, scale: float | None, exact: bool) -> AxisMap:
    """torch's nearest source rows, computed in float32 as its kernel does."""
    ratio = np.float32(1.0 / scale) if scale else np.float32(in_size) / np.float32(out_size)
    positions = np.arange(out_size, dtype=np.float32)
    if exact:
        index = np.floor((positions + np.float32(0.5)) * ratio)
    elif out_size == in_size:
        index = positions
    elif out_size == 2 * in_size:
        index = np.floor(positions / 2)
    else:
        index = np.floor(positions * ratio)
    return AxisMap(in_size, out_size, index=np.minimum(index, in_size - 1).astype(np.int64))


def linear_map(in_size: int, out_size: int, scale: float | None, align_corners: bool,
               dtype) -> AxisMap:
    """Interpolation weights of torch's (bi)linear upsampling, in the input's dtype."""
    dtype = np.dtype(dtype)
    positions = np.arange(out_size, dtype=dtype)
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        source = positions * dtype.type(ratio)
    else:
        ratio = 1.0 / scale if scale else in_size / out_size
        source = np.maximum((positions + dtype.type(0.5)) * dtype.type(ratio) - dtype.type(0.5),
                            0)
    low = source.astype(np.int64)
    high = np.minimum(low + 1, in_size - 1)
    weight = source - low
    matrix = np.zeros((out_size, in_size), dtype=dtype)
    rows = np.arange(out_size)
    np.add.at(matrix, (rows, low), 1 - weight)
    np.add.at(matrix, (rows, high), weight)
    return AxisMap(in_size, out_size, matrix=matrix)


def adaptive_average_map(in_size: int, out_size: int) -> AxisMap:
    matrix = np.zeros((out_size, in_size))
    for row in range(out_size):  # one row per output position: tiny, and built once per call
        start = (row * in_size) // out_size
        end = -((-(row + 1) * in_size) // out_size)
        matrix[row, start:end] = 1.0 / (end - start)
    return AxisMap(in_size, out_size, matrix=matrix)


def average_pool_map(in_size: int, kernel: int, stride: int, padding: int, out_size: int,
                     count_include_pad: bool, divisor: float | None) -> AxisMap:
    """torch's avg_pool window on one axis, divided by its share of the divisor (the
    divisor of a 2-d window is the product of the two axes' counts)."""
    matrix = np.zeros((out_size, in_size))
    for row in range(out_size):
        start = row * stride - padding
        end = min(start + kernel, in_size + padding)
        span = end - start
        start, end = max(start, 0), min(end, in_size)
        count = span if count_include_pad else end - start
        matrix[row, start:end] = 1.0 if divisor is not None else 1.0 / count
    return AxisMap(in_size, out_size, matrix=matrix)


def pooled_size(size: int, kernel: int, stride: int, padding: int, dilation: int,
                ceil_mode: bool) -> int:
    """torch's pooling_output_shape."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out

