"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d, initialised and checked as
torch's are.

>>> import tracegrad as torch
>>> conv = torch.nn.Conv2d(1, 4, 3, padding=1)
>>> conv(torch.ones(2, 1, 8, 8)).shape
tracegrad.Size([2, 4, 8, 8])
"""

from __future__ import annotations

import math

from .. import factories
from ..tensor import Tensor
from . import _functional_conv as F
from . import init
from .module import Module
from .parameter import Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value, count: int) -> tuple:
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,) * count


class _ConvNd(Module):
    _dims = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None, output_padding=0) -> None:
        super().__init__()
        dims = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, dims)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, dims)
        self.stride = _ntuple(stride, dims)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, dims)
        self.dilation = _ntuple(dilation, dims)
        self.output_padding = _ntuple(output_padding, dims)
        self.transposed, self.groups, self.padding_mode = self._transposed, groups, padding_mode
        self._reversed_padding_repeated_twice = self._repeated_padding()
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(factories.empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(factories.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _repeated_padding(self) -> list:
        """The padding as F.pad takes it (last dim first), for non-zero padding modes."""
        if isinstance(self.padding, str):
            pads = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
            return pads
        return [p for p in reversed(self.padding) for _ in range(2)]

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            text += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class _Conv(_ConvNd):
    _function = staticmethod(F.conv2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._function(padded, self.weight, self.bias, self.stride, 0,
                                  self.dilation, self.groups)
        return self._function(input, self.weight, self.bias, self.stride, self.padding,
                              self.dilation, self.groups)


class Conv1d(_Conv):
    _dims = 1
    _function = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-d convolution over (N, C_in, H, W): weight (C_out, C_in / groups, kh, kw)."""

    _dims = 2
    _function = staticmethod(F.conv2d)


class Conv3d(_Conv):
    _dims = 3
    _function = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _transposed = True
    _function = staticmethod(F.conv_transpose2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__} does not support string padding")  # noqa: TRY004 - torch's class
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return self._function(input, self.weight, self.bias, self.stride, self.padding,
                              output_padding, self.groups, self.dilation)

    def _output_padding(self, input: Tensor, output_size) -> tuple:
        """The output_padding that makes the output ``output_size`` (torch's rule)."""
        if output_size is None:
            return self.output_padding
        dims = self._dims
        sizes = list(output_size)[-dims:]
        if len(sizes) != dims:
            raise ValueError(
                f"ConvTranspose{dims}D: for {input.ndim}D input, output_size "
                             f"must have {dims} or {dims + 2} elements (got {len(output_size)})")
        extra = []
        for axis in range(dims):
            size = input.shape[input.ndim - dims + axis]
            smallest = ((size - 1) * self.stride[axis] - 2 * self.padding[axis]
                        + self.dilation[axis] * (self.kernel_size[axis] - 1) + 1)
            largest = smallest + self.stride[axis] - 1
            if not smallest <= sizes[axis] <= largest:
                raise ValueError(
                    f"requested an output size of {sizes}, but valid sizes range from "
                    f"{smallest} to {largest} (for an input of {list(input.shape[2:])})")
            extra.append(sizes[axis] - smallest)
        return tuple(extra)


class ConvTranspose1d(_ConvTranspose):
    _dims = 1
    _function = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """The adjoint of Conv2d (upsampling by ``stride``): weight (C_in, C_out / groups, kh, kw)."""

    _dims = 2
    _function = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    _dims = 3
    _function = staticmethod(F.conv_transpose3d)
