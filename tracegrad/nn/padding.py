"""Padding layers: constant (and zero), reflection, replication and circular, 1-d to 3-d.

>>> import tracegrad as torch
>>> torch.nn.ReflectionPad1d(2)(torch.tensor([[[1.0, 2.0, 3.0]]]))
tensor([[[3., 2., 1., 2., 3., 2., 1.]]])
"""

from __future__ import annotations

from ..tensor import Tensor
from . import _functional_conv as F
from .module import Module


def _padding(padding, dims: int) -> tuple:
    if isinstance(padding, int):
        return (padding,) * (2 * dims)
    padding = tuple(padding)
    if len(padding) != 2 * dims:
        raise ValueError(f"expected padding of {2 * dims} values ((left, right) per padded "
                         f"dim, last dim first), got {padding}")
    return padding


class _Pad(Module):
    _dims = 1
    _mode = "reflect"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _padding(padding, self._dims)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_Pad):
    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_Pad):
    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_Pad):
    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_Pad):
    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_Pad):
    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_Pad):
    _dims, _mode = 3, "replicate"


class CircularPad1d(_Pad):
    _dims, _mode = 1, "circular"


class CircularPad2d(_Pad):
    _dims, _mode = 2, "circular"


class CircularPad3d(_Pad):
    _dims, _mode = 3, "circular"


class _ConstantPad(_Pad):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPad):
    _dims = 1


class ConstantPad2d(_ConstantPad):
    _dims = 2


class ConstantPad3d(_ConstantPad):
    _dims = 3


class _ZeroPad(_ConstantPad):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad):
    _dims = 1


class ZeroPad2d(_ZeroPad):
    _dims = 2


class ZeroPad3d(_ZeroPad):
    _dims = 3
