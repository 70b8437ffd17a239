"""The losses torch records as one node: binary_cross_entropy(_with_logits), smooth_l1_loss,
huber_loss. (mse_loss and nll_loss live in ``tracegrad/nn/_ops.py``; the other losses are
compositions of tensor ops, as they are in torch.)

Each takes ``reduction`` ("none", "mean", "sum"); class weights are keyword attributes,
not inputs of the node (torch differentiates only input and target). Backward is written
once for Tensors and arrays (``array_backward``), so second derivatives work.
"""

from __future__ import annotations

from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..errors import DTypeError
from ..tensor import Tensor
from . import _math
from ._edges import select_edges
from ._math import sum_to
from ._saved import REDUCTION_ENUM, show_saved
from .unary import _quiet


def reduce_array(losses, reduction: str):
    if reduction == "none":
        return losses
    total = losses.sum()
    return total / losses.size if reduction == "mean" else total


def _scaled(grad, reduction: str, count: int):
    """The gradient of the reduction: grad for "none" and "sum", grad / count for "mean"."""
    return grad * (1.0 / count) if reduction == "mean" else grad


def _same_floating(op_name: str, input: Tensor, target: Tensor):
    x, t = input._array, target._array
    if x.dtype.kind != "f":
        raise NotImplementedError(
            f'"{op_name}" not implemented for \'{input.dtype.name}\' ({input._describe()}). '
            "Hint: convert the input with .float().")
    if t.dtype != x.dtype:
        raise DTypeError(
            f"Found dtype {target.dtype.name} but expected {input.dtype.name} ({op_name}: "
            f"target {target._describe()}, input {input._describe()}). Hint: convert the "
            f"target with .to({input.dtype!r}); these losses take probabilities or values, "
            "not class indices.")
    return x, t


