"""batch_norm, layer_norm and group_norm, one node each as in torch
(NativeBatchNormBackward0, NativeLayerNormBackward0, NativeGroupNormBackward0).

Forward computes the statistics on arrays (and updates a batch norm's running statistics in
place). Backward is the usual formula, written with tensor ops::

    x_hat = (x - mean) * rstd
    dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))     g = grad * weight

With ``create_graph`` the mean and rstd are recomputed from ``x`` with tensor ops, so that
the second derivative sees how they depend on ``x``; otherwise the forward's are reused.
"""

from __future__ import annotations

import math

from .._layout import row_major
from ..autograd.function import Op
from ..autograd.grad_mode import state
from ..autograd.quiet import quiet, silenced
from ..errors import ShapeError
from ..tensor import Tensor
from . import _math
from ._edges import select_edges
from ._saved import show_saved


def _statistics(xp, x, axes, eps):
    with quiet():  # eps=0 on a constant row: rstd is inf in torch, with no warning
        mean = x.mean(axis=axes, keepdims=True)
        centered = x - mean
        variance = (centered * centered).mean(axis=axes, keepdims=True)
        rstd = 1 / xp.sqrt(variance + eps)
    return mean, variance, rstd.astype(x.dtype, copy=False)


def _input_grad(x, g, axes: tuple, mean, rstd, eps: float, batch_statistics: bool) -> tuple:
    """(dx, x_hat) for normalized ``x`` whose output gradient times weight is ``g``: Tensors
    or arrays, as the backward runs (the forward's ``mean`` and ``rstd`` are arrays)."""
    if not batch_statistics:  # fixed (running) statistics: an affine map of x
        rstd = _math.constant(g, rstd)
        return g * rstd, (x - _math.constant(g, mean)) * rstd
    if state.grad_enabled:  # create_graph: mean and rstd as functions of x (Tensors)
        centered = x - x.mean(dim=axes, keepdim=True)
        rstd = ((centered * centered).mean(dim=axes, keepdim=True) + eps) ** -0.5
        x_hat = centered * rstd
    else:
        rstd = _math.constant(g, rstd)
        x_hat = (x - _math.constant(g, mean)) * rstd
    projection = _math.mean_dims(g * x_hat, axes)
    grad_input = (g - _math.mean_dims(g, axes) - x_hat * projection) * rstd
    return grad_input, x_hat


def _channel_shape(ndim: int) -> tuple:
    return (1, -1) + (1,) * (ndim - 2)


