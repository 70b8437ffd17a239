"""Normalization, dropout, embeddings and distances of ``torch.nn.functional``
(re-exported by ``nn.functional``).

>>> import tracegrad as torch
>>> import tracegrad.nn.functional as F
>>> F.one_hot(torch.tensor([0, 2]), 3)
tensor([[1, 0, 0],
        [0, 0, 1]])
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import backends
from .._dtype import int32, int64
from ..autograd.grad_mode import no_grad
from ..errors import DTypeError, ShapeError
from ..factories import arange
from ..ops.distance import Pdist
from ..ops.embedding import Embedding, EmbeddingBag
from ..ops.normalization import NativeBatchNorm, NativeGroupNorm, NativeLayerNorm
from ..random import numpy_generator
from ..tensor import Tensor
from ._functional_conv import avg_pool2d, avg_pool3d, pad


# -- normalization ------------------------------------------------------------------------
def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize over every dim but dim 1 (channels); in training the batch's statistics
    (and the running ones move by ``momentum``), otherwise the running ones."""
    if input.ndim < 2:
        raise ShapeError(f"batch_norm: expected a batched input (N, C, ...), got "
                         f"{input._describe()}")
    if training:
        count = input.shape[0]
        for size in input.shape[2:]:
            count *= size
        if count == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {input.shape}")
    return NativeBatchNorm.apply(input, weight, bias, training, momentum, eps,
                                 running_mean=running_mean, running_var=running_var)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """batch_norm of the input viewed as one sample of N * C channels, as torch does it."""
    batch, channels = input.shape[:2]
    grouped = input.reshape((1, batch * channels) + tuple(input.shape[2:]))
    repeated_mean = None if running_mean is None else running_mean.repeat(batch)
    repeated_var = None if running_var is None else running_var.repeat(batch)
    out = NativeBatchNorm.apply(
        grouped, None if weight is None else weight.repeat(batch),
        None if bias is None else bias.repeat(batch), use_input_stats, momentum, eps,
        running_mean=repeated_mean, running_var=repeated_var)
    if use_input_stats and running_mean is not None:
        with no_grad():
            running_mean.copy_(repeated_mean.view(batch, channels).mean(0))
            running_var.copy_(repeated_var.view(batch, channels).mean(0))
    return out.view(input.shape)


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims of every sample."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return NativeLayerNorm.apply(input, tuple(int(s) for s in normalized_shape), weight, bias,
                                 eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    return NativeGroupNorm.apply(input, weight, bias, num_groups, eps)[0]


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims
    (``eps`` defaults to the dtype's machine epsilon, as torch's)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    count = len(normalized_shape)
    if tuple(input.shape[input.ndim - count:]) != tuple(normalized_shape):
        raise ShapeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
            f"{list(input.shape)}")
    if eps is None:
        eps = float(np.finfo(input._array.dtype).eps)
    dims = tuple(range(input.ndim - count, input.ndim))
    out = input * ((input * input).mean(dims, keepdim=True) + eps) ** -0.5
    return out if weight is None else out * weight


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Each value divided by ``(k + alpha * mean of the squares of its size neighbouring
    channels) ** beta`` (AlexNet's normalization). Built from ops as torch builds it, so
    the graph is torch's: MulBackward0, the pad, an AvgPool2D/3D node, PowBackward0, ..."""
    dim = input.ndim
    if dim < 3:
        # torch's message, with the run of spaces its source leaves in it
        raise ValueError(f"Expected 3D or higher dimensionality{' ' * 26}input (got {dim} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.size()
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).view(sizes)
    return input / div.mul(alpha).add(k).pow(beta)


# -- dropout ------------------------------------------------------------------------------
def _check_probability(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input: Tensor, shape, p: float) -> Tensor:
    """Bernoulli(1 - p) / (1 - p) of ``shape``, in the input's dtype and device."""
    keep = numpy_generator().random(shape) >= p
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    mask = (keep * scale).astype(input._array.dtype)
    return Tensor._wrap(backends.to_device(mask, input.device), False)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``
    (a MulBackward0 by the mask, as in torch); the identity unless ``training``."""
    _check_probability(p)
    if not training or p == 0.0:
        return input
    mask = _keep_mask(input, tuple(input.shape), p)
    return input.mul_(mask) if inplace else input * mask


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """Zero whole channels: one draw per (sample, channel), broadcast over the rest."""
    _check_probability(p)
    if not training or p == 0.0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    mask = _keep_mask(input, shape, p)
    return input.mul_(mask) if inplace else input * mask


_SELU_ALPHA = 1.7580993408473766  # -SELU_SCALE * SELU_ALPHA: where SELU's output saturates


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's mean and variance: dropped units are set to SELU's
    saturation value, then everything is rescaled and shifted (torch's formula)."""
    _check_probability(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0
    keep = numpy_generator().random(tuple(input.shape)) >= p
    a = 1.0 / np.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    noise = (keep * a).astype(input._array.dtype)
    shift = ((keep - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p).astype(input._array.dtype)
    device = input.device
    return (input * Tensor._wrap(backends.to_device(noise, device), False)
            + Tensor._wrap(backends.to_device(shift, device), False))


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 2:
        return _feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)
    return _feature_dropout(input, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Channel-wise dropout of (N, C, H, W); a 3-D input is read as (N, C, L), with torch's
    warning."""
    _check_probability(p)
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    if input.ndim == 4:
        return _feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)
    return _feature_dropout(input, p, training, inplace)


# -- embeddings ---------------------------------------------------------------------------
def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``; the ``padding_idx`` row gets no
    gradient; ``max_norm`` first rescales (in place) the picked rows longer than it."""
    if sparse:
        raise NotImplementedError(
            "tracegrad does not implement sparse gradients (embedding(sparse=True)); use the "
            "default dense gradient.")
    rows = weight.shape[0]
    if padding_idx is not None:
        if padding_idx >= rows or padding_idx < -rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % rows
    else:
        padding_idx = -1
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    return Embedding.apply(weight, indices=input, padding_idx=padding_idx,
                           scale_grad_by_freq=scale_grad_by_freq)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """The rows of ``weight`` that each bag of indices picks, reduced by ``mode`` ("sum",
    "mean" or "max") without the (bags, length, dim) tensor between. A 2-d ``input`` is one
    bag per row; a 1-d one is cut into bags where ``offsets`` start them.

    >>> import tracegrad as torch
    >>> weight = torch.arange(6.0).view(3, 2)
    >>> torch.nn.functional.embedding_bag(torch.tensor([0, 2, 1]), weight, torch.tensor([0, 2]))
    tensor([[2., 3.],
            [2., 3.]])
    """
    if weight.dtype == int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{_torch_type_name(offsets)}")
        offsets = arange(0, input.numel(), input.shape[1], dtype=input.dtype)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
            "on GitHub.")
    if sparse:
        raise NotImplementedError(
            "tracegrad does not implement sparse gradients (embedding_bag(sparse=True)); use "
            "the default dense gradient.")
    _check_bags(input, weight, offsets, per_sample_weights, padding_idx)
    rows = weight.shape[0]
    return EmbeddingBag.apply(weight, per_sample_weights, indices=input, offsets=offsets,
                              mode=mode, scale_grad_by_freq=scale_grad_by_freq,
                              include_last_offset=include_last_offset,
                              padding_idx=None if padding_idx is None else padding_idx % rows)


def _torch_type_name(value) -> str:
    """``str(type(value))`` as torch's message shows it for a tensor."""
    return "<class 'torch.Tensor'>" if isinstance(value, Tensor) else str(type(value))


def _check_bags(input, weight, offsets, per_sample_weights, padding_idx) -> None:
    """torch's checks of embedding_bag's kernel arguments, in its words."""
    for value in (input, offsets):
        if value.dtype not in (int64, int32):  # torch names both 'indices'
            raise DTypeError(
                "Expected tensor for argument #1 'indices' to have one of the following "
                f"scalar types: Long, Int; but got {value.type()} instead (while checking "
                "arguments for embedding_bag)")
    if not weight.is_floating_point():
        raise DTypeError(
            "Expected tensor for argument #1 'weight' to have one of the following scalar "
            f"types: Half, BFloat16, Float, Double; but got {weight.type()} instead (while "
            "checking arguments for embedding_bag)")
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise DTypeError(
            "Expected tensor for argument #1 'weight' to have the same type as tensor for "
            f"argument #1 'per_sample_weights'; but type {weight.type()} does not equal "
            f"{per_sample_weights.type()} (while checking arguments for embedding_bag)")
    rows = weight.shape[0]
    if padding_idx is not None and not -rows <= padding_idx < rows:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, -{rows} "
                           f"through {rows - 1}, but got {padding_idx}")
    starts = offsets._array
    if len(starts) and int(starts[0]) != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            f"from position 0. However, got {int(starts[0])}")
    if len(starts) and int(starts[-1]) > input.numel():
        raise RuntimeError(f"offsets[-1] can not be greater than input's length "
                           f"{input.numel()} but got offsets[-1] of {int(starts[-1])}")
    entries = input._array
    wrong = (entries < 0) | (entries >= rows)
    if wrong.any():
        raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but found "
                         f"idx to be {int(entries[wrong.argmax()])}")


