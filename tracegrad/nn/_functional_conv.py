"""Convolution, pooling, padding, resizing and unfold/fold of ``torch.nn.functional``
(re-exported by ``nn.functional``).

Argument checking and torch's conventions (unbatched inputs, 1-d pooling through 2-d,
``padding="same"``) live here; the arithmetic is in ``tracegrad/ops/convolution.py``,
``pooling.py``, ``resample.py`` and ``padding.py``.

>>> import tracegrad as torch
>>> import tracegrad.nn.functional as F
>>> F.conv2d(torch.ones(1, 1, 4, 4), torch.ones(1, 1, 3, 3)).squeeze()
tensor([[9., 9.],
        [9., 9.]])
"""

from __future__ import annotations

import math
import warnings

from ..errors import ShapeError
from ..ops import resample
from ..ops.convolution import Col2Im, Convolution, Im2Col
from ..ops.padding import ConstantPadNd, pad_pairs
from ..ops.pixel_shuffle import ChannelShuffle, PixelShuffle, PixelUnshuffle
from ..ops.pooling import (
    AdaptiveMaxPool2D,
    AdaptiveMaxPool3D,
    MaxPool2DWithIndices,
    MaxPool3DWithIndices,
    MaxUnpool2D,
    MaxUnpool3D,
)
from ..tensor import Tensor


def _tuple(value, count: int, name: str = "value") -> tuple:
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            return tuple(int(value[0]) for _ in range(count))
        if len(value) != count:
            raise ValueError(f"expected {name} to be a single integer value or a list of "
                             f"{count} values, but got {name}={list(value)}")
        return tuple(int(v) for v in value)
    return (int(value),) * count


# -- convolution --------------------------------------------------------------------------
def _conv(name: str, dims: int, input, weight, bias, stride, padding, dilation, groups,
          transposed=False, output_padding=0):
    if input.ndim not in (dims + 1, dims + 2):
        raise ShapeError(
            f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, but "
            f"got input of size: {list(input.shape)} ({input._describe()})")
    if weight.ndim != dims + 2:
        raise ShapeError(
            f"{name}: expected a {dims + 2}-d weight (out_channels, in_channels / groups, "
            f"*kernel_size), got {weight._describe()}")
    unbatched = input.ndim == dims + 1
    if unbatched:
        input = input.unsqueeze(0)
    stride = _tuple(stride, dims, "stride")
    dilation = _tuple(dilation, dims, "dilation")
    kernel = tuple(weight.shape[2:])
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if isinstance(padding, str):
        input, pads = _string_padding(name, input, padding, kernel, stride, dilation)
    else:
        padding = _tuple(padding, dims, "padding")
        if any(p < 0 for p in padding):
            raise RuntimeError("negative padding is not supported")
        pads = tuple((p, p) for p in padding)
    if transposed:
        extra = _tuple(output_padding, dims, "output_padding")
        if any(e >= s and e >= d for e, s, d in zip(extra, stride, dilation)):
            raise RuntimeError(
                "output padding must be smaller than either stride or dilation, but got "
                + " ".join(f"output_padding_{axis}: {e}" for axis, e in zip(_AXES[dims], extra))
                + " " + " ".join(f"stride_{axis}: {s}" for axis, s in zip(_AXES[dims], stride))
                + " " + " ".join(f"dilation_{axis}: {d}"
                                 for axis, d in zip(_AXES[dims], dilation)))
    else:
        extra = (0,) * dims
        padded = tuple(size + before + after
                       for size, (before, after) in zip(input.shape[2:], pads))
        effective = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
        if any(p < k for p, k in zip(padded, effective)):
            raise ShapeError(
                f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                f"Kernel size: ({' x '.join(map(str, effective))}). Kernel size can't be "
                f"greater than actual input size ({input._describe()})")
    out = Convolution.apply(input, weight, bias, stride, pads, dilation, transposed, extra,
                            groups)
    return out.squeeze(0) if unbatched else out