class BinaryCrossEntropy(Op):
    """``-weight * (t * log(x) + (1 - t) * log(1 - x))``, each log clamped at -100."""

    node_name = "BinaryCrossEntropyBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, input, target, reduction="mean", weight=None):
        x, t = _same_floating("binary_cross_entropy", input, target)
        xp = input._xp
        if bool(((x < 0) | (x > 1)).any()):
            raise RuntimeError(
                f"all elements of input should be between 0 and 1 ({input._describe()}). "
                "Hint: pass probabilities (apply sigmoid first), or use "
                "binary_cross_entropy_with_logits on the raw scores.")
        with _quiet(xp):
            losses = -(t * xp.maximum(xp.log(x), -100) + (1 - t) * xp.maximum(xp.log1p(-x),
                                                                             -100))
        if weight is not None:
            losses = losses * weight._array
        ctx.save_for_backward(input, target)
        ctx.reduction, ctx.weight, ctx.count = reduction, weight, max(x.size, 1)
        return reduce_array(losses.astype(x.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        needs = ctx.needs_input_grad
        scale = _scaled(grad, ctx.reduction, ctx.count)
        if ctx.weight is not None:
            scale = scale * _math.held(grad, ctx.weight)
        grad_input = grad_target = None
        if needs[0]:
            grad_input = sum_to(scale * (input - target) /
                                _math.clamp((1 - input) * input, 1e-12, None), input.shape)
        if needs[1]:
            logs = _math.clamp(_math.log(1 - input), -100, None) - \
                _math.clamp(_math.log(input), -100, None)
            grad_target = sum_to(scale * logs, target.shape)
        return grad_input, grad_target, None


class BinaryCrossEntropyWithLogits(Op):
    """``(1 - t) * x + (1 + (pos_weight - 1) * t) * softplus(-x)``, times ``weight``;
    stable for any ``x``."""

    node_name = "BinaryCrossEntropyWithLogitsBackward0"
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, input, target, reduction="mean", weight=None, pos_weight=None):
        x, t = _same_floating("binary_cross_entropy_with_logits", input, target)
        xp = input._xp
        softplus = xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(-x, 0)  # softplus(-x)
        if pos_weight is not None:
            losses = (1 - t) * x + ((pos_weight._array - 1) * t + 1) * softplus
        else:
            losses = (1 - t) * x + softplus
        if weight is not None:
            losses = losses * weight._array
        ctx.save_for_backward(input, target)
        ctx.reduction, ctx.count = reduction, max(x.size, 1)
        ctx.weight, ctx.pos_weight = weight, pos_weight
        return reduce_array(losses.astype(x.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        needs = ctx.needs_input_grad
        scale = _scaled(grad, ctx.reduction, ctx.count)
        if ctx.weight is not None:
            scale = scale * _math.held(grad, ctx.weight)
        pos_weight = ctx.pos_weight
        if pos_weight is not None:
            pos_weight = _math.held(grad, pos_weight)
        grad_input = grad_target = None
        if needs[0]:
            if pos_weight is None:
                slope = _math.sigmoid(input) - target
            else:
                weighted = pos_weight * target
                slope = _math.sigmoid(input) * (weighted + 1 - target) - weighted
            grad_input = sum_to(scale * slope, input.shape)
        if needs[1]:
            negative = _math.logsigmoid(-input)
            positive = _math.logsigmoid(input)
            slope = negative - (positive if pos_weight is None else pos_weight * positive)
            grad_target = sum_to(scale * slope, target.shape)
        return grad_input, grad_target, None


class SmoothL1Loss(Op):
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (d = x - t)."""

    node_name = "SmoothL1LossBackward0"
    array_backward = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "target", "beta=beta")

    @staticmethod
    @silenced
    def forward(ctx, input, target, reduction="mean", beta=1.0):
        x, t = _same_floating("smooth_l1_loss", input, target)
        xp = input._xp
        difference = xp.abs(x - t)
        losses = xp.where(difference < beta, 0.5 * difference * difference / beta,
                          difference - 0.5 * beta)
        ctx.save_for_backward(input, target)
        ctx.reduction, ctx.beta, ctx.count = reduction, beta, max(losses.size, 1)
        return reduce_array(losses.astype(x.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        slope = _math.clamp((input - target) * (1.0 / ctx.beta), -1.0, 1.0)
        return _pair_grads(ctx, grad, slope, input, target)


class HuberLoss(Op):
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``."""

    node_name = "HuberLossBackward0"
    array_backward = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "target", "delta=delta")

    @staticmethod
    @silenced
    def forward(ctx, input, target, reduction="mean", delta=1.0):
        x, t = _same_floating("huber_loss", input, target)
        xp = input._xp
        difference = xp.abs(x - t)
        losses = xp.where(difference < delta, 0.5 * difference * difference,
                          delta * (difference - 0.5 * delta))
        ctx.save_for_backward(input, target)
        ctx.reduction, ctx.delta, ctx.count = reduction, delta, max(losses.size, 1)
        return reduce_array(losses.astype(x.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        slope = _math.clamp(input - target, -ctx.delta, ctx.delta)
        return _pair_grads(ctx, grad, slope, input, target)


class SoftMarginLoss(Op):
    """``log(1 + exp(-y * x))`` for labels ``y`` of +1 and -1."""

    node_name = "SoftMarginLossBackward0"
    array_backward = True
    saved_names = ("self", "target")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, input, target, reduction="mean"):
        select_edges(ctx, (0,))  # torch's edges: the input only
        x, y = _same_floating("soft_margin_loss", input, target)
        xp = input._xp
        margin = -y * x
        losses = xp.logaddexp(0, margin)  # log1p(exp(margin)), without overflow
        ctx.save_for_backward(input, target)
        ctx.reduction, ctx.count = reduction, max(losses.size, 1)
        return reduce_array(losses.astype(x.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        needs = ctx.needs_input_grad
        scale = _scaled(grad, ctx.reduction, ctx.count) * _math.sigmoid(-target * input)
        grad_input = sum_to(-target * scale, input.shape) if needs[0] else None
        return grad_input, None, None


def _pair_grads(ctx, grad, slope, input, target) -> tuple:
    needs = ctx.needs_input_grad
    scaled = _scaled(grad, ctx.reduction, ctx.count) * slope
    grad_input = sum_to(scaled, input.shape) if needs[0] else None
    grad_target = sum_to(-scaled, target.shape) if needs[1] else None
    return grad_input, grad_target, None, None


for _op in (SmoothL1Loss, HuberLoss, SoftMarginLoss):
    show_saved(_op, "reduction", lambda node: REDUCTION_ENUM[node.reduction])