def _renorm_rows(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """torch's embedding_renorm_: rows used by ``indices`` whose norm exceeds ``max_norm``
    are scaled down to it, in place and outside the graph."""
    xp = weight._xp
    used = xp.unique(indices._array.reshape(-1) % weight.shape[0])
    picked = weight._array[used]
    norms = (xp.abs(picked) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    with no_grad():
        weight._array[used] = picked * scale[:, None].astype(picked.dtype)
        weight._after_inplace("embedding_renorm_")


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 rows with a 1 at each index: shape ``tensor.shape + (num_classes,)``."""
    indices = tensor._array
    if indices.dtype.kind not in "iu":
        raise DTypeError("one_hot is only applicable to index tensor of type LongTensor.")
    xp = tensor._xp
    if indices.size and int(indices.min()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(indices.max()) + 1 if indices.size else 0
    elif indices.size and int(indices.max()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (indices[..., None] == xp.arange(num_classes)).astype("int64")
    return Tensor._wrap(out, False)


# -- distances ----------------------------------------------------------------------------
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denominator = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is not None:
        with no_grad():
            out.copy_(input / denominator)
        return out
    return input / denominator


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Each input divided by its norm (clamped to ``eps`` outside the graph, as torch does),
    then their product summed along ``dim``."""
    if x1.shape != x2.shape:
        shape = _broadcast_shape(x1.shape, x2.shape)
        x1, x2 = x1.expand(*shape), x2.expand(*shape)
    norm1 = x1.norm(2, dim, keepdim=True).clone()
    norm2 = x2.norm(2, dim, keepdim=True).clone()
    with no_grad():
        norm1.clamp_(min=eps)
        norm2.clamp_(min=eps)
    return ((x1 / norm1) * (x2 / norm2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim."""
    last = max(x1.ndim, x2.ndim) - 1
    return (x1 - x2 + eps).norm(p, last, keepdim=keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distance between each pair of rows ``i < j`` of ``input`` (N, M): N * (N - 1)
    / 2 values, row by row.

    >>> import tracegrad as torch
    >>> torch.nn.functional.pdist(torch.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
    tensor([5.0000, 1.0000, 4.2426])
    """
    return Pdist.apply(input, p)


def _broadcast_shape(first, second) -> tuple:
    ndim = max(len(first), len(second))
    a = (1,) * (ndim - len(first)) + tuple(first)
    b = (1,) * (ndim - len(second)) + tuple(second)
    shape = []
    for size_a, size_b in zip(a, b):
        if size_a != size_b and 1 not in (size_a, size_b):
            raise ShapeError(f"The size of tensor a ({size_a}) must match the size of tensor b "
                             f"({size_b}) at non-singleton dimension {len(shape)}")
        shape.append(max(size_a, size_b))
    return tuple(shape)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = input1 @ weight[o] @ input2 + bias[o]``."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise ShapeError(
            f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} "
            f"and {list(input2.shape[:-1])}")
    out_features, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2:
        raise ShapeError(
            f"bilinear(): input sizes {input1.shape[-1]} and {input2.shape[-1]} do not match "
            f"weight {list(weight.shape)} (out_features, in1_features, in2_features)")
    batch = tuple(input1.shape[:-1])
    left = input1.reshape(-1, in1)
    right = input2.reshape(-1, in2)
    mixed = left.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    out = (mixed.reshape(-1, out_features, in2) * right.unsqueeze(1)).sum(-1)
    out = out.view(batch + (out_features,))
    return out if bias is None else out + bias