_AXES = {1: ("width",), 2: ("height", "width"), 3: ("depth", "height", "width")}


def _string_padding(name, input, padding, kernel, stride, dilation):
    if padding == "valid":
        return input, tuple((0, 0) for _ in kernel)
    if padding != "same":
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    if any(total % 2 for total in totals):
        warnings.warn(
            "Using padding='same' with even kernel lengths and odd dilation may require a "
            "zero-padded copy of the input be created", UserWarning, stacklevel=4)
        flat = []
        for total in reversed(totals):  # F.pad order: last dim first
            flat += [0, total % 2]
        input = ConstantPadNd.apply(input, tuple(flat), 0.0)
    return input, tuple((total // 2, total // 2) for total in totals)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-d convolution of (N, C, H, W) or (C, H, W) input; one ConvolutionBackward0."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    return _conv("conv_transpose1d", 1, input, weight, bias, stride, padding, dilation, groups,
                 True, output_padding)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The adjoint of conv2d (a "deconvolution"); weight is (C_in, C_out / groups, kh, kw)."""
    return _conv("conv_transpose2d", 2, input, weight, bias, stride, padding, dilation, groups,
                 True, output_padding)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    return _conv("conv_transpose3d", 3, input, weight, bias, stride, padding, dilation, groups,
                 True, output_padding)


# -- pooling ------------------------------------------------------------------------------
_COUNTS = {2: "two", 3: "three"}
_AXES = {2: "HW", 3: "THW"}  # the letters torch's messages name each spatial dim by


def _pool_tuple(name: str, what: str, value, dims: int) -> tuple:
    """``value`` as ``dims`` ints, or torch's error for a tuple of another length."""
    if isinstance(value, (list, tuple)) and len(value) not in (1, dims):
        # avg_pool3d words it a little differently from the other pools
        either = "" if name == "avg_pool3d" else " either"
        form = {"kernel_size": f"must{either} be a single int",
                "stride": f"must{either} be omitted, a single int",
                "padding": f"must{either} be a single int",
                "dilation": "must be either a single int"}[what]
        raise RuntimeError(f"{name}: {what} {form}, or a tuple of {_COUNTS[dims]} ints")
    return _tuple(value, dims, what)


def _positive(what: str, prefix: str, values: tuple) -> None:
    if any(v <= 0 for v in values):
        got = " ".join(f"{prefix}{axis}: {v}" for axis, v in zip(_AXES[len(values)], values))
        raise RuntimeError(f"{what} should be greater than zero, but got {got}")


def _pool_arguments(name, input, kernel_size, stride, padding, dilation, dims=2):
    if input.ndim not in (dims + 1, dims + 2) or input.numel() == 0:
        raise ShapeError(f"non-empty {dims + 1}D or {dims + 2}D (batch mode) tensor expected "
                         f"for input ({name}: {input._describe()})")
    kernel = _pool_tuple(name, "kernel_size", kernel_size, dims)
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else _pool_tuple(name, "stride", stride, dims)
    padding = _pool_tuple(name, "padding", padding, dims)
    dilation = _pool_tuple(name, "dilation", dilation, dims)
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    _positive("kernel size", "k", kernel)
    _positive("stride", "d", stride)
    _positive("dilation", "dilation", dilation)
    for k, p, d in zip(kernel, padding, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}")
    return kernel, stride, padding, dilation


def _check_pooled(input, sizes) -> None:
    if any(size <= 0 for size in sizes):
        dims = len(sizes)
        planes = "x".join(map(str, input.shape[-dims - 1:]))
        raise ShapeError(
            f"Given input size: ({planes}). Calculated output size: "
            f"({input.shape[-dims - 1]}x{'x'.join(map(str, sizes))}). Output size is too small")


def _max_pool(name: str, op, input: Tensor, kernel_size, stride, padding, dilation,
              ceil_mode: bool, return_indices: bool):
    """max_pool2d and max_pool3d: ``op`` picks the node (and the spatial dims)."""
    dims = 3 if op is MaxPool3DWithIndices else 2
    stride_as_given = stride
    kernel, stride, padding, dilation = _pool_arguments(name, input, kernel_size, stride,
                                                        padding, dilation, dims)
    _check_pooled(input, [resample.pooled_size(size, k, s, p, d, ceil_mode) for size, k, s, p, d
                          in zip(input.shape[-dims:], kernel, stride, padding, dilation)])
    values, indices = op.apply(input, kernel, stride, padding, dilation, ceil_mode,
                               _given_stride(stride_as_given, dims))
    return (values, indices) if return_indices else values


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over each window; ``return_indices`` also gives each maximum's flat index in its
    input plane (what ``max_unpool2d`` takes)."""
    return _max_pool("max_pool2d", MaxPool2DWithIndices, input, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over each (depth, height, width) window; ``return_indices`` also gives each
    maximum's flat index in its input volume (what ``max_unpool3d`` takes)."""
    return _max_pool("max_pool3d", MaxPool3DWithIndices, input, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def _given_stride(stride, dims: int = 2) -> tuple:
    """A pool's stride as torch's node shows it: as given, () for None (not the kernel
    size it stands for)."""
    return () if stride is None else _tuple(stride, dims, "stride") if not (
        isinstance(stride, (list, tuple)) and not stride) else ()


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Through max_pool2d on a height-1 plane, as torch does (SqueezeBackward1 on top)."""
    if input.ndim not in (2, 3):
        raise ShapeError(f"max_pool1d() Expected 2D or 3D input tensor, but got "
                         f"{list(input.shape)}")
    kernel = _tuple(kernel_size, 1)[0]
    result = max_pool2d(input.unsqueeze(-2), (1, kernel),
                        (1, kernel if _given_stride(stride) == () else _tuple(stride, 1)[0]),
                        (0, _tuple(padding, 1)[0]), (1, _tuple(dilation, 1)[0]), ceil_mode,
                        return_indices)
    if return_indices:
        return result[0].squeeze(-2), result[1].squeeze(-2)
    return result.squeeze(-2)


def _avg_pool(name: str, op, input: Tensor, kernel_size, stride, padding, ceil_mode: bool,
              count_include_pad: bool, divisor_override: int | None) -> Tensor:
    """avg_pool2d and avg_pool3d: ``op`` picks the node (and the spatial dims)."""
    dims = 3 if op is resample.AvgPool3D else 2
    stride_as_given = stride
    kernel, stride, padding, _ = _pool_arguments(name, input, kernel_size, stride, padding, 1,
                                                 dims)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    spatial = input.shape[-dims:]
    if dims == 3 and any(size < k for size, k in zip(spatial, kernel)):
        # avg_pool3d alone checks the input against the kernel (padding not counted)
        raise ShapeError(
            f"input image (T: {spatial[0]} H: {spatial[1]} W: {spatial[2]}) smaller than "
            f"kernel size (kT: {kernel[0]} kH: {kernel[1]} kW: {kernel[2]})")
    sizes = [resample.pooled_size(size, k, s, p, 1, ceil_mode)
             for size, k, s, p in zip(spatial, kernel, stride, padding)]
    _check_pooled(input, sizes)
    maps = tuple(resample.average_pool_map(size, k, s, p, out, count_include_pad,
                                           divisor_override)
                 for size, k, s, p, out in zip(spatial, kernel, stride, padding, sizes))
    if divisor_override is not None:
        first = maps[0]
        maps = (resample.AxisMap(first.in_size, first.out_size, first.index,
                                 first.weight / divisor_override, first.valid),) + maps[1:]
    # what torch's node shows (grad_fn._saved_kernel_size, ...)
    parameters = (kernel, _given_stride(stride_as_given, dims), padding, ceil_mode,
                  count_include_pad, divisor_override)
    return op.apply(input, maps, parameters)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    return _avg_pool("avg_pool2d", resample.AvgPool2D, input, kernel_size, stride, padding,
                     ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean of each (depth, height, width) window."""
    return _avg_pool("avg_pool3d", resample.AvgPool3D, input, kernel_size, stride, padding,
                     ceil_mode, count_include_pad, divisor_override)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    if input.ndim not in (2, 3):
        raise ShapeError(f"avg_pool1d() Expected 2D or 3D input tensor, but got "
                         f"{list(input.shape)}")
    kernel = _tuple(kernel_size, 1)[0]
    result = avg_pool2d(input.unsqueeze(-2), (1, kernel),
                        (1, kernel if _given_stride(stride) == () else _tuple(stride, 1)[0]),
                        (0, _tuple(padding, 1)[0]), ceil_mode, count_include_pad)
    return result.squeeze(-2)


def _adaptive_sizes(name: str, input, output_size, dims: int = 2) -> tuple:
    maximum = name.startswith("adaptive_max")  # torch words the two pools' errors apart
    if isinstance(output_size, (list, tuple)) and input.ndim <= len(output_size):
        # torch's _list_with_default, in Python before any other check
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
    if input.ndim not in (dims + 1, dims + 2):
        raise ShapeError(f"{name}(): Expected {dims + 1}D or {dims + 2}D tensor, but got"
                         f"{':' if maximum else ''} {list(input.shape)}")
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != dims:
            raise RuntimeError(f"{name}(): internal error: output_size.size() must be {dims}"
                               if maximum else f"{name}: output_size must be {dims}")
        sizes = output_size
    else:
        sizes = (output_size,) * dims
    return tuple(input.shape[-dims + index] if size is None else int(size)
                 for index, size in enumerate(sizes))


def _adaptive_avg_pool(name: str, op, input: Tensor, output_size) -> Tensor:
    dims = 3 if op is resample.AdaptiveAvgPool3D else 2
    sizes = _adaptive_sizes(name, input, output_size, dims)
    if sizes == (1,) * dims:  # torch's shortcut: a MeanBackward1
        return input.mean(tuple(range(-1, -dims - 1, -1)), keepdim=True)
    maps = tuple(resample.adaptive_average_map(size, out)
                 for size, out in zip(input.shape[-dims:], sizes))
    return op.apply(input, maps)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    return _adaptive_avg_pool("adaptive_avg_pool2d", resample.AdaptiveAvgPool2D, input,
                              output_size)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed (depth, height, width); None keeps that dim's size."""
    return _adaptive_avg_pool("adaptive_avg_pool3d", resample.AdaptiveAvgPool3D, input,
                              output_size)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    size = _tuple(output_size, 1, "output_size")[0]
    if input.ndim not in (2, 3):
        raise ShapeError(f"adaptive_avg_pool1d(): Expected 2D or 3D tensor, but got "
                         f"{list(input.shape)}")
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    sizes = _adaptive_sizes("adaptive_max_pool2d", input, output_size)
    values, indices = AdaptiveMaxPool2D.apply(input, sizes)
    return (values, indices) if return_indices else values


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling to a fixed (depth, height, width); None keeps that dim's size."""
    sizes = _adaptive_sizes("adaptive_max_pool3d", input, output_size, 3)
    values, indices = AdaptiveMaxPool3D.apply(input, sizes)
    return (values, indices) if return_indices else values


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    size = _tuple(output_size, 1, "output_size")[0]
    values, indices = adaptive_max_pool2d(input.unsqueeze(-2), (1, size), True)
    values, indices = values.squeeze(-2), indices.squeeze(-2)
    return (values, indices) if return_indices else values


def _unpool_output_size(input, kernel, stride, padding, output_size) -> tuple:
    """torch's _unpool_output_size: the size a pool's input had, or ``output_size`` (with or
    without its batch and channel dims) once checked against it."""
    dims = len(kernel)
    default = [(input.shape[-dims + d] - 1) * stride[d] + kernel[d] - 2 * padding[d]
               for d in range(dims)]
    if output_size is None:
        sizes = default
    else:
        if len(output_size) == dims + 2:
            output_size = output_size[2:]
        if len(output_size) != dims:
            raise ValueError(
                f"output_size should be a sequence containing {dims} or {dims + 2} elements, "
                f"but it has a length of '{len(output_size)}'")
        for d in range(dims):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < output_size[d] < high:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be '
                                 f"between {low} and {high})")
        sizes = output_size
    for d, size in enumerate(sizes):
        if size < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{d}]={size}")
    return tuple(int(size) for size in sizes)


