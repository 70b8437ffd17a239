"""Pooling layers: max, average and adaptive pools, 1-d, 2-d and 3-d.

>>> import tracegrad as torch
>>> torch.nn.MaxPool2d(2)(torch.arange(16.0).view(1, 1, 4, 4))
tensor([[[[ 5.,  7.],
          [13., 15.]]]])
"""

from __future__ import annotations

from ..tensor import Tensor
from . import _functional_conv as F
from .module import Module


class _MaxPoolNd(Module):
    _function = staticmethod(F.max_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor):
        return self._function(input, self.kernel_size, self.stride, self.padding,
                              self.dilation, ceil_mode=self.ceil_mode,
                              return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
                f", dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    _function = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Max over each ``kernel_size`` window; ``return_indices`` also gives where it was."""

    _function = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    _function = staticmethod(F.max_pool3d)


class _AvgPoolNd(Module):
    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        single = F._tuple  # torch keeps 1-d pools' sizes as 1-tuples
        self.kernel_size = single(kernel_size, 1)
        self.stride = single(stride if stride is not None else kernel_size, 1)
        self.padding, self.ceil_mode = single(padding, 1), ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    _function = staticmethod(F.avg_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return self._function(input, self.kernel_size, self.stride, self.padding,
                              self.ceil_mode, self.count_include_pad, self.divisor_override)


class AvgPool3d(AvgPool2d):
    _function = staticmethod(F.avg_pool3d)


class _MaxUnpoolNd(Module):
    _function = staticmethod(F.max_unpool2d)
    _dims = 2

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = F._tuple(kernel_size, self._dims)
        self.stride = F._tuple(stride if stride is not None else kernel_size, self._dims)
        self.padding = F._tuple(padding, self._dims)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return self._function(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _function, _dims = staticmethod(F.max_unpool1d), 1


class MaxUnpool2d(_MaxUnpoolNd):
    """Puts a MaxPool2d's maxima back where its indices say they came from."""


class MaxUnpool3d(_MaxUnpoolNd):
    _function, _dims = staticmethod(F.max_unpool3d), 3


class _AdaptivePool(Module):
    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average pooling to a fixed ``output_size`` (None keeps that dim's size)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptivePool):
    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    def forward(self, input: Tensor):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    def forward(self, input: Tensor):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    def forward(self, input: Tensor):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _LPPool(Module):
    def __init__(self, norm_type: float, kernel_size, stride=None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return self._function(input, float(self.norm_type), self.kernel_size, self.stride,
                              self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    _function = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPool):
    _function = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPool):
    _function = staticmethod(F.lp_pool3d)
