"""Ops that map each trailing axis through a fixed linear map of its own: reflection and
replication padding, nearest and (bi)linear upsampling, average and adaptive average
pooling.

Each of them acts on one axis at a time -- "row ``j`` of the output is a weighted sum of a
few rows of the input" -- so one mechanism serves them all: an ``AxisMap`` per axis,
listing for each output row the input rows it reads (``index``) and their ``weight``s.
Applying a map is a handful of gathers along the axis (as many as the widest window), each
scaled and summed: only the rows of a window ever meet, so an inf or a nan stays in the
windows that hold it, as in torch. Backward applies the transposed map
(``ResampleBackward``), whose own backward is the forward again, so every derivative order
works. The subclasses only name the node as torch does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..backends import array_module
from ..tensor import Tensor
from ._saved import show_input_sizes, show_saved


@dataclass(frozen=True)
class AxisMap:
    """How an axis of ``in_size`` rows becomes ``out_size`` rows: output row ``j`` is
    ``sum_k weight[j, k] * input[index[j, k]]`` over the ``k`` where ``valid[j, k]``.
    ``weight=None`` means all ones, ``valid=None`` all valid."""

    in_size: int
    out_size: int
    index: np.ndarray  # (out_size, K) int64
    weight: np.ndarray | None = None  # (out_size, K)
    valid: np.ndarray | None = None  # (out_size, K) bool

    def transposed(self) -> AxisMap:
        """The adjoint map: input row ``i`` collects ``weight`` times every output row that
        read it."""
        rows, slots = np.nonzero(self.valid if self.valid is not None
                                 else np.ones(self.index.shape, dtype=bool))
        sources = self.index[rows, slots]
        weights = (self.weight[rows, slots] if self.weight is not None
                   else np.ones(len(rows)))
        order = np.lexsort((rows, sources))  # grouped by input row, in output order
        sources, rows, weights = sources[order], rows[order], weights[order]
        counts = np.bincount(sources, minlength=self.in_size)
        width = max(int(counts.max()) if counts.size else 0, 1)
        index = np.zeros((self.in_size, width), dtype=np.int64)
        weight = np.zeros((self.in_size, width))
        valid = np.zeros((self.in_size, width), dtype=bool)
        slot = np.arange(len(sources)) - np.repeat(np.cumsum(counts) - counts, counts)
        index[sources, slot], weight[sources, slot], valid[sources, slot] = rows, weights, True
        return AxisMap(self.out_size, self.in_size, index, weight, valid)


def _banded(rows: list[list[int]], weights: list[list[float]], in_size: int) -> AxisMap:
    """An AxisMap from per-row lists of input rows and weights (of any lengths)."""
    width = max(len(row) for row in rows)
    index = np.zeros((len(rows), width), dtype=np.int64)
    weight = np.zeros((len(rows), width))
    valid = np.zeros((len(rows), width), dtype=bool)
    for position, (sources, values) in enumerate(zip(rows, weights)):
        index[position, :len(sources)] = sources
        weight[position, :len(sources)] = values
        valid[position, :len(sources)] = True
    return AxisMap(in_size, len(rows), index, weight, None if valid.all() else valid)


def apply_maps(xp, array, maps, adjoint: bool = False):
    """Apply ``maps`` (one per trailing axis) to ``array``; their transposes with
    ``adjoint``."""
    first = array.ndim - len(maps)
    for offset, axis_map in enumerate(maps):
        if adjoint:
            axis_map = axis_map.transposed()
        array = _apply_axis(xp, array, axis_map, first + offset)
    return xp.ascontiguousarray(array)


@silenced
def _apply_axis(xp, array, axis_map: AxisMap, axis: int):
    index = xp.asarray(axis_map.index)
    if axis_map.weight is None and index.shape[1] == 1:  # a plain gather: pads, nearest
        return xp.take(array, index[:, 0], axis=axis)
    trailing = (1,) * (array.ndim - axis - 1)
    total = None
    for slot in range(index.shape[1]):
        part = xp.take(array, index[:, slot], axis=axis)
        if axis_map.weight is not None:
            weight = axis_map.weight[:, slot].astype(array.dtype)
            part = part * xp.asarray(weight).reshape((-1,) + trailing)
        if axis_map.valid is not None and not axis_map.valid[:, slot].all():
            valid = xp.asarray(axis_map.valid[:, slot]).reshape((-1,) + trailing)
            part = xp.where(valid, part, array.dtype.type(0))
        total = part if total is None else total + part
    return total


class Resample(Op):
    """Base of the per-axis linear ops; ``maps`` covers the trailing axes, ``shown`` holds
    the arguments as torch's node shows them (``grad_fn._saved_padding``, ...: see
    ``_show_arguments``)."""

    node_name = "ResampleBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, maps, shown=()):
        ctx.maps, ctx.shown = maps, shown
        return apply_maps(a._xp, a._array, maps)

    @staticmethod
    def backward(ctx, grad):
        return _mapped(grad, ctx.maps, ctx._function, ctx.shown, adjoint=True), None, None


class ResampleBackward(Op):
    """The transpose of a ``Resample`` op's maps: its backward, as a node."""

    node_name = "ResampleBackwardBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, grad, maps, forward_op, shown=()):
        ctx.maps, ctx.forward_op, ctx.shown = maps, forward_op, shown
        return apply_maps(grad._xp, grad._array, maps, adjoint=True)

    @staticmethod
    def backward(ctx, grad_grad):
        return (_mapped(grad_grad, ctx.maps, ctx.forward_op, ctx.shown, adjoint=False),
                None, None, None)


