"""Dropout layers: active in training mode, the identity in eval mode.

>>> import tracegrad as torch
>>> layer = torch.nn.Dropout(0.5).eval()
>>> layer(torch.ones(3))
tensor([1., 1., 1.])
"""

from __future__ import annotations

from ..tensor import Tensor
from . import _functional_norm as F
from .module import Module


class _DropoutNd(Module):
    _function = staticmethod(F.dropout)

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return self._function(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training, scaling the rest by
    ``1 / (1 - p)``."""

    _function = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    _function = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) input with probability ``p``."""

    _function = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    _function = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps the activations' mean and variance."""

    _function = staticmethod(F.alpha_dropout)