class NativeBatchNorm(Op):
    """torch's native_batch_norm. Its node keeps what torch's keeps: the input, weight,
    running statistics, and the batch's mean and inverse std (torch's non-differentiable
    outputs 1 and 2; empty in eval mode)."""

    node_name = "NativeBatchNormBackward0"
    array_backward = True
    saved_names = ("input", "weight", "running_mean", "running_var", "result1", "result2",
                   "eps=eps", "training=batch_statistics")  # as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, input, weight, bias, training, momentum, eps, running_mean=None,
                running_var=None):
        select_edges(ctx, (0, 1, 2))  # torch's edges: input, weight, bias (None ones too)
        xp = input._xp
        x = input._array
        channels = x.shape[1]
        for name, tensor in (("running_mean", running_mean), ("running_var", running_var),
                             ("weight", weight), ("bias", bias)):
            if tensor is not None and tensor._array.size != channels:
                raise ShapeError(
                    f"{name} should contain {channels} elements not {tensor._array.size} "
                    f"(input {input._describe()}). Hint: num_features of the layer must be "
                    "the input's size along dim 1.")
        axes = (0,) + tuple(range(2, x.ndim))
        shape = _channel_shape(x.ndim)
        batch_statistics = training or running_mean is None
        if batch_statistics:
            mean, variance, rstd = _statistics(xp, x, axes, eps)
            if training and running_mean is not None:
                count = x.size // channels
                _update_running(running_mean, mean.reshape(-1), momentum)
                _update_running(running_var,
                                variance.reshape(-1) * (count / max(count - 1, 1)), momentum)
        else:
            mean = running_mean._array.reshape(shape).copy()  # the buffer moves on
            rstd = (1 / xp.sqrt(running_var._array + eps)).astype(x.dtype).reshape(shape)
        out = (x - mean) * rstd
        if weight is not None:
            out *= weight._array.reshape(shape)
        if bias is not None:
            out += bias._array.reshape(shape)
        if ctx.needs_input_grad:
            if batch_statistics:  # copies: backward reads its own mean and rstd
                statistics = (mean.reshape(-1).copy(), rstd.reshape(-1).copy())
            else:
                statistics = (xp.empty(0, dtype=x.dtype), xp.empty(0, dtype=x.dtype))
            ctx.save_for_backward(input, weight, running_mean, running_var,
                                  *(Tensor._wrap(array, False) for array in statistics))
        ctx.mean, ctx.rstd, ctx.eps, ctx.axes = mean, rstd, eps, axes
        ctx.batch_statistics = batch_statistics
        ctx.has_bias = bias is not None
        return out

    @staticmethod
    def backward(ctx, grad):
        input, weight = ctx.saved_tensors[:2]
        needs = ctx.needs_input_grad
        if grad.__class__ is Tensor:  # torch's NativeBatchNormBackwardBackward0
            return _batch_norm_backward_node(ctx, grad)
        shape = _channel_shape(input.ndim)
        g = grad if weight is None else grad * weight.reshape(shape)
        grad_input, x_hat = _input_grad(input, g, ctx.axes, ctx.mean, ctx.rstd, ctx.eps,
                                        ctx.batch_statistics)
        grad_weight = _math.sum_dims(grad * x_hat, ctx.axes) \
            if weight is not None and needs[1] else None
        grad_bias = _math.sum_dims(grad, ctx.axes) if ctx.has_bias and needs[2] else None
        return grad_input if needs[0] else None, grad_weight, grad_bias, None, None, None


