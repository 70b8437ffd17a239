"""constant_pad_nd: ``F.pad(x, pad, mode="constant", value=v)``; negative pads crop.

Its backward is itself with the pads negated (cropping what was added, or padding back
with zeros what was cropped), so derivatives of every order follow. The reflect and
replicate modes are per-axis gathers: ``resample.py``.
"""

from __future__ import annotations

from .._layout import row_major
from ..autograd.function import Op
from ..errors import ShapeError
from . import _math
from ._saved import as_torch_ints, show_saved


def pad_pairs(pad, ndim: int) -> list:
    """torch's flat ``pad`` (last dim first: left, right, top, bottom, ...) as (before,
    after) per dim of an ``ndim``-d tensor."""
    pairs = [(0, 0)] * ndim
    for index in range(len(pad) // 2):
        pairs[ndim - 1 - index] = (int(pad[2 * index]), int(pad[2 * index + 1]))
    return pairs


class ConstantPadNd(Op):
    node_name = "ConstantPadNdBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, pad, value=0.0):
        x = a._array
        if len(pad) % 2:
            raise ShapeError(f"Length of pad must be even but instead it equals {len(pad)}")
        if len(pad) // 2 > x.ndim:
            raise ShapeError(
                f"Length of pad should be no more than twice the number of dimensions of the "
                f"input. Pad length is {len(pad)} while the input has {x.ndim} dimensions "
                f"({a._describe()}).")
        pairs = pad_pairs(pad, x.ndim)
        crop = tuple(slice(max(-before, 0), size - max(-after, 0))
                     for (before, after), size in zip(pairs, x.shape))
        for (before, after), size in zip(pairs, x.shape):
            if size + before + after < 0:
                raise ShapeError(
                    f"The input size {size}, plus negative padding {before} and {after} "
                    f"resulted in a negative output size, which is invalid. Check dimension "
                    f"of your input ({a._describe()}).")
        ctx.pad = tuple(pad)
        cropped = x[crop]
        widths = tuple((max(before, 0), max(after, 0)) for before, after in pairs)
        if not any(b or e for b, e in widths):
            return cropped.copy()
        # (torch writes into a fresh contiguous tensor)
        return row_major(a._xp.pad(cropped, widths, constant_values=value)
                         .astype(x.dtype, copy=False))

    @staticmethod
    def backward(ctx, grad):
        return _math.reapply(ConstantPadNd, grad, tuple(-p for p in ctx.pad), 0.0), None, None

show_saved(ConstantPadNd, "pad", lambda node: as_torch_ints(node.pad))
