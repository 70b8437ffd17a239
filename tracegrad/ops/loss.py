"""The losses torch records as one node: binary_cross_entropy(_with_logits), smooth_l1_loss,
huber_loss, soft_margin_loss, multi_margin_loss, multilabel_margin_loss. (mse_loss and nll_loss live in ``tracegrad/nn/_ops.py``; the other losses are
compositions of tensor ops, as they are in torch.)

Each takes ``reduction`` ("none", "mean", "sum"); class weights are keyword attributes,
not inputs of the node (torch differentiates only input and target). Backward is written
once for Tensors and arrays (``array_backward``), so second derivatives work.
"""

from __future__ import annotations

from .._layout import iterates
from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..errors import DTypeError
from ..tensor import Tensor
from . import _math
from ._edges import select_edges
from ._math import sum_to
from ._saved import REDUCTION_ENUM, show_saved
from .binary import _NotDifferentiable
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
    # as torch keeps them: the class weights are saved (never differentiated), so an
    # in-place change of them before backward is an error, as in torch
    saved_names = ("self", "target", "weight")

    @staticmethod
    @iterates  # (reduction='none': the elementwise loss, laid out as torch's)
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
        ctx.save_for_backward(input, target, weight)
        ctx.reduction, ctx.count = reduction, max(x.size, 1)
        return reduce_array(losses.astype(x.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, grad):
        input, target, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        scale = _scaled(grad, ctx.reduction, ctx.count)
        if weight is not None:
            scale = scale * weight
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
    saved_names = ("self", "target", "weight", "pos_weight")  # as torch keeps them

    @staticmethod
    @silenced
    @iterates
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
        ctx.save_for_backward(input, target, weight, pos_weight)
        ctx.reduction, ctx.count = reduction, max(x.size, 1)
        return reduce_array(losses.astype(x.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, grad):
        input, target, weight, pos_weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        scale = _scaled(grad, ctx.reduction, ctx.count)
        if weight is not None:
            scale = scale * weight
        grad_input = grad_target = None
        if needs[0]:  # torch's binary_cross_entropy_with_logits_backward, in its order
            if pos_weight is None:
                grad_input = _math.sigmoid(input) - target
            else:
                weighted = pos_weight * target
                grad_input = (_math.shifted(weighted, 1) - target) * _math.sigmoid(input) - \
                    weighted
            grad_input = grad_input * grad
            if weight is not None:
                grad_input = grad_input * weight
            if ctx.reduction == "mean":
                grad_input = _math.divided(grad_input, ctx.count)
            grad_input = sum_to(grad_input, input.shape)
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
    @iterates
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
        if grad.__class__ is Tensor:  # torch's SmoothL1LossBackwardBackward0, one per operand
            return _pair_nodes(SmoothL1LossBackward, ctx, grad, input, target, ctx.beta)
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
    @iterates
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
        if grad.__class__ is Tensor:  # torch's HuberLossBackwardBackward0, one per operand
            return _pair_nodes(HuberLossBackward, ctx, grad, input, target, ctx.delta)
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


def _pair_nodes(op, ctx, grad, input, target, parameter) -> tuple:
    """The gradients of a two-operand loss beside Tensors (create_graph), as torch's
    formulas make them: ``op`` (the loss's backward as a node) for the input, and for the
    target the same op with the operands swapped (derivatives.yaml's way of negating)."""
    needs = ctx.needs_input_grad
    grad_input = grad_target = None
    if needs[0]:
        grad_input = sum_to(op.apply(grad, input, target, ctx.reduction, parameter),
                            input.shape)
    if needs[1]:
        grad_target = sum_to(op.apply(grad, target, input, ctx.reduction, parameter),
                             target.shape)
    return grad_input, grad_target, None, None


def _sum_to(value, shape):
    """``sum_to``, as torch's ``.sum()`` (SumBackward0) for the 0-d grad_output of a
    reduced loss."""
    if value.__class__ is Tensor and not shape and value._array.ndim:
        return value.sum()
    return sum_to(value, shape)


class _LossBackward(Op):
    """A loss's backward ``grad * slope(self - target)`` as a node (create_graph), as torch
    records smooth_l1's and huber's (``parameter``: beta, delta). The slope is piecewise
    linear: the input's gradient is ``gg * grad`` times its derivative, a step (torch's
    ``*_double_backward``), the target's the negative."""

    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, grad, input, target, reduction, parameter):
        ctx.save_for_backward(grad, input, target)
        ctx.reduction, ctx.parameter = reduction, parameter
        slope = ctx._function.slope(input._array - target._array, parameter)
        scale = grad._array * (1.0 / slope.size) if reduction == "mean" else grad._array
        return (scale * slope).astype(slope.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad_grad):
        grad, input, target = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_of_grad = grad_of_input = grad_of_target = None
        if needs[0]:
            grad_of_grad = ctx._function.grad_of_grad(ctx, grad_grad, grad, input, target)
        if needs[1] or needs[2]:
            inside = _math.constant(grad_grad, ctx._function.step(
                _math.array_of(input) - _math.array_of(target), ctx.parameter))
            curvature = grad_grad * grad * inside
            if ctx._function is SmoothL1LossBackward:
                curvature = curvature / ctx.parameter
            if ctx.reduction == "mean":
                curvature = curvature / _math.numel(input)
            grad_of_input = sum_to(curvature, input.shape) if needs[1] else None
            grad_of_target = sum_to(-curvature, target.shape) if needs[2] else None
        return grad_of_grad, grad_of_input, grad_of_target, None, None


class SmoothL1LossBackward(_LossBackward):
    """smooth_l1_loss's backward as a node: torch's SmoothL1LossBackwardBackward0."""

    node_name = "SmoothL1LossBackwardBackward0"
    saved_names = ("grad_output", "self", "target", "beta=parameter")  # as PyTorch's

    @staticmethod
    def slope(difference, beta):
        return (difference * (1.0 / beta)).clip(-1.0, 1.0)  # (beta > 0: functional)

    @staticmethod
    def step(difference, beta):
        return (abs(difference) < beta).astype(difference.dtype)

    @staticmethod
    def grad_of_grad(ctx, grad_grad, grad, input, target):
        # the same map of the incoming gradient, summed to grad's shape (a 0-d one when
        # reduced)
        return _sum_to(_math.apply(SmoothL1LossBackward, grad_grad, input, target,
                                   ctx.reduction, ctx.parameter), grad.shape)


class HuberLossBackward(_LossBackward):
    """huber_loss's backward as a node: torch's HuberLossBackwardBackward0."""

    node_name = "HuberLossBackwardBackward0"
    saved_names = ("grad_output", "self", "target", "delta=parameter")  # as PyTorch's

    @staticmethod
    def slope(difference, delta):
        return difference.clip(-delta, delta)

    @staticmethod
    def step(difference, delta):
        return (abs(difference) < delta).astype(difference.dtype)

    @staticmethod
    def grad_of_grad(ctx, grad_grad, grad, input, target):
        # torch's huber_loss_double_backward_grad_output: the map of ones, times gg, summed
        # (the map itself when unreduced)
        if ctx.reduction == "none":
            return _math.apply(HuberLossBackward, grad_grad, input, target, "none",
                               ctx.parameter)
        ones = _math.constant(grad_grad, _math.xp(grad).ones_like(_math.array_of(grad)))
        spread = _math.apply(HuberLossBackward, ones, input, target, ctx.reduction,
                             ctx.parameter)
        return _sum_to(spread * grad_grad, grad.shape)


for _op in (SmoothL1Loss, HuberLoss, SoftMarginLoss, SmoothL1LossBackward, HuberLossBackward,
            BinaryCrossEntropy, BinaryCrossEntropyWithLogits):
    show_saved(_op, "reduction", lambda node: REDUCTION_ENUM[node.reduction])


def _batched_rows(array):
    """(N, C) from an (N, C), a (C,) or a 0-d input (one sample, one class)."""
    return array.reshape(-1, array.shape[-1] if array.ndim else 1)


class MultiMarginLoss(Op):
    """Per sample, ``sum over i != y of weight[y] * max(0, margin - x[y] + x[i]) ** p``,
    divided by the number of classes. torch defines no derivative of its backward."""

    node_name = "MultiMarginLossBackward0"
    array_backward = True
    saved_names = ("self", "target", "weight", "margin=margin", "p=p")  # as torch's

    @staticmethod
    @silenced
    def forward(ctx, input, target, p=1, margin=1.0, weight=None, reduction="mean"):
        select_edges(ctx, (0,))  # torch's edges: the input only
        ctx.save_for_backward(input, target, weight)
        ctx.p, ctx.margin, ctx.reduction = p, margin, reduction
        ctx.weight = None if weight is None else weight._array
        x = input._array
        losses = _multi_margins(input._xp, x, target._array, p, margin, ctx.weight)
        losses = losses.sum(-1) / max(x.shape[-1] if x.ndim else 1, 1)
        return reduce_array(losses.reshape(target._array.shape), reduction)

    @staticmethod
    def backward(ctx, grad):
        input, target, _ = ctx.saved_tensors
        if grad.__class__ is Tensor:  # torch defines no derivative of this backward
            return (MultiMarginLossBackward.apply(grad, input, target, ctx.p, ctx.margin,
                                                  ctx.weight, ctx.reduction),) + (None,) * 5
        return (_multi_margin_grad(grad, input, target, ctx.p, ctx.margin, ctx.weight,
                                   ctx.reduction),) + (None,) * 5


def _multi_margins(xp, x, target, p, margin, weight):
    """(N, C) terms of each sample's sum (0 at its own class), before the division."""
    rows = _batched_rows(x)
    classes = target.reshape(-1)
    own = xp.take_along_axis(rows, classes[:, None], axis=1)
    terms = xp.maximum(margin - own + rows, 0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight[classes][:, None]
    return xp.where(xp.arange(rows.shape[1]) == classes[:, None], 0, terms).astype(x.dtype)


@silenced
def _multi_margin_grad(grad, input, target, p, margin, weight, reduction):
    """multi_margin_loss's input gradient, on arrays (torch's multi_margin_loss_backward)."""
    xp = _math.xp(input)
    rows, classes = _batched_rows(input), target.reshape(-1)
    count = max(rows.shape[1], 1)
    own = xp.take_along_axis(rows, classes[:, None], axis=1)
    gap = margin - own + rows
    slope = (gap > 0) * (2 * gap if p == 2 else 1.0) / count
    if weight is not None:
        slope = slope * weight[classes][:, None]
    slope = xp.where(xp.arange(rows.shape[1]) == classes[:, None], 0, slope)
    # the own class gets minus the others' sum
    slope[xp.arange(len(classes)), classes] = -slope.sum(1)
    scale = grad.reshape(-1, 1) if reduction == "none" else grad
    if reduction == "mean":
        scale = scale / max(len(classes), 1)
    return (slope * scale).reshape(input.shape).astype(input.dtype, copy=False)


class MultiMarginLossBackward(_NotDifferentiable):
    """multi_margin_loss's backward under create_graph: computed, but a NotImplemented node
    (a second derivative fails here as in torch)."""

    node_name = "torch::autograd::NotImplemented"
    _aten_name = "multi_margin_loss_backward"

    @staticmethod
    def forward(ctx, grad, input, target, p, margin, weight, reduction):
        return _multi_margin_grad(grad._array, input._array, target._array, p, margin,
                                  weight, reduction)


class MultilabelMarginLoss(Op):
    """Per sample, ``sum over target classes j and other classes i of max(0, 1 - x[j] +
    x[i])``, divided by the number of classes; a sample's targets end at its first -1.
    torch defines no derivative of its backward."""

    node_name = "MultilabelMarginLossBackward0"
    array_backward = True
    saved_names = ("self", "target", "is_target")  # as torch's

    @staticmethod
    @silenced
    def forward(ctx, input, target, reduction="mean"):
        select_edges(ctx, (0,))  # torch's edges: the input only
        xp, x = input._xp, input._array
        picks, is_target = _label_targets(xp, _batched_rows(target._array))
        shown = Tensor._wrap(is_target.reshape(x.shape).astype(x.dtype), False)
        ctx.save_for_backward(input, target, shown)
        ctx.reduction, ctx.picks = reduction, picks
        losses = _label_margins(xp, _batched_rows(x), picks, is_target).sum((1, 2))
        losses = losses / max(x.shape[-1] if x.ndim else 1, 1)
        return reduce_array(losses.reshape(x.shape[:-1]).astype(x.dtype), reduction)

    @staticmethod
    def backward(ctx, grad):
        input, _, is_target = ctx.saved_tensors
        if grad.__class__ is Tensor:  # torch defines no derivative of this backward
            return (MultilabelMarginLossBackward.apply(grad, input, is_target, ctx.picks,
                                                       ctx.reduction), None, None)
        return _multilabel_grad(grad, input, is_target, ctx.picks, ctx.reduction), None, None


def _label_targets(xp, targets):
    """Each sample's target list as a mask (N, C) of the slots before its first -1, and
    which classes are targets (N, C)."""
    ended = xp.cumsum(targets == -1, axis=1) > 0
    picks = ~ended
    is_target = xp.zeros(targets.shape, dtype=bool)
    rows = xp.nonzero(picks)
    is_target[rows[0], targets[rows]] = True
    return (picks, targets), is_target


def _label_margins(xp, rows, picks, is_target):
    """(N, slots, C): ``max(0, 1 - x[target in slot] + x[i])`` for each non-target class i,
    0 where the slot is past the list's end."""
    used, targets = picks
    chosen = xp.take_along_axis(rows, xp.where(used, targets, 0), axis=1)  # (N, slots)
    gaps = xp.maximum(1 - chosen[:, :, None] + rows[:, None, :], 0)
    return gaps * (used[:, :, None] & ~is_target[:, None, :])


@silenced
def _multilabel_grad(grad, input, is_target, picks, reduction):
    """multilabel_margin_loss's input gradient, on arrays."""
    xp = _math.xp(input)
    rows = _batched_rows(input)
    used, targets = picks
    count = max(rows.shape[1], 1)
    active = _label_margins(xp, rows, picks, _batched_rows(is_target) > 0) > 0
    slope = active.sum(1).astype(rows.dtype)  # each other class, once per margin it is in
    lost = active.sum(2).astype(rows.dtype)  # each target slot, once per margin
    xp.add.at(slope, (xp.nonzero(used)[0], targets[used]), -lost[used])
    scale = grad.reshape(-1, 1) if reduction == "none" else grad
    if reduction == "mean":
        scale = scale / max(rows.shape[0], 1)
    return (slope / count * scale).reshape(input.shape).astype(input.dtype, copy=False)


class MultilabelMarginLossBackward(_NotDifferentiable):
    """multilabel_margin_loss's backward under create_graph: computed, but a NotImplemented
    node (a second derivative fails here as in torch)."""

    node_name = "torch::autograd::NotImplemented"
    _aten_name = "multilabel_margin_loss_backward"

    @staticmethod
    def forward(ctx, grad, input, is_target, picks, reduction):
        return _multilabel_grad(grad._array, input._array, is_target._array, picks,
                                reduction)


for _op in (MultiMarginLoss, MultilabelMarginLoss):
    show_saved(_op, "reduction", lambda node: REDUCTION_ENUM[node.reduction])