def _update_running(running: Tensor, value, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * value``, in place, as torch's
    kernel writes the buffer: its version counter stays (torch 2.13 bumps no version here,
    so the buffer saved by an earlier step's node still unpacks after the next forward)."""
    array = running._array
    array *= 1 - momentum
    array += (momentum * value).astype(array.dtype, copy=False)


class NativeLayerNorm(Op):
    node_name = "NativeLayerNormBackward0"
    array_backward = True
    # as PyTorch names them: mean and rstd (torch's outputs 1 and 2, which layer_norm
    # drops) are result1/result2, with the reduced dims kept
    saved_names = ("input", "weight", "bias", "result1", "result2",
                   "normalized_shape=_normalized_shape")

    @staticmethod
    def forward(ctx, input, normalized_shape, weight, bias, eps):
        select_edges(ctx, (0, 2, 3))  # torch's edges: input, weight, bias (None ones too)
        x = input._array
        count = len(normalized_shape)
        if x.shape[x.ndim - count:] != tuple(normalized_shape) or x.ndim < count:
            raise ShapeError(
                f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
                f"{list(x.shape)} ({input._describe()})")
        axes = tuple(range(x.ndim - count, x.ndim))
        mean, _, rstd = _statistics(input._xp, x, axes, eps)
        with quiet():  # (see _statistics)
            out = (x - mean) * rstd
            if weight is not None:
                out *= weight._array
            if bias is not None:
                out += bias._array
        # (torch allocates the output and its statistics contiguous, whatever the input)
        out, mean, rstd = row_major(out), row_major(mean.astype(x.dtype, copy=False)), \
            row_major(rstd)
        ctx.save_for_backward(input, weight, bias, Tensor._wrap(mean, False),
                              Tensor._wrap(rstd, False))
        ctx.mean, ctx.rstd, ctx.eps, ctx.axes = mean, rstd, eps, axes
        ctx.has_bias = bias is not None
        ctx._normalized_shape = x.shape[x.ndim - count:]  # grad_fn._saved_normalized_shape
        return out

    @staticmethod
    def backward(ctx, grad):
        input, weight = ctx.saved_tensors[:2]
        needs = ctx.needs_input_grad
        if grad.__class__ is Tensor:  # torch's NativeLayerNormBackwardBackward0
            return _layer_norm_backward_node(ctx, grad)
        g = grad if weight is None else grad * weight
        grad_input, x_hat = _input_grad(input, g, ctx.axes, ctx.mean, ctx.rstd, ctx.eps, True)
        leading = tuple(range(input.ndim - len(ctx.axes)))
        grad_weight = grad_bias = None
        if weight is not None and needs[2]:
            grad_weight = _math.sum_dims(grad * x_hat, leading) if leading else grad * x_hat
        if ctx.has_bias and needs[3]:
            grad_bias = _math.sum_dims(grad, leading) if leading else grad
        return grad_input if needs[0] else None, None, grad_weight, grad_bias, None


def _layer_norm_backward_node(ctx, grad) -> tuple:
    """layer_norm's gradients under create_graph: one NativeLayerNormBackwardBackward0 node
    (torch's), whose outputs are the input's, the weight's and the bias's gradients."""
    input, weight, bias, mean, rstd = ctx.saved_tensors
    needs = ctx.needs_input_grad
    outputs = NativeLayerNormBackward.apply(grad, input, mean, rstd, weight,
                                            bias if ctx.has_bias else None,
                                            ctx._normalized_shape)
    grad_weight = outputs[1] if weight is not None and needs[2] else None
    grad_bias = None
    if ctx.has_bias and needs[3]:  # (a bias without a weight: its sum, recorded apart)
        leading = tuple(range(input.ndim - len(ctx.axes)))
        grad_bias = outputs[2] if weight is not None else \
            (_math.sum_dims(grad, leading) if leading else grad)
    return outputs[0] if needs[0] else None, None, grad_weight, grad_bias, None


def _batch_norm_backward_node(ctx, grad) -> tuple:
    """batch_norm's gradients under create_graph: one NativeBatchNormBackwardBackward0 node
    (torch's), whose outputs are the input's, the weight's and the bias's gradients."""
    input, weight, running_mean, running_var, save_mean, save_invstd = ctx.saved_tensors
    needs = ctx.needs_input_grad
    outputs = NativeBatchNormBackward.apply(grad, input, weight, running_mean, running_var,
                                            save_mean, save_invstd, ctx.batch_statistics,
                                            ctx.eps)
    grad_weight = outputs[1] if weight is not None and needs[1] else None
    grad_bias = None
    if ctx.has_bias and needs[2]:  # (a bias without a weight: its sum, recorded apart)
        grad_bias = outputs[2] if weight is not None else _math.sum_dims(grad, ctx.axes)
    return outputs[0] if needs[0] else None, grad_weight, grad_bias, None, None, None


class NativeBatchNormBackward(Op):
    """batch_norm's backward as a node (create_graph), as torch records it: one node for
    the input's, the weight's and the bias's gradients, with torch's edges (grad_out,
    input, weight, save_mean, save_invstd) and saved values. Each channel is a row of
    ``_RowNorm``; with running statistics (eval mode) they are constants."""

    node_name = "NativeBatchNormBackwardBackward0"
    array_backward = True
    saved_names = ("grad_out", "input", "weight", "running_mean", "running_var", "save_mean",
                   "save_invstd", "train=train", "eps=eps")  # as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, grad, input, weight, running_mean, running_var, save_mean, save_invstd,
                train, eps):
        select_edges(ctx, (0, 1, 2, 5, 6))
        ctx.save_for_backward(grad, input, weight, running_mean, running_var, save_mean,
                              save_invstd)
        ctx.train, ctx.eps = train, eps
        rows = _RowNorm.of_batch_norm(*(None if item is None else item._array for item in (
            grad, input, weight, running_mean, running_var, save_mean, save_invstd)),
            train, eps)
        grad_input = rows.unrows(rows.project(rows.g), input._array.shape)
        if weight is None:
            return (grad_input,)
        return (grad_input, rows.parameter_sum(rows.grad * rows.x_hat),
                rows.parameter_sum(rows.grad))

    @staticmethod
    def backward(ctx, *grads):
        saved = ctx.saved_tensors
        grad, input, weight = saved[:3]
        needs = ctx.needs_input_grad
        rows = _RowNorm.of_batch_norm(*saved, ctx.train, ctx.eps)
        upstream = [rows.rows(item) if index == 0 else
                    (None if item is None else item.reshape((-1, 1)))
                    for index, item in enumerate(grads)]
        grad_of_grad, grad_of_input, grad_of_weight = rows.double_backward(
            *upstream, *(None,) * (3 - len(upstream)), needs=(needs[0], needs[1], needs[2]))
        shape = tuple(input.shape)
        if grad_of_grad is not None:
            grad_of_grad = rows.unrows(grad_of_grad, shape)
        if grad_of_input is not None:
            grad_of_input = rows.unrows(grad_of_input, shape)
        return (grad_of_grad, grad_of_input, grad_of_weight) + (None,) * 6


class NativeLayerNormBackward(Op):
    """layer_norm's backward as a node (create_graph), as torch records it: the input's
    gradient, and with a weight the weight's and the bias's, from one node whose edges are
    torch's (grad_out, input, mean, rstd, weight, bias). Its own backward is the derivative
    of those three formulas (``_RowNorm``), the statistics' dependence on the input
    included, as torch's ``layer_norm_double_backward``."""

    node_name = "NativeLayerNormBackwardBackward0"
    array_backward = True
    saved_names = ("grad_out", "input", "mean", "rstd", "weight",
                   "normalized_shape=normalized_shape")  # as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, grad, input, mean, rstd, weight, bias, normalized_shape):
        select_edges(ctx, (0, 1, 2, 3, 4, 5))
        ctx.save_for_backward(grad, input, mean, rstd, weight)
        ctx.normalized_shape = tuple(normalized_shape)
        rows = _RowNorm.of_layer_norm(grad._array, input._array, mean._array, rstd._array,
                                      None if weight is None else weight._array,
                                      ctx.normalized_shape)
        grad_input = rows.project(rows.g).reshape(input._array.shape)
        if weight is None:
            return (grad_input,)
        shape = weight._array.shape
        return (grad_input, rows.parameter_sum(rows.grad * rows.x_hat).reshape(shape),
                rows.parameter_sum(rows.grad).reshape(shape))

    @staticmethod
    def backward(ctx, *grads):
        grad, input, mean, rstd, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        rows = _RowNorm.of_layer_norm(grad, input, mean, rstd, weight, ctx.normalized_shape)
        upstream = [rows.rows(item) if index == 0 else
                    (None if item is None else item.reshape((1, rows.count)))
                    for index, item in enumerate(grads)]
        grad_of_grad, grad_of_input, grad_of_weight = rows.double_backward(
            *upstream, *(None,) * (3 - len(upstream)), needs=(needs[0], needs[1], needs[4]))
        if grad_of_grad is not None:
            grad_of_grad = grad_of_grad.reshape(tuple(input.shape))
        if grad_of_input is not None:
            grad_of_input = grad_of_input.reshape(tuple(input.shape))
        if grad_of_weight is not None:
            grad_of_weight = grad_of_weight.reshape(tuple(weight.shape))
        return grad_of_grad, grad_of_input, None, None, grad_of_weight, None, None


class _RowNorm:
    """A normalization seen as rows normalized on their own (layer_norm's rows: every
    leading index; batch_norm's: every channel), for its backward and double backward on
    arrays or Tensors alike. With ``x_hat = (x - mean) * rstd`` per row and ``g = grad *
    weight``, the input's gradient is ``project(g)``,

        project(v) = rstd * (v - mean(v) - x_hat * mean(v * x_hat))

    (rstd fixed when the statistics are, eval-mode batch_norm: ``rstd * v``), the weight's
    ``sum(grad * x_hat)`` and the bias's ``sum(grad)`` over what a parameter is shared by.
    ``double_backward`` differentiates the three, x's statistics included."""

    def __init__(self, grad, x, mean, rstd, weight, parameter_axis: int, fixed: bool):
        self.grad, self.x, self.rstd = grad, x, rstd
        self.count = x.shape[1]  # N: the elements of a row
        self.centered = x - mean
        self.x_hat = self.centered * rstd
        self.weight = weight
        self.g = grad if weight is None else grad * weight
        self.parameter_axis, self.fixed = parameter_axis, fixed

    @classmethod
    def of_layer_norm(cls, grad, x, mean, rstd, weight, normalized_shape):
        count = 1
        for size in normalized_shape:
            count *= size
        shape = (-1, count)
        return cls(grad.reshape(shape), x.reshape(shape), mean.reshape((-1, 1)),
                   rstd.reshape((-1, 1)), None if weight is None else weight.reshape((1, count)),
                   0, False)

    @classmethod
    def of_batch_norm(cls, grad, x, weight, running_mean, running_var, save_mean, save_invstd,
                      train: bool, eps: float):
        """Each channel a row: (N, C, *spatial) seen as (C, N * spatial)."""
        if train:
            mean, rstd = save_mean, save_invstd
        else:
            mean, rstd = running_mean, (running_var + eps) ** -0.5
        channels = x.shape[1]
        rows = cls.__new__(cls)  # (rows() of grad and x needs only these two)
        rows.parameter_axis, rows.count = 1, 1
        for size in x.shape:
            rows.count *= size
        rows.count //= channels
        return cls(rows.rows(grad), rows.rows(x), mean.reshape((-1, 1)), rstd.reshape((-1, 1)),
                   None if weight is None else weight.reshape((-1, 1)), 1, not train)

    def rows(self, value):
        if self.parameter_axis:  # batch_norm: the channel dim (1) first, then flattened
            return _math.transpose(value, 0, 1).reshape((-1, self.count))
        return value.reshape((-1, self.count))

    def unrows(self, value, shape: tuple):
        """``rows``' inverse: the input's own shape."""
        moved = (shape[1], shape[0]) + tuple(shape[2:])
        return _math.transpose(value.reshape(moved), 0, 1)

    def row_mean(self, value):
        return _math.sum_keepdim(value, 1) / self.count

    def parameter_sum(self, value):
        return _math.sum_dims(value, (self.parameter_axis,))

    def project(self, v):
        if self.fixed:
            return self.rstd * v
        return self.rstd * (v - self.row_mean(v) - self.x_hat * self.row_mean(v * self.x_hat))

    def double_backward(self, grad_grad_input, grad_grad_weight, grad_grad_bias, needs):
        """The gradients of ``<gg_input, project(g)> + <gg_weight, sum(grad * x_hat)> +
        <gg_bias, sum(grad)>`` for grad, x and weight (None where not needed)."""
        a, affine = grad_grad_input, self.weight is not None
        c, rstd, count = self.centered, self.rstd, self.count
        projected = self.project(a)
        grad_of_grad = grad_of_input = grad_of_weight = None
        if needs[0]:
            grad_of_grad = projected * self.weight if affine else projected
            if affine and grad_grad_weight is not None:
                grad_of_grad = grad_of_grad + grad_grad_weight * self.x_hat
            if affine and grad_grad_bias is not None:
                grad_of_grad = grad_of_grad + grad_grad_bias
        if affine and needs[2]:
            grad_of_weight = self.parameter_sum(self.grad * projected)
        if needs[1]:
            rstd3 = rstd * rstd * rstd
            terms = []
            if not self.fixed:  # d/dx <a, project(g)>, through c and rstd
                g = self.g
                k = _math.sum_keepdim(a * g, 1) - _math.sum_keepdim(a, 1) * self.row_mean(g)
                a_c, g_c = _math.sum_keepdim(a * c, 1), _math.sum_keepdim(g * c, 1)
                terms.append(c * (rstd3 * rstd * rstd * a_c * g_c * (3 / count ** 2) -
                                  rstd3 * k / count) -
                             rstd3 / count * ((a - self.row_mean(a)) * g_c +
                                              a_c * (g - self.row_mean(g))))
            if affine and grad_grad_weight is not None:  # d/dx <gg_w, sum(grad * x_hat)>
                h = grad_grad_weight * self.grad
                if self.fixed:
                    terms.append(h * rstd)
                else:
                    h_c = _math.sum_keepdim(h * c, 1)
                    terms.append(rstd * (h - self.row_mean(h)) - c * (rstd3 * h_c / count))
            grad_of_input = terms[0] if terms else _math.constant(
                a, _math.xp(a).zeros_like(_math.array_of(a)))
            for term in terms[1:]:
                grad_of_input = grad_of_input + term
        return grad_of_grad, grad_of_input, grad_of_weight


class NativeGroupNorm(Op):
    """torch's native_group_norm: (output, mean, rstd), the statistics (N, group) outputs
    the node saves as result1/result2 (group_norm drops them)."""

    node_name = "NativeGroupNormBackward0"
    array_backward = True
    saved_names = ("input", "weight", "result1", "result2", "group=groups", "eps=eps")
    saves_output = (1, 2)

    @staticmethod
    def forward(ctx, input, weight, bias, num_groups, eps):
        select_edges(ctx, (0, 1, 2))  # torch's edges: input, weight, bias (None ones too)
        x = input._array
        batch, channels = x.shape[:2]
        if channels % num_groups:
            raise ShapeError(
                f"Expected number of channels in input to be divisible by num_groups, but got "
                f"input of shape {list(x.shape)} and num_groups={num_groups}")
        for tensor in (weight, bias):
            if tensor is not None and tensor._array.shape != (channels,):
                raise ShapeError(
                    f"Expected weight to be a vector of size equal to the number of channels "
                    f"in input, but got weight of shape {list(tensor._array.shape)} and input "
                    f"of shape {list(x.shape)}")
        grouped = x.reshape(batch, num_groups, -1)
        mean, _, rstd = _statistics(input._xp, grouped, (2,), eps)
        out = ((grouped - mean) * rstd).reshape(x.shape)
        shape = _channel_shape(x.ndim)
        if weight is not None:
            out *= weight._array.reshape(shape)
        if bias is not None:
            out += bias._array.reshape(shape)
        ctx.save_for_backward(input, weight)
        ctx.mean, ctx.rstd, ctx.eps, ctx.groups = mean, rstd, eps, num_groups
        ctx.has_bias = bias is not None
        return out, mean.reshape(batch, num_groups).astype(x.dtype), rstd.reshape(
            batch, num_groups)

    @staticmethod
    def backward(ctx, grad, grad_mean=None, grad_rstd=None):
        # (the statistics' gradients: nothing public returns them, so they are never set)
        input, weight = ctx.saved_tensors[:2]
        needs = ctx.needs_input_grad
        shape = _channel_shape(input.ndim)
        grouped_shape = (input.shape[0], ctx.groups, -1)
        g = grad if weight is None else grad * weight.reshape(shape)
        grad_input, x_hat = _input_grad(input.reshape(grouped_shape), g.reshape(grouped_shape),
                                        (2,), ctx.mean, ctx.rstd, ctx.eps, True)
        axes = (0,) + tuple(range(2, input.ndim))
        grad_weight = grad_bias = None
        if weight is not None and needs[1]:
            grad_weight = _math.sum_dims(grad * x_hat.reshape(input.shape), axes)
        if ctx.has_bias and needs[2]:
            grad_bias = _math.sum_dims(grad, axes)
        return (grad_input.reshape(input.shape) if needs[0] else None, grad_weight, grad_bias,
                None, None)


# grad_fn._saved_N, _C, _HxW: the input's batch, channels and the product of the rest,
# read from the node's input meta (nothing more kept per call)
show_saved(NativeGroupNorm, "N", lambda node: node._input_meta[0][0][0])
show_saved(NativeGroupNorm, "C", lambda node: node._input_meta[0][0][1])
show_saved(NativeGroupNorm, "HxW", lambda node: math.prod(node._input_meta[0][0][2:]))
