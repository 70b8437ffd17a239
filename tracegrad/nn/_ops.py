"""The fused ops behind nn: linear (AddmmBackward0), mse_loss and nll_loss.

Each is one node, named as PyTorch names it, so a traced model's graph matches torch's and
a training step costs no more array passes than hand-written NumPy. Each backward formula
is written once for Tensors and arrays (``array_backward``, tracegrad/ops/__init__.py): on
arrays without create_graph, on Tensors with it, so second derivatives work.
"""

from __future__ import annotations

import numpy as np

from .. import backends
from .._layout import iterates
from ..autograd.function import Op
from ..autograd.grad_mode import state
from ..errors import DTypeError, ShapeError
from ..ops import _math
from ..ops._edges import select_edges
from ..ops._saved import REDUCTION_ENUM, as_torch_int, show_saved
from ..ops.indexing import scatter_into
from ..ops.linalg import save_operands
from ..tensor import Tensor

_ndarray = np.ndarray

REDUCTIONS = ("none", "mean", "sum")


class Addmm(Op):
    """``bias + input @ weight_t`` for a 2-D input: what ``F.linear`` records in torch."""

    node_name = "AddmmBackward0"
    array_backward = True
    saved_names = ("mat1", "mat2", "alpha=alpha", "beta=beta")  # as PyTorch names them

    @staticmethod
    def forward(ctx, bias, input, weight_t):
        x, w = input._array, weight_t._array
        if x.shape[1] != w.shape[0]:
            raise _linear_mismatch(input, weight_t)
        if x.dtype != w.dtype or x.dtype != bias._array.dtype:
            raise _linear_dtypes(input, weight_t, bias)
        save_operands(ctx, input, weight_t, first=1)  # each only if the other needs grad
        out = x @ w
        out += bias._array  # in place: the product is fresh, and this saves one array pass
        return out

    @staticmethod
    def backward(ctx, grad):
        input, weight_t = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_bias = _bias_grad(grad, ctx._input_meta[0][0]) if needs[0] else None
        grad_input = _math.mm(grad, _math.t(weight_t)) if needs[1] else None
        # grad.T @ input is the weight's gradient in the weight's own (out, in) layout;
        # handing TBackward0 its transposed view means the weight receives a contiguous
        # array, so .grad and the optimizer's passes over it stay cache-friendly.
        grad_weight_t = _math.t(_math.mm(_math.t(grad), input)) if needs[2] else None
        return grad_bias, grad_input, grad_weight_t


# F.linear's addmm scales nothing: _saved_alpha and _saved_beta are 1 on every node, set
# once on the node class rather than per call.
Addmm._node_class.alpha = Addmm._node_class.beta = 1