def _max_unpool(op, input: Tensor, indices: Tensor, output_size: tuple) -> Tensor:
    """torch's checks of max_unpool{2,3}d's arguments, in its words, then the op."""
    dims = len(output_size)
    if indices.dtype.name != "int64":
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{indices.dtype.scalar_name}")
    if input.ndim not in (dims + 1, dims + 2):
        raise ShapeError(f"Input to max_unpooling{dims}d should be a {dims + 1}d or "
                         f"{dims + 2}d Tensor, but got a tensor with {input.ndim} dimensions.")
    if indices.shape != input.shape:
        raise ShapeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    positions = indices._array
    wrong = (positions < 0) | (positions >= math.prod(output_size))
    if wrong.any():
        raise RuntimeError(
            f"Found an invalid max index: {int(positions[wrong].reshape(-1)[0])} (output "
            f"volumes are of size {'x'.join(map(str, output_size))})")
    return op.apply(input, indices, output_size)


def _unpool_arguments(dims: int, kernel_size, stride, padding) -> tuple:
    kernel = _tuple(kernel_size, dims, "kernel_size")
    return kernel, kernel if stride is None else _tuple(stride, dims, "stride"), \
        _tuple(padding, dims, "padding")


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Through max_unpool2d on a width-1 plane, as torch does (SqueezeBackward1 on top)."""
    kernel, stride, padding = _unpool_arguments(1, kernel_size, stride, padding)
    size = _unpool_output_size(input, kernel, stride, padding, output_size)
    return _max_unpool(MaxUnpool2D, input.unsqueeze(-1), indices.unsqueeze(-1),
                       size + (1,)).squeeze(-1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of max_pool2d: each value put back where ``indices`` (the pool's)
    say it came from, zeros elsewhere."""
    kernel, stride, padding = _unpool_arguments(2, kernel_size, stride, padding)
    size = _unpool_output_size(input, kernel, stride, padding, output_size)
    return _max_unpool(MaxUnpool2D, input, indices, size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of max_pool3d (see max_unpool2d)."""
    kernel, stride, padding = _unpool_arguments(3, kernel_size, stride, padding)
    size = _unpool_output_size(input, kernel, stride, padding, output_size)
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"strides should be greater than zero, but got stride: "
                           f"{list(stride)}")
    return _max_unpool(MaxUnpool3D, input, indices, size)


# -- padding ------------------------------------------------------------------------------
def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad`` lists (before, after) from the last dim
    backwards. Modes: "constant" (negative pads crop), "reflect", "replicate", "circular".
    """
    pad = tuple(int(p) for p in pad)
    if mode == "constant":
        return ConstantPadNd.apply(input, pad, 0.0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument')
    dims = len(pad) // 2
    if len(pad) % 2 or dims not in (1, 2, 3) or input.ndim not in (dims + 1, dims + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    pairs = pad_pairs(pad, input.ndim)[input.ndim - dims:]
    sizes = input.shape[input.ndim - dims:]
    for axis, ((before, after), size) in enumerate(zip(pairs, sizes)):
        too_big = (before >= size or after >= size) if mode == "reflect" else (
            before > size or after > size) if mode == "circular" else False
        if too_big or (mode == "replicate" and size == 0):
            raise ShapeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({before}, {after}) at dimension "
                f"{input.ndim - dims + axis} of input {list(input.shape)}")
    if mode == "circular":
        return _circular(input, pairs)
    maps = tuple(resample.pad_map(mode, size, before, after)
                 for (before, after), size in zip(pairs, sizes))
    return resample.PAD_OPS[(mode, dims)].apply(input, maps, (pad,))


def _circular(input: Tensor, pairs) -> Tensor:
    """torch's _pad_circular: the input copied into the middle of a new tensor, then each
    padded dim's ends copied from the other side of that tensor, in place -- so the graph
    is torch's chain of CopySlices nodes, and a negative pad crops."""
    ndim = input.ndim
    first = ndim - len(pairs)
    in_shape = tuple(input.shape)
    out_shape = list(in_shape)
    for offset, (before, after) in enumerate(pairs):
        out_shape[first + offset] += before + after
    out = input.new_empty(out_shape)
    out_slice, in_slice = out, input
    for dim in range(ndim - 1, first - 1, -1):  # the last dim first, as torch goes
        before, after = pairs[dim - first]
        start, stop = max(before, 0), out_shape[dim] - max(after, 0)
        out_slice = out_slice.narrow(dim, start, stop - start)
        start, stop = max(-before, 0), in_shape[dim] - max(-after, 0)
        in_slice = in_slice.narrow(dim, start, stop - start)
    out_slice.copy_(in_slice)
    for dim in range(ndim - 1, first - 1, -1):  # corners are written more than once
        before, after = pairs[dim - first]
        if before > 0:
            out.narrow(dim, 0, before).copy_(
                out.narrow(dim, out_shape[dim] - before - max(after, 0), before))
        if after > 0:
            out.narrow(dim, out_shape[dim] - after, after).copy_(
                out.narrow(dim, max(before, 0), after))
    return out


# -- resizing -----------------------------------------------------------------------------
_INTERPOLATE_OPS = {("nearest", 1): resample.UpsampleNearest1D,
                    ("nearest", 2): resample.UpsampleNearest2D,
                    ("nearest-exact", 1): resample.UpsampleNearestExact1D,
                    ("nearest-exact", 2): resample.UpsampleNearestExact2D,
                    ("linear", 1): resample.UpsampleLinear1D,
                    ("bilinear", 2): resample.UpsampleBilinear2D}
_NEEDS = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims: modes "nearest", "nearest-exact", "linear", "bilinear",
    "area" (with ``align_corners`` for the linear ones)."""
    dims = input.ndim - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if mode in _NEEDS and input.ndim != _NEEDS[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{_NEEDS[mode]}D input")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if antialias:
        raise NotImplementedError("tracegrad does not implement interpolate(antialias=True)")
    if dims < 1:
        raise ValueError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                         f"{input.ndim}D) for the modes: nearest | linear | bilinear | bicubic "
                         f"| trilinear | area | nearest-exact (got {mode})")
    in_sizes = tuple(input.shape[2:])
    if size is not None:
        out_sizes = _tuple(size, dims, "size")
        scales = (None,) * dims
    else:
        scales = tuple(float(s) for s in (scale_factor if isinstance(scale_factor, (list, tuple))
                                          else (scale_factor,) * dims))
        if len(scales) != dims:
            raise ValueError(f"Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(in_sizes)} and scale_factor of shape {list(scales)}.")
        out_sizes = tuple(math.floor(n * s) for n, s in zip(in_sizes, scales))
        if recompute_scale_factor:
            scales = (None,) * dims
    if mode == "area":
        if dims == 1:
            return adaptive_avg_pool1d(input, out_sizes)
        return adaptive_avg_pool2d(input, out_sizes)
    op = _INTERPOLATE_OPS.get((mode, dims))
    if op is None:
        raise NotImplementedError(
            f"tracegrad does not implement interpolate mode {mode!r} for {input.ndim}D input "
            "(it has nearest, nearest-exact and area for 3D/4D, linear for 3D, bilinear for "
            "4D).")
    if mode in ("nearest", "nearest-exact"):
        maps = tuple(resample.nearest_map(n, out, scale, mode == "nearest-exact")
                     for n, out, scale in zip(in_sizes, out_sizes, scales))
        shown = (out_sizes,) + scales  # as torch's node keeps them (grad_fn._saved_scales_h)
    else:
        maps = tuple(resample.linear_map(n, out, scale, align_corners, input._array.dtype)
                     for n, out, scale in zip(in_sizes, out_sizes, scales))
        shown = (out_sizes, align_corners) + scales
    return op.apply(input, maps, shown)


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate "
                  "instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use "
                  "nn.functional.interpolate instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use "
                  "nn.functional.interpolate instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- unfold / fold ------------------------------------------------------------------------
def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding blocks of (N, C, H, W) as columns (N, C * kh * kw, L) -- im2col."""
    if input.ndim not in (3, 4):
        raise ShapeError(f"Input Error: Only 3D or 4D input Tensors are supported (got "
                         f"{input.ndim}D)")
    unbatched = input.ndim == 3
    if unbatched:
        input = input.unsqueeze(0)
    padding = _tuple(padding, 2, "padding")
    out = Im2Col.apply(input, _tuple(kernel_size, 2, "kernel_size"),
                       _tuple(dilation, 2, "dilation"), tuple((p, p) for p in padding),
                       _tuple(stride, 2, "stride"))
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Columns (N, C * kh * kw, L) summed back into (N, C, *output_size) -- col2im."""
    if input.ndim not in (2, 3):
        raise ShapeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are "
                         f"supported (got {input.ndim}D)")
    unbatched = input.ndim == 2
    if unbatched:
        input = input.unsqueeze(0)
    padding = _tuple(padding, 2, "padding")
    out = Col2Im.apply(input, _tuple(output_size, 2, "output_size"),
                       _tuple(kernel_size, 2, "kernel_size"), _tuple(dilation, 2, "dilation"),
                       tuple((p, p) for p in padding), _tuple(stride, 2, "stride"))
    return out.squeeze(0) if unbatched else out


# -- rearranging and power pools ----------------------------------------------------------
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): sub-pixel upsampling."""
    return PixelShuffle.apply(input, int(upscale_factor))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W): the inverse of pixel_shuffle."""
    return PixelUnshuffle.apply(input, int(downscale_factor))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, g * k, *) -> (N, k * g, *): the channels of the ``groups`` interleaved
    (ShuffleNet)."""
    return ChannelShuffle.apply(input, int(groups))


def _lp_pool(max_pool, avg_pool, dims: int, input: Tensor, norm_type: float, kernel_size,
             stride, ceil_mode: bool) -> Tensor:
    """lp_pool{1,2,3}d as torch writes them: ``(sum x^p)^(1/p)`` of each window, as the
    average of the p-th powers times the window's size (the max of |x| for p = inf)."""
    if norm_type == float("inf"):
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    size = math.prod(_tuple(kernel_size, dims, "kernel_size"))
    return (out.sign() * out.abs().relu()).mul(size).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None,
              ceil_mode: bool = False) -> Tensor:
    return _lp_pool(max_pool1d, avg_pool1d, 1, input, norm_type, kernel_size, stride,
                    ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """The p-norm of each window: ``(sum x^p)^(1/p)`` (through avg_pool2d, as torch)."""
    return _lp_pool(max_pool2d, avg_pool2d, 2, input, norm_type, kernel_size, stride,
                    ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """The p-norm of each (depth, height, width) window (through avg_pool3d, as torch)."""
    return _lp_pool(max_pool3d, avg_pool3d, 3, input, norm_type, kernel_size, stride,
                    ceil_mode)
