"""``tracegrad.nn.functional``: the function forms of layers and losses (``F.relu``,
``F.cross_entropy``, ...), as in ``torch.nn.functional``.

>>> import tracegrad as torch
>>> import tracegrad.nn.functional as F
>>> logits = torch.tensor([[2.0, 0.0, -1.0]], requires_grad=True)
>>> loss = F.cross_entropy(logits, torch.tensor([0]))
>>> loss.grad_fn.name()
'NllLossBackward0'
"""

from __future__ import annotations

import warnings

from ..ops import unary
from ..tensor import Tensor
from ._ops import REDUCTIONS, MseLoss, NllLoss, linear

__all__ = [
    "cross_entropy",
    "linear",
    "log_softmax",
    "mse_loss",
    "nll_loss",
    "relu",
    "sigmoid",
    "silu",
    "softmax",
    "tanh",
]


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else input.relu()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * sigmoid(input)`` (swish), one SiluBackward0 node.

    >>> import tracegrad as torch
    >>> torch.nn.functional.silu(torch.tensor([0.0, 2.0]))
    tensor([0.0000, 1.7616])
    """
    return unary.silu(input)


def softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    return unary.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    return unary.log_softmax(input, dim, dtype)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean (or summed, or per-element) squared error; one MseLossBackward0 node."""
    _check_reduction("mse_loss", reduction)
    if input.shape != target.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.", UserWarning, stacklevel=2)
    return MseLoss.apply(input, target, reduction=reduction)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of class-index ``target`` under log-probabilities
    ``input`` of shape (N, C), (C,) or (N, C, d1, ...)."""
    _check_reduction("nll_loss", reduction)
    return NllLoss.apply(input, target, weight, reduction=reduction,
                         ignore_index=ignore_index)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)``: records LogSoftmaxBackward0 then
    NllLossBackward0, as torch does. A floating ``target`` of the input's shape is read as
    class probabilities."""
    _check_reduction("cross_entropy", reduction)
    class_axis = 0 if input.ndim == 1 else 1
    log_probs = log_softmax(input, class_axis)
    if target.is_floating_point():
        return _soft_cross_entropy(log_probs, target, weight, reduction, label_smoothing,
                                   class_axis)
    loss = nll_loss(log_probs, target, weight, ignore_index, reduction)
    if label_smoothing > 0.0:
        count = input.shape[class_axis]
        smooth = -log_probs if weight is None else -log_probs * _class_shape(weight, input)
        smooth = smooth.sum(class_axis)
        kept = (target != ignore_index)
        smooth = smooth.masked_fill(~kept, 0.0)
        if reduction == "mean":
            denominator = (kept.sum() if weight is None else
                           weight[target.masked_fill(~kept, 0)].masked_fill(~kept, 0.0).sum())
            smooth = smooth.sum() / denominator
        elif reduction == "sum":
            smooth = smooth.sum()
        loss = loss * (1.0 - label_smoothing) + smooth * (label_smoothing / count)
    return loss


def _soft_cross_entropy(log_probs, target, weight, reduction, label_smoothing, class_axis):
    if target.shape != log_probs.shape:
        from ..errors import ShapeError

        raise ShapeError(
            f"cross_entropy: probability targets must have the input's shape, got target "
            f"{target._describe()} for input {log_probs._describe()}. Hint: pass class "
            "indices (int64, shape [N]) instead.")
    count = log_probs.shape[class_axis]
    if label_smoothing > 0.0:
        target = target * (1.0 - label_smoothing) + label_smoothing / count
    terms = log_probs * target
    if weight is not None:
        terms = terms * _class_shape(weight, log_probs)
    losses = -terms.sum(class_axis)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / (losses.numel() if losses.ndim else 1)


def _class_shape(weight: Tensor, like: Tensor) -> Tensor:
    """weight (C,) shaped to broadcast along the class axis of ``like``."""
    if like.ndim <= 2:
        return weight
    return weight.reshape((weight.shape[0],) + (1,) * (like.ndim - 2))


def _check_reduction(function: str, reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(
            f"{function}: {reduction!r} is not a valid value for reduction; expected one of "
            f"{', '.join(repr(r) for r in REDUCTIONS)}")