def _bias_grad(grad, shape):
    """The bias's gradient: ``grad`` summed down to ``shape`` (a Tensor or an array, as
    ``grad`` is)."""
    is_tensor = grad.__class__ is Tensor
    data = grad._array if is_tensor else grad
    if (data.__class__ is not _ndarray and not state.grad_enabled and data.ndim == 2
            and shape == data.shape[1:]):
        # CuPy sums axis 0 of a row-major array with strided reads; ones @ grad (a cuBLAS
        # GEMV) reads it coalesced, several times faster for a 1024 x 4096 gradient
        ones = _math.xp(grad).ones(data.shape[0], dtype=data.dtype)
        return Tensor._wrap(ones @ data, False) if is_tensor else ones @ data
    return _math.sum_to(grad, shape)


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``, by torch's steps, so the graph is torch's: one
    AddmmBackward0 for a 2-D input with a bias; a contiguous input of another rank with a
    bias folded to rows (ViewBackward0), one addmm, viewed back; otherwise matmul, then the
    bias added in place (AddBackward0, the result at version 1)."""
    ndim = input.ndim
    if bias is not None:
        if ndim == 2:
            return Addmm.apply(bias, input, weight.t())
        if input.is_contiguous() and (ndim == 3 or bias.ndim == 1):
            sizes = tuple(input.shape)
            rows = 1  # (a product, not -1: a view by -1 fails on a dim of size 0)
            for size in sizes[:-1]:
                rows *= size
            out = Addmm.apply(bias, input.reshape(rows, sizes[-1]), weight.t())
            return out.view(sizes[:-1] + (out.shape[1],))
    out = input.mm(weight.t()) if ndim == 2 else input.matmul(weight.t())
    return out if bias is None else out.add_(bias)


def _linear_mismatch(input, weight_t) -> ShapeError:
    return ShapeError(
        f"linear: mat1 and mat2 shapes cannot be multiplied ({input.shape[0]}x"
        f"{input.shape[1]} and {weight_t.shape[0]}x{weight_t.shape[1]})\n"
        f"  input: {input._describe()}\n  weight: {weight_t.shape[1]}x{weight_t.shape[0]} "
        f"(out_features x in_features)\nHint: the input's last dimension must equal the "
        f"layer's in_features ({weight_t.shape[0]}).")


def _linear_dtypes(input, weight_t, bias) -> DTypeError:
    return DTypeError(
        f"linear: expected input, weight and bias to have the same dtype, but got input "
        f"{input.dtype.name}, weight {weight_t.dtype.name}, bias {bias.dtype.name}. "
        f"Hint: convert the input with .to({weight_t.dtype!r}) or the model with "
        f".double()/.float().")


class MseLoss(Op):
    node_name = "MseLossBackward0"
    array_backward = True
    saved_names = ("self", "target")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @iterates  # (reduction='none': the elementwise loss, laid out as torch's)
    def forward(ctx, input, target, reduction="mean"):
        x, y = input._array, target._array
        if x.dtype != y.dtype and y.dtype.kind == "f":
            y = y.astype(x.dtype)
        ctx.save_for_backward(input, target)
        ctx.reduction = reduction
        diff = x - y
        squared = diff * diff
        if reduction == "none":
            return squared
        total = squared.sum()
        return total / squared.size if reduction == "mean" else total

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if grad.__class__ is Tensor:  # torch's MseLossBackwardBackward0, one per operand
            reduction = ctx.reduction
            return (_math.sum_to(MseLossBackward.apply(grad, input, target, reduction),
                                 input.shape) if needs[0] else None,
                    _math.sum_to(MseLossBackward.apply(grad, target, input, reduction),
                                 target.shape) if needs[1] else None, None)
        diff = input - target
        scale = 2.0 / _math.numel(diff) if ctx.reduction == "mean" else 2.0
        grad_diff = diff * (grad * scale) if ctx.reduction != "none" else diff * grad * scale
        grad_input = _math.sum_to(grad_diff, input.shape) if needs[0] else None
        grad_target = _math.sum_to(-grad_diff, target.shape) if needs[1] else None
        return grad_input, grad_target, None


show_saved(MseLoss, "reduction", lambda node: REDUCTION_ENUM[node.reduction])


class MseLossBackward(Op):
    """mse_loss's backward ``scale * (self - target) * grad`` as a node (create_graph), as
    torch records it (``scale`` is 2, over the element count for "mean"): linear in each
    of its three inputs but the product, so its gradients are ``scale * (self - target) *
    gg`` for grad (summed to grad's shape), ``scale * gg * grad`` for self and the negative
    for target."""

    node_name = "MseLossBackwardBackward0"
    saved_names = ("grad_output", "self", "target")  # as PyTorch names them
    array_backward = True

    @staticmethod
    def forward(ctx, grad, a, b, reduction="mean"):
        ctx.save_for_backward(grad, a, b)
        ctx.reduction = reduction
        diff = a._array - b._array
        ctx.scale = 2.0 / max(diff.size, 1) if reduction == "mean" else 2.0
        return (diff * (grad._array * ctx.scale)).astype(diff.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad_grad):
        grad, a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        scale = ctx.scale
        grad_of_grad = _math.sum_to((a - b) * grad_grad * scale, grad.shape) \
            if needs[0] else None
        product = grad_grad * grad * scale if needs[1] or needs[2] else None
        return (grad_of_grad, _math.sum_to(product, a.shape) if needs[1] else None,
                _math.sum_to(-product, b.shape) if needs[2] else None, None)


show_saved(MseLossBackward, "reduction", lambda node: REDUCTION_ENUM[node.reduction])


class NllLoss(Op):
    """Negative log likelihood of class-index targets, picked along ``class_axis``."""

    node_name = "NllLossBackward0"
    array_backward = True
    # as PyTorch names them; total_weight (torch's second output of nll_loss_forward: the
    # mean's divisor, 0 for reduction="none") is a saved tensor there too
    saved_names = ("self", "target", "weight", "total_weight")

    @staticmethod
    def forward(ctx, log_probs, target, weight=None, reduction="mean", ignore_index=-100):
        select_edges(ctx, (0,))  # torch's edges: log_probs (no index/mask edge)
        xp = log_probs._xp
        x = log_probs._array
        class_axis = 0 if x.ndim == 1 else 1
        safe, kept = _checked_targets(xp, log_probs, target, class_axis, ignore_index)
        index = xp.expand_dims(safe, class_axis)
        picked = xp.take_along_axis(x, index, axis=class_axis).squeeze(class_axis)
        if weight is None:
            weights = kept.astype(x.dtype)
        else:
            weights = weight._array[safe] * kept
        losses = -weights * picked
        ctx.class_axis, ctx.index, ctx.reduction = class_axis, index, reduction
        ctx._ignore_index = ignore_index  # for grad_fn._saved_ignore_index
        ctx.input_shape, ctx.weights = x.shape, weights
        total_weight = weights.sum() if reduction != "none" else xp.zeros((), x.dtype)
        # what torch's node keeps, total_weight a 0-d tensor as torch shows it
        ctx.save_for_backward(log_probs, target, weight,
                              Tensor._wrap(xp.asarray(total_weight, dtype=x.dtype), False))
        if reduction == "none":
            return losses
        if reduction == "sum":
            return losses.sum()
        with _quiet(xp):
            return losses.sum() / total_weight  # all ignored: nan, as in torch

    @staticmethod
    def backward(ctx, grad):
        saved = ctx.saved_tensors  # version-checked, as torch checks its saves
        if grad.__class__ is Tensor:  # torch's NllLossBackwardBackward0 (see NllLossBackward)
            return (ctx._function._backward_op.apply(grad, saved[0], ctx), None, None)
        return (_nll_grad(ctx, grad, saved[3]), None, None)


def _nll_grad(ctx, grad, total_weight):
    """nll_loss's gradient for ``grad``: its coefficients scattered into the picked
    classes (a Tensor beside Tensors, an array beside arrays)."""
    coefficients = -ctx.weights
    if ctx.reduction == "mean":
        coefficients = coefficients / total_weight
    src = _math.constant(grad, coefficients.astype(_math.numpy_dtype(grad))) * grad
    src = _math.unsqueeze(src, ctx.class_axis)
    return scatter_into(src, ctx.input_shape, ctx.class_axis, ctx.index, False)


class NllLossBackward(Op):
    """nll_loss's backward as a node (torch's NllLossBackwardBackward0), made beside Tensors
    (create_graph): linear in ``grad``, whose gradient is nll_loss of the incoming gradient
    (the adjoint of the scatter); zero in ``self``, so the gradient requires grad whenever
    the log-probabilities do, as in torch."""

    node_name = "NllLossBackwardBackward0"
    saved_names = ("target", "weight")  # as PyTorch names them; reduction etc. below
    array_backward = True

    @staticmethod
    def forward(ctx, grad, log_probs, loss_node):
        saved = loss_node.saved_tensors
        ctx.save_for_backward(saved[1], saved[2])
        ctx.loss_node = loss_node
        return _nll_grad(loss_node, grad._array, loss_node._saved[3].unpack(loss_node)._array)

    @staticmethod
    def backward(ctx, grad_grad):
        target, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        loss = ctx.loss_node
        grad_of_grad = _math.apply(
            ctx._function._forward_op, grad_grad, target, weight, reduction=loss.reduction,
            ignore_index=loss._ignore_index) if needs[0] else None
        grad_of_self = _math.constant(grad_grad, _math.xp(grad_grad).zeros(
            loss.input_shape, _math.numpy_dtype(grad_grad))) if needs[1] else None
        return grad_of_grad, grad_of_self, None


class NllLoss2D(NllLoss):
    """nll_loss of an input with 3 or more dims (N, C, d1, ...): torch's node is
    NllLoss2DBackward0 there (the same saved names)."""

    node_name = "NllLoss2DBackward0"


class NllLoss2DBackward(NllLossBackward):
    node_name = "NllLoss2DBackwardBackward0"


NllLoss._backward_op, NllLossBackward._forward_op = NllLossBackward, NllLoss
NllLoss2D._backward_op, NllLoss2DBackward._forward_op = NllLoss2DBackward, NllLoss2D
for _op in (NllLoss, NllLoss2D, NllLossBackward, NllLoss2DBackward):
    show_saved(_op, "reduction", lambda node: REDUCTION_ENUM[_nll_node(node).reduction])
    show_saved(_op, "ignore_index", lambda node: as_torch_int(_nll_node(node)._ignore_index))


def _nll_node(node):
    """The NllLoss node whose settings ``node`` shows (itself, or the one it is the
    backward of)."""
    return getattr(node, "loss_node", node)


def _checked_targets(xp, log_probs, target, class_axis: int, ignore_index: int):
    classes = target._array
    if classes.dtype.kind not in "iu":
        raise DTypeError(
            f"nll_loss: expected target of dtype int64 (class indices), got "
            f"{target._describe()}. Hint: pass class indices as a long tensor (.long()), or "
            f"probabilities of the same shape as the input to cross_entropy.")
    x = log_probs._array
    expected = x.shape[:class_axis] + x.shape[class_axis + 1:]
    if classes.shape != expected:
        raise ShapeError(
            f"nll_loss: expected target of shape {list(expected)} for input "
            f"{log_probs._describe()}, got {target._describe()}. Hint: targets hold one "
            f"class index per sample (shape [N]), not one-hot rows.")
    kept = classes != ignore_index
    safe = xp.where(kept, classes, 0)
    count = x.shape[class_axis]
    if not safe.size:
        return safe, kept
    described = log_probs._describe()

    def error(low: int, high: int) -> IndexError | None:
        if low >= 0 and high < count:
            return None
        return IndexError(
            f"nll_loss: Target {high if high >= count else low} is out of bounds: the input "
            f"has {count} classes ({described}). Hint: class indices run from 0 to "
            f"{count - 1}.")

    bounds = xp.stack((safe.min(), safe.max()))
    if bounds.__class__ is _ndarray:
        found = error(int(bounds[0]), int(bounds[1]))
        if found is not None:
            raise found
    else:
        # On a GPU, reading the bounds now would stall it until the forward pass is done
        # (a sync per step); like torch's device-side assert, the error is raised once the
        # bounds reach the host: at the next loss or the next host read (.item(), .cpu()).
        backends.check_on_host_later(bounds, lambda host: error(int(host[0]), int(host[1])))
    return safe, kept


class _quiet:
    def __init__(self, xp) -> None:
        self.xp = xp

    def __enter__(self):
        # CuPy has no floating-point error state (GPU kernels never warn): nothing to quiet
        self.saved = (self.xp.seterr(invalid="ignore", divide="ignore")
                      if hasattr(self.xp, "seterr") else None)

    def __exit__(self, *exc_info):
        if self.saved is not None:
            self.xp.seterr(**self.saved)
