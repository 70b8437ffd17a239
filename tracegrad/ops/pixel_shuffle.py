"""pixel_shuffle and pixel_unshuffle: channels traded for space (and back) by a reshape and
a transpose. Each is the other's backward. channel_shuffle: channels interleaved across
groups, the same way (its backward is itself, with the other factor)."""

from __future__ import annotations

from ..autograd.function import Op
from ..errors import ShapeError
from . import _math
from ._saved import show_saved


def _split(shape):
    return tuple(shape[:-3]), shape[-3], shape[-2], shape[-1]


class PixelShuffle(Op):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r)."""

    node_name = "PixelShuffleBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, upscale_factor):
        x = a._array
        if x.ndim < 3:
            raise ShapeError(f"pixel_shuffle expects input to have at least 3 dimensions, but "
                             f"got input with {x.ndim} dimension(s)")
        batch, channels, height, width = _split(x.shape)
        r = upscale_factor
        if channels % (r * r):
            raise ShapeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                             f"divisible by the square of upscale_factor, but input.size(-3)="
                             f"{channels} is not divisible by {r * r}")
        ctx.factor = r
        lead = len(batch)
        blocks = x.reshape(batch + (channels // (r * r), r, r, height, width))
        order = tuple(range(lead)) + (lead, lead + 3, lead + 1, lead + 4, lead + 2)
        return a._xp.ascontiguousarray(blocks.transpose(order)).reshape(
            batch + (channels // (r * r), height * r, width * r))

    @staticmethod
    def backward(ctx, grad):
        return _math.apply(PixelUnshuffle, grad, ctx.factor), None


class PixelUnshuffle(Op):
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W)."""

    node_name = "PixelUnshuffleBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, downscale_factor):
        x = a._array
        if x.ndim < 3:
            raise ShapeError(f"pixel_unshuffle expects input to have at least 3 dimensions, "
                             f"but got input with {x.ndim} dimension(s)")
        batch, channels, height, width = _split(x.shape)
        r = downscale_factor
        if height % r or width % r:
            raise ShapeError(f"pixel_unshuffle expects height and width to be divisible by "
                             f"downscale_factor, but input.size(-2)={height} and "
                             f"input.size(-1)={width} are not both divisible by {r}")
        ctx.factor = r
        lead = len(batch)
        blocks = x.reshape(batch + (channels, height // r, r, width // r, r))
        order = tuple(range(lead)) + (lead, lead + 2, lead + 4, lead + 1, lead + 3)
        return a._xp.ascontiguousarray(blocks.transpose(order)).reshape(
            batch + (channels * r * r, height // r, width // r))

    @staticmethod
    def backward(ctx, grad):
        return _math.apply(PixelShuffle, grad, ctx.factor), None

show_saved(PixelShuffle, "upscale_factor", lambda node: node.factor)

show_saved(PixelUnshuffle, "downscale_factor", lambda node: node.factor)


class ChannelShuffle(Op):
    """(N, g * k, *) -> (N, k * g, *): channel ``i * k + j`` moves to ``j * g + i``."""

    node_name = "ChannelShuffleBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, groups):
        x = a._array
        if groups <= 0:
            raise RuntimeError(f"Number of groups to divide channels in must be positive. Value "
                               f"of groups:{groups}")
        if x.ndim <= 2:
            raise ShapeError(f"channel_shuffle expects input with > 2 dims, but got input "
                             f"with sizes {list(x.shape)}")
        channels = x.shape[1]
        if channels % groups:
            raise ShapeError(f"Number of channels must be divisible by groups. Got {channels} "
                             f"channels and {groups} groups.")
        ctx.groups = groups
        blocks = x.reshape((x.shape[0], groups, channels // groups) + x.shape[2:])
        return a._xp.ascontiguousarray(blocks.swapaxes(1, 2)).reshape(x.shape)

    @staticmethod
    def backward(ctx, grad):
        return _math.apply(ChannelShuffle, grad, grad.shape[1] // ctx.groups), None


show_saved(ChannelShuffle, "groups", lambda node: node.groups)
