"""The losses of ``torch.nn.functional`` (re-exported by ``nn.functional``).

Those torch computes in one kernel are one node (``tracegrad/ops/loss.py``,
``nn/_ops.py``); the others are the same tensor expressions torch's own functional writes,
so their graphs and numbers match. Every loss takes ``reduction`` ("none", "mean", "sum");
the deprecated ``size_average``/``reduce`` arguments map onto it as in torch.

>>> import tracegrad as torch
>>> import tracegrad.nn.functional as F
>>> F.l1_loss(torch.tensor([1.0, 4.0]), torch.tensor([0.0, 0.0]))
tensor(2.5000)
"""

from __future__ import annotations

import math
import warnings

from ..autograd.grad_mode import no_grad, state
from ..errors import DTypeError, ShapeError
from ..factories import full_like
from ..ops import loss as ops
from ..ops.indexing import Where
from ..tensor import Tensor
from ._functional_activation import log_softmax, logsigmoid
from ._functional_norm import pairwise_distance
from ._ops import REDUCTIONS, MseLoss, NllLoss, NllLoss2D


def _reduction(reduction: str, size_average=None, reduce=None) -> str:
    """torch's legacy ``size_average``/``reduce`` pair, or ``reduction``, checked."""
    if size_average is not None or reduce is not None:
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{_legacy(size_average, reduce)}' instead.", UserWarning, stacklevel=3)
        reduction = _legacy(size_average, reduce)
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _legacy(size_average, reduce) -> str:
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduce(losses: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses


def _warn_shapes(input: Tensor, target: Tensor) -> None:
    if input.shape != target.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", UserWarning, stacklevel=3)


def _broadcast(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    if input.shape == target.shape:
        return input, target
    from ._functional_norm import _broadcast_shape

    shape = _broadcast_shape(input.shape, target.shape)
    return input.expand(*shape), target.expand(*shape)


def _promoted(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """input and target in their common dtype (torch's losses promote)."""
    from .. import _dtype

    common = _dtype.promote(input._array.dtype, target._array.dtype)
    if input._array.dtype != common:
        input = input.to(common)
    if target._array.dtype != common:
        target = target.to(common)
    return input, target


def _weighted(losses: Tensor, weight: Tensor, input: Tensor, reduction: str,
              mean_by_weight: bool) -> Tensor:
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = losses * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    return weighted.sum() / weight.sum() if mean_by_weight else weighted.mean()


def _not_differentiable(function: str, argument: str, tensor) -> None:
    if tensor is not None and tensor.requires_grad and state.grad_enabled:
        raise RuntimeError(
            f"The function '{function}' is not differentiable with respect to argument "
            f"'{argument}'. This input cannot have requires_grad True.")


# -- regression ---------------------------------------------------------------------------
def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean (or summed) absolute error: ``(input - target).abs().mean()``."""
    _warn_shapes(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    input, target = _broadcast(*_promoted(input, target))
    losses = (input - target).abs()
    if weight is not None:
        return _weighted(losses, weight, input, reduction, True)
    return _reduce(losses, reduction)


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean (or summed, or per-element) squared error; one MseLossBackward0 node."""
    _warn_shapes(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    input, target = _broadcast(*_promoted(input, target))
    if weight is not None:
        return _weighted((input - target) ** 2, weight, input, reduction, True)
    return MseLoss.apply(input, target, reduction=reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Squared below ``beta``, absolute above (``beta=0`` is l1_loss)."""
    _warn_shapes(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)
    input, target = _broadcast(*_promoted(input, target))
    return ops.SmoothL1Loss.apply(input, target, reduction, beta)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """Squared below ``delta``, ``delta``-scaled absolute above."""
    _warn_shapes(input, target)
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    input, target = _broadcast(*_promoted(input, target))
    if weight is not None:
        losses = ops.HuberLoss.apply(input, target, "none", delta)
        return _weighted(losses, weight, input, reduction, False)
    return ops.HuberLoss.apply(input, target, reduction, delta)


# -- probabilities ------------------------------------------------------------------------
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``-(t * log(x) + (1 - t) * log(1 - x))`` for probabilities ``x`` in [0, 1]."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size.")
    _not_differentiable("binary_cross_entropy", "weight", weight)
    if weight is not None and weight.shape != input.shape:
        from ._functional_norm import _broadcast_shape

        weight = weight.expand(*_broadcast_shape(target.shape, weight.shape))
    return ops.BinaryCrossEntropy.apply(input, target, reduction, weight=weight)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """binary_cross_entropy of ``sigmoid(input)``, computed stably from the logits;
    ``pos_weight`` weighs the positive term per class."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    _not_differentiable("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    input, target = _promoted(input, target)
    return ops.BinaryCrossEntropyWithLogits.apply(input, target, reduction, weight=weight,
                                                  pos_weight=pos_weight)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of class-index ``target`` under log-probabilities ``input``
    of shape (N, C), (C,) or (N, C, d1, ...)."""
    reduction = _reduction(reduction, size_average, reduce)
    ndim = input.dim()
    if ndim < 3:
        return NllLoss.apply(input, target, weight, reduction=reduction,
                             ignore_index=ignore_index)
    if ndim == 4:
        return NllLoss2D.apply(input, target, weight, reduction=reduction,
                               ignore_index=ignore_index)
    # torch's nll_loss_nd: 3 or 5+ dims go through the 4-d kernel, viewed as (N, C, 1, -1)
    # (ViewBackward0 nodes around NllLoss2DBackward0, as in torch's graph)
    if tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        return NllLoss2D.apply(input, target, weight, reduction=reduction,
                               ignore_index=ignore_index)  # (its error names the shapes)
    n, c = input.shape[0], input.shape[1]
    empty = input.numel() == 0
    flat = input.contiguous().view(n, c, 0, 0) if empty else input.contiguous().view(n, c, 1, -1)
    flat_target = target.contiguous().view(n, 0, 0) if target.numel() == 0 else \
        target.contiguous().view(n, 1, -1)
    out = NllLoss2D.apply(flat, flat_target, weight, reduction=reduction,
                          ignore_index=ignore_index)
    return out.view((n,) + tuple(input.shape[2:])) if reduction == "none" else out


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)``: records LogSoftmaxBackward0 then
    NllLossBackward0, as torch does. A floating ``target`` of the input's shape is read as
    class probabilities."""
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    class_axis = 0 if input.ndim == 1 else 1
    log_probs = log_softmax(input, class_axis)
    if target.is_floating_point():
        return _soft_cross_entropy(log_probs, target, weight, reduction, label_smoothing,
                                   class_axis)
    loss = nll_loss(log_probs, target, weight, None, ignore_index, None, reduction)
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
    if reduction == "none":
        return -terms.sum(class_axis)
    if reduction == "sum":
        return -terms.sum()
    return -terms.sum() / (log_probs.numel() / count)


def _class_shape(weight: Tensor, like: Tensor) -> Tensor:
    """weight (C,) shaped to broadcast along the class axis of ``like``."""
    if like.ndim <= 2:
        return weight
    return weight.reshape((weight.shape[0],) + (1,) * (like.ndim - 2))


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL divergence of ``target`` from ``input`` (log-probabilities); "batchmean" divides
    the sum by the batch size, as the definition does."""
    if size_average is not None or reduce is not None:
        reduction = _reduction("mean", size_average, reduce)
    elif reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.", UserWarning, stacklevel=2)
    if reduction not in REDUCTIONS + ("batchmean",):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        losses = target.exp() * (target - input)
    else:
        # xlogy(t, t): t * log(t), and 0 where t == 0 (log of 1 there keeps it finite)
        safe = Where.apply(target == 0, 1.0, target)
        losses = target * safe.log() - target * input
    if reduction == "batchmean":
        total = losses.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(losses, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    reduction = _reduction(reduction, size_average, reduce)
    if log_input:
        losses = input.exp() - target * input
    else:
        losses = input - target * (input + eps).log()
    if full:
        safe = Where.apply(target <= 1, 1.0, target)
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        losses = losses + stirling.masked_fill(target <= 1, 0.0)
    return _reduce(losses, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``0.5 * (log(var) + (input - target)**2 / var)``, var clamped to ``eps`` outside
    the graph (as torch does)."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = full_like(input, float(var))
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(
                b for a, b in zip(input.shape, var.shape) if a != b) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    losses = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        losses = losses + 0.5 * math.log(2 * math.pi)
    return _reduce(losses, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))`` for targets of +1 and -1."""
    reduction = _reduction(reduction, size_average, reduce)
    _not_differentiable("soft_margin_loss", "target", target)
    return ops.SoftMarginLoss.apply(input, target, reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: per sample, ``max(0, margin - x[y] + x[i]) ** p`` summed
    over the other classes ``i`` (times ``weight[y]``), divided by the number of classes."""
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    _check_margin_input(input)
    classes = input.shape[-1] if input.ndim else 1
    samples = input.shape[0] if input.ndim == 2 else 1
    if target.ndim > 1 or target.numel() != samples:
        raise ShapeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{samples}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}.")
    _check_long_target(target)
    if weight is not None:
        if weight.numel() != classes:
            raise ShapeError(f"inconsistent weight size, expected {classes} but got "
                             f"{list(weight.shape)}")
        if weight.dtype != input.dtype:
            raise DTypeError(f"expected scalar type {input.dtype.scalar_name} but found "
                             f"{weight.dtype.scalar_name}")
        _not_differentiable("multi_margin_loss", "weight", weight)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"multi_margin_loss_cpu_kernel" not implemented for '
                                  f"'{input.dtype.scalar_name}'")
    classes_given = target._array
    if classes_given.size and (classes_given.min() < 0 or classes_given.max() >= classes):
        raise RuntimeError("target out of range")
    return ops.MultiMarginLoss.apply(input, target, p, margin, weight, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: per sample, ``max(0, 1 - x[j] + x[i])`` summed over its
    target classes ``j`` (``target``'s row up to its first -1) and the other classes ``i``,
    divided by the number of classes."""
    reduction = _reduction(reduction, size_average, reduce)
    _check_margin_input(input)
    if target.shape != input.shape:
        raise ShapeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                         f"{list(input.shape)}")
    _check_long_target(target)
    classes = input.shape[-1] if input.ndim else 1
    labels = target._array
    if labels.size and (labels.min() < -1 or labels.max() >= classes):
        raise RuntimeError("argument #2 'target' is out of range")
    return ops.MultilabelMarginLoss.apply(input, target, reduction)


def _check_margin_input(input: Tensor) -> None:
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0) or (
            input.ndim == 1 and input.shape[0] == 0):
        raise ShapeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, "
                         f"but got: {list(input.shape)}")


def _check_long_target(target: Tensor) -> None:
    if target.dtype.name != "int64":
        raise DTypeError(f"expected scalar type Long but found {target.dtype.scalar_name}")


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """Binary cross entropy of every class's logit, averaged over the classes."""
    reduction = _reduction(reduction, size_average, reduce)
    losses = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        losses = losses * weight
    losses = losses.sum(dim=input.ndim - 1) / input.shape[-1]
    return _reduce(losses, reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1."""
    reduction = _reduction(reduction, size_average, reduce)
    clamped = (margin - input).clamp_min(0)
    losses = (Where.apply(target != 1, clamped, 0.0) + Where.apply(target != -1, input, 0.0))
    return _reduce(losses, reduction)


# -- ranking and embeddings ---------------------------------------------------------------
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``1 - cos`` for target 1, ``max(0, cos - margin)`` for target -1."""
    reduction = _reduction(reduction, size_average, reduce)
    dim = 1 if input1.ndim == 2 else 0
    products = (input1 * input2).sum(dim)
    squares1 = (input1 * input1).sum(dim) + 1e-12
    squares2 = (input2 * input2).sum(dim) + 1e-12
    cosine = products / (squares1 * squares2).sqrt()
    positive = Where.apply(target == 1, 1 - cosine, 0.0)
    negative = Where.apply(target == -1, (cosine - margin).clamp_min(0), 0.0)
    return _reduce(positive + negative, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _reduction(reduction, size_average, reduce)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes:"
            f" input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))``."""
    reduction = _reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                         f"{margin} instead")
    distance_positive = pairwise_distance(anchor, positive, p, eps)
    distance_negative = pairwise_distance(anchor, negative, p, eps)
    if swap:
        distance_swap = pairwise_distance(positive, negative, p, eps)
        distance_negative = distance_negative.minimum(distance_swap)
    losses = (margin + distance_positive - distance_negative).clamp_min(0)
    return _reduce(losses, reduction)