def _mapped(value, maps, forward_op, shown, adjoint: bool):
    """``maps`` (or their transpose) applied to ``value``: beside Tensors a recorded node
    (``forward_op``'s, or ResampleBackward's for the transpose), beside arrays the result."""
    if value.__class__ is Tensor:
        if adjoint:
            return ResampleBackward.apply(value, maps, forward_op, shown)
        return forward_op.apply(value, maps, shown)
    return apply_maps(array_module(value), value, maps, adjoint=adjoint)


class _SavesInput(Resample):
    """A per-axis op whose torch node keeps its input (the pads, adaptive_avg_pool2d): it is
    saved, so an in-place change of it before backward is an error, as in torch."""

    array_backward = True  # (said again: this class writes its own backward)
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a, maps, shown=()):
        ctx.save_for_backward(a)
        return Resample.forward(ctx, a, maps, shown)

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - raises if the input changed in place, as in torch
        return Resample.backward(ctx, grad)


class ReflectionPad1D(_SavesInput):
    node_name = "ReflectionPad1DBackward0"


class ReflectionPad2D(_SavesInput):
    node_name = "ReflectionPad2DBackward0"


class ReflectionPad3D(_SavesInput):
    node_name = "ReflectionPad3DBackward0"


class ReplicationPad1D(_SavesInput):
    node_name = "ReplicationPad1DBackward0"


class ReplicationPad2D(_SavesInput):
    node_name = "ReplicationPad2DBackward0"


class ReplicationPad3D(_SavesInput):
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


def _show_arguments(op, names: tuple) -> None:
    """``_saved_<name>`` for each of ``names``: the item at that position of the node's
    ``shown`` tuple (what the functional passed along as torch's node keeps it)."""
    for index, name in enumerate(names):
        show_saved(op, name, lambda node, index=index: node.shown[index])


for _op in (ReflectionPad1D, ReflectionPad2D, ReflectionPad3D, ReplicationPad1D,
            ReplicationPad2D, ReplicationPad3D):
    _show_arguments(_op, ("padding",))
for _op in (UpsampleNearest1D, UpsampleNearestExact1D):
    _show_arguments(_op, ("output_size", "scales"))
for _op in (UpsampleNearest2D, UpsampleNearestExact2D):
    _show_arguments(_op, ("output_size", "scales_h", "scales_w"))
_show_arguments(UpsampleLinear1D, ("output_size", "align_corners", "scales"))
_show_arguments(UpsampleBilinear2D, ("output_size", "align_corners", "scales_h", "scales_w"))
for _op in (UpsampleNearest1D, UpsampleNearestExact1D, UpsampleNearest2D,
            UpsampleNearestExact2D, UpsampleLinear1D, UpsampleBilinear2D):
    show_input_sizes(_op)


class AvgPool2D(_SavesInput):
    """``avg_pool2d``; ``shown`` is its parameters as given (avg_pool2d's tuple)."""

    node_name = "AvgPool2DBackward0"


class AvgPool3D(_SavesInput):
    node_name = "AvgPool3DBackward0"


for _op in (AvgPool2D, AvgPool3D):
    _show_arguments(_op, ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                          "divisor_override"))


class AdaptiveAvgPool2D(_SavesInput):
    node_name = "AdaptiveAvgPool2DBackward0"


class AdaptiveAvgPool3D(_SavesInput):
    node_name = "AdaptiveAvgPool3DBackward0"


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
    return AxisMap(size, len(positions), index.astype(np.int64)[:, None])


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
    index = np.minimum(index, in_size - 1).astype(np.int64)
    return AxisMap(in_size, out_size, index[:, None])


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
    return AxisMap(in_size, out_size, np.stack([low, high], axis=1),
                   np.stack([1 - weight, weight], axis=1).astype(dtype))


def adaptive_average_map(in_size: int, out_size: int) -> AxisMap:
    rows, weights = [], []
    for row in range(out_size):  # one window per output position: tiny, built once per call
        start = (row * in_size) // out_size
        end = -((-(row + 1) * in_size) // out_size)
        rows.append(list(range(start, end)))
        weights.append([1.0 / (end - start)] * (end - start))
    return _banded(rows, weights, in_size)


def average_pool_map(in_size: int, kernel: int, stride: int, padding: int, out_size: int,
                     count_include_pad: bool, divisor: float | None) -> AxisMap:
    """torch's avg_pool window on one axis, divided by its share of the divisor (the
    divisor of a 2-d window is the product of the two axes' counts)."""
    rows, weights = [], []
    for row in range(out_size):
        start = row * stride - padding
        end = min(start + kernel, in_size + padding)
        span = end - start
        start, end = max(start, 0), min(end, in_size)
        count = span if count_include_pad else end - start
        rows.append(list(range(start, end)))
        weights.append([1.0 if divisor is not None else 1.0 / count] * (end - start))
    return _banded(rows, weights, in_size)


def pooled_size(size: int, kernel: int, stride: int, padding: int, dilation: int,
                ceil_mode: bool) -> int:
    """torch's pooling_output_shape."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out

