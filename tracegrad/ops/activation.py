"""The activations of ``torch.nn`` that torch records as one node each: leaky_relu, elu
(and selu, celu), gelu, softplus, hardtanh (and relu6), hardsigmoid, hardswish, mish,
logsigmoid, glu, prelu, threshold, softshrink, hardshrink.

Forward works on arrays; backward is written with tensor ops, so ``create_graph=True``
differentiates through it. Most backwards are ``grad`` times a mask or a smooth factor of
the input; gelu's has a node of its own (GeluBackwardBackward0, as in torch).
"""

from __future__ import annotations

import math

import numpy as np

from .._layout import row_major
from ..autograd.function import Op
from ..autograd.quiet import quiet, silenced
from ..errors import ShapeError
from ..tensor import Tensor
from . import _math, unary
from ._math import sum_to
from ._saved import as_torch_int, show_saved
from ._special import erf  # the one erf (float64 exact, float32 vectorised; CuPy: cupyx)
from .binary import _NotDifferentiable
from .shape import wrap_dim

_ndarray = np.ndarray
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def floating_array(op_name: str, a: Tensor):
    """``a``'s array, which must be floating point: torch's activations have no integer
    kernels (NotImplementedError, as torch raises)."""
    array = a._array
    if array.dtype.kind != "f":
        raise NotImplementedError(
            f'"{op_name}" not implemented for \'{_torch_type_name(array.dtype)}\' '
            f"({a._describe()}). Hint: convert the input with .float() first.")
    return array


def _torch_type_name(numpy_dtype) -> str:
    return {"int64": "Long", "int32": "Int", "uint8": "Byte", "bool": "Bool",
            "int16": "Short", "int8": "Char"}.get(str(numpy_dtype), str(numpy_dtype))


def _mask(array) -> Tensor:
    return Tensor._wrap(array, False)


class MaskBackward:
    """``grad * mask(self)``: the backward of a piecewise-linear activation as a node of its
    own beside Tensors, as torch records it (ThresholdBackwardBackward0, ...). Its
    gradient is the same mask in ``grad`` and zero in ``self`` -- so, as in torch, the
    gradient made with ``create_graph=True`` requires grad whenever ``self`` does, and a
    second derivative is zeros (not "does not require grad")."""

    @staticmethod
    @silenced
    def forward(ctx, grad, a, *parameters):
        ctx.save_for_backward(a)
        ctx.parameters = parameters
        factor = ctx._function.factor(a._array, *parameters)
        return (grad._array * factor).astype(grad._array.dtype, copy=False)

    array_backward = True

    @staticmethod
    def backward(ctx, grad_grad):
        (a,) = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_of_grad = _math.apply(ctx._function, grad_grad, a, *ctx.parameters) \
            if needs[0] else None
        grad_of_self = _math.constant(
            grad_grad, _math.xp(a).zeros_like(_math.array_of(a))) if needs[1] else None
        return (grad_of_grad, grad_of_self) + (None,) * len(ctx.parameters)


class ThresholdBackward(MaskBackward, Op):
    node_name = "ThresholdBackwardBackward0"
    saved_names = ("self", "threshold=threshold")

    @staticmethod
    def factor(x, threshold):
        return x > threshold


class LeakyReluBackward(MaskBackward, Op):
    node_name = "LeakyReluBackwardBackward0"
    saved_names = ("self", "negative_slope=negative_slope")

    @staticmethod
    def factor(x, negative_slope):
        return x.dtype.type(1) * (x > 0) + x.dtype.type(negative_slope) * (x <= 0)


class HardtanhBackward(MaskBackward, Op):
    node_name = "HardtanhBackwardBackward0"
    saved_names = ("self", "min_val=min_val", "max_val=max_val")

    @staticmethod
    def factor(x, min_val, max_val):
        return (x > min_val) & (x < max_val)


for _op, _names in ((ThresholdBackward, ("threshold",)),
                    (LeakyReluBackward, ("negative_slope",)),
                    (HardtanhBackward, ("min_val", "max_val"))):
    for _index, _name in enumerate(_names):
        setattr(_op._node_class, _name,
                property(lambda node, index=_index: node.parameters[index]))


def mask_backward(op, grad, a, *parameters):
    """``grad * op.factor(a, *parameters)``: beside Tensors ``op``'s node (torch's
    XBackwardBackward0), beside arrays the product."""
    if grad.__class__ is Tensor:
        return op.apply(grad, a, *parameters)
    return grad * op.factor(a, *parameters)


class LeakyRelu(Op):
    node_name = "LeakyReluBackward0"
    array_backward = True
    saved_names = ("self", "negative_slope=negative_slope")  # as PyTorch names them

    @staticmethod
    def forward(ctx, a, negative_slope=0.01):
        x = floating_array("leaky_relu_cpu", a)
        ctx.save_for_backward(a)
        ctx.negative_slope = negative_slope
        return a._xp.where(x > 0, x, x * x.dtype.type(negative_slope))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (mask_backward(LeakyReluBackward, grad, a, ctx.negative_slope), None)


def unary_where(condition, a, b):
    """``tracegrad.where`` on Tensors (recorded) or arrays (see _math.where)."""
    return _math.where(condition, a, b)


class Elu(Op):
    """``scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1))``: ELU, and SELU with
    SELU's constants (both EluBackward0 in torch)."""

    node_name = "EluBackward0"
    array_backward = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "alpha=alpha", "scale=scale", "input_scale=input_scale")

    @staticmethod
    def forward(ctx, a, alpha=1.0, scale=1.0, input_scale=1.0):
        x = floating_array(f"{ctx._function._kernel}", a)
        ctx.save_for_backward(a)
        ctx.alpha, ctx.scale, ctx.input_scale = alpha, scale, input_scale
        xp = a._xp
        negative = xp.expm1(xp.minimum(x, 0) * input_scale) * alpha
        return xp.where(x > 0, x, negative) * x.dtype.type(scale)

    _kernel = "elu_cpu"

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if grad.__class__ is Tensor:  # torch's EluBackwardBackward0 (see EluBackward)
            return (EluBackward.apply(grad, a, ctx.alpha, ctx.scale, ctx.input_scale), None,
                    None, None)
        # exp of the clamped input: the positive side is not used, and must not overflow
        # to inf, whose product with a zero gradient would be nan in double backward
        exponential = _math.exp(_math.clamp_max(a, 0) * ctx.input_scale)
        negative = grad * (exponential * (ctx.input_scale * ctx.scale * ctx.alpha))
        return (_math.where(a > 0, grad * ctx.scale, negative), None, None, None)


class EluBackward(Op):
    """elu's backward (celu's and selu's too) as a node (create_graph), as torch records it
    (EluBackwardBackward0, for the input: is_result False): the same map of the incoming
    gradient, and for the input ``gg * grad * input_scale**2 * scale * alpha *
    exp(x * input_scale)`` where x <= 0 (zero above)."""

    node_name = "EluBackwardBackward0"
    # as PyTorch names them (self_or_result: the input here, is_result False)
    saved_names = ("grad_output", "self_or_result", "alpha=alpha", "scale=scale",
                   "input_scale=input_scale")
    array_backward = True

    @staticmethod
    def forward(ctx, grad, a, alpha, scale, input_scale):
        ctx.save_for_backward(grad, a)
        ctx.alpha, ctx.scale, ctx.input_scale = alpha, scale, input_scale
        x, g = a._array, grad._array
        xp = a._xp
        with quiet():
            negative = g * (xp.exp(xp.minimum(x, 0) * input_scale) *
                            (input_scale * scale * alpha))
        return xp.where(x > 0, g * scale, negative).astype(g.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad_grad):
        grad, a = ctx.saved_tensors
        needs = ctx.needs_input_grad
        alpha, scale, input_scale = ctx.alpha, ctx.scale, ctx.input_scale
        grad_of_grad = _math.apply(EluBackward, grad_grad, a, alpha, scale, input_scale) \
            if needs[0] else None
        grad_of_self = None
        if needs[1]:  # torch's elu_double_backward (is_result False), op for op
            grad_of_self = _math.apply(
                EluBackward, _math.scaled(grad_grad * grad, input_scale), a, alpha, scale,
                input_scale) * _math.like_dtype(a < 0, grad_grad)
        return grad_of_grad, grad_of_self, None, None, None


show_saved(EluBackward, "is_result", lambda node: False)


class Celu(Elu):
    node_name = "CeluBackward0"
    _kernel = "celu_cpu"
    saved_names = ("self", "alpha=alpha")  # grad_fn._saved_<name>, as PyTorch names them


class Gelu(Op):
    """``x * Phi(x)`` (``approximate="none"``) or its tanh approximation."""

    node_name = "GeluBackward0"
    array_backward = True
    saved_names = ("self", "approximate=approximate")  # as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a, approximate="none"):
        x = floating_array("GeluKernelImpl", a)
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        xp = a._xp
        if approximate == "tanh":
            inner = (x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)
            return (x * 0.5) * (1 + xp.tanh(inner))
        return (x * 0.5) * (1 + erf(xp, x * (1 / math.sqrt(2))))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (_gelu_grad(grad, a, ctx.approximate), None)


def _gelu_grad(grad, a, approximate: str):
    """``grad * gelu'(a)``: beside Tensors a node of its own (GeluBackwardBackward0, whose
    gradient is exact), beside arrays the product itself."""
    if grad.__class__ is Tensor:
        return GeluBackward.apply(grad, a, approximate)
    return grad * _gelu_derivative(_math.xp(a), a, approximate)


class GeluBackward(Op):
    """``grad * gelu'(x)``: gelu's backward as a node, so its own gradient (the second
    derivative) is exact, as torch's GeluBackwardBackward0."""

    node_name = "GeluBackwardBackward0"
    array_backward = True
    saved_names = ("grad_output", "self", "approximate=approximate")  # as PyTorch's

    @staticmethod
    def forward(ctx, grad, a, approximate="none"):
        ctx.save_for_backward(grad, a)
        ctx.approximate = approximate
        return grad._array * _gelu_derivative(a._xp, a._array, approximate)

    @staticmethod
    def backward(ctx, grad_grad):
        grad, a = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_of_grad = _math.apply(GeluBackward, grad_grad, a, ctx.approximate) \
            if needs[0] else None
        grad_of_input = None
        if needs[1]:
            grad_of_input = grad_grad * grad * _gelu_second_derivative(a, ctx.approximate)
        return grad_of_grad, grad_of_input, None


_BETA = math.sqrt(2 / math.pi)
_KAPPA = 0.044715


@silenced
def _gelu_derivative(xp, x, approximate: str):
    if approximate == "tanh":
        squared = x * x
        t = xp.tanh((x + squared * x * _KAPPA) * _BETA)
        return 0.5 * (1 + t) + (x * 0.5) * (1 - t * t) * (_BETA * (1 + 3 * _KAPPA * squared))
    cdf = 0.5 * (1 + erf(xp, x * (1 / math.sqrt(2))))
    pdf = xp.exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi))
    return cdf + x * pdf


def _gelu_second_derivative(a, approximate: str):
    """gelu'' of a Tensor (written with tensor ops, so higher derivatives follow) or an
    array."""
    if approximate == "tanh":
        squared = a * a
        t = _math.tanh((a + squared * a * _KAPPA) * _BETA)
        inner = (squared * (3 * _KAPPA) + 1) * _BETA  # d(inner)/dx
        return (1 - t * t) * (inner - a * t * inner * inner + a * (3 * _KAPPA * _BETA) * a)
    pdf = _math.exp(a * a * -0.5) * (1 / math.sqrt(2 * math.pi))
    return pdf * (2 - a * a)


class Softplus(Op):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``."""

    node_name = "SoftplusBackward0"
    array_backward = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "beta=beta", "threshold=threshold")

    @staticmethod
    @silenced
    def forward(ctx, a, beta=1.0, threshold=20.0):
        x = floating_array("softplus_cpu", a)
        ctx.save_for_backward(a)
        ctx.beta, ctx.threshold = beta, threshold
        xp = a._xp
        scaled = x * x.dtype.type(beta)
        # logaddexp(0, z) is log1p(exp(z)) without overflow for large z
        return xp.where(scaled > threshold, x, xp.logaddexp(0, scaled) / x.dtype.type(beta))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if grad.__class__ is Tensor:  # torch's SoftplusBackwardBackward0
            return (SoftplusBackward.apply(grad, a, ctx.beta, ctx.threshold), None, None)
        scaled = a * ctx.beta
        return (_math.where(scaled > ctx.threshold, grad, grad * _math.sigmoid(scaled)), None,
                None)


class SoftplusBackward(Op):
    """softplus's backward as a node (create_graph), as torch records it: the same map of
    the incoming gradient, and ``gg * grad * beta * s * (1 - s)`` for the input (s the
    sigmoid of beta * x) where beta * x <= threshold (zero above)."""

    node_name = "SoftplusBackwardBackward0"
    # as PyTorch names them
    saved_names = ("grad_output", "self", "beta=beta", "threshold=threshold")
    array_backward = True

    @staticmethod
    def forward(ctx, grad, a, beta, threshold):
        ctx.save_for_backward(grad, a)
        ctx.beta, ctx.threshold = beta, threshold
        x, g = a._array, grad._array
        scaled = x * x.dtype.type(beta)
        sigmoid = unary._stable_sigmoid(a._xp, scaled)
        return a._xp.where(scaled > threshold, g, g * sigmoid).astype(g.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad_grad):
        grad, a = ctx.saved_tensors
        needs = ctx.needs_input_grad
        beta, threshold = ctx.beta, ctx.threshold
        grad_of_grad = _math.apply(SoftplusBackward, grad_grad, a, beta, threshold) \
            if needs[0] else None
        grad_of_self = None
        if needs[1]:  # torch's softplus_double_backward, op for op
            scaled = _math.scaled(a, beta)
            grad_of_self = _math.scaled(_math.apply(
                unary.SigmoidBackward, grad_grad * grad, _math.sigmoid(scaled)) *
                _math.like_dtype(scaled < threshold, grad_grad), beta)
        return grad_of_grad, grad_of_self, None, None


class Hardtanh(Op):
    node_name = "HardtanhBackward0"
    array_backward = True
    saved_names = ("self", "min_val=min_val", "max_val=max_val")  # as PyTorch names them

    @staticmethod
    def forward(ctx, a, min_val=-1.0, max_val=1.0):
        x = a._array
        if x.dtype.kind == "b":
            floating_array("hardtanh_cpu", a)
        ctx.save_for_backward(a)
        ctx.min_val, ctx.max_val = min_val, max_val
        return a._xp.clip(x, min_val, max_val).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (mask_backward(HardtanhBackward, grad, a, ctx.min_val, ctx.max_val), None, None)


class Hardsigmoid(Op):
    node_name = "HardsigmoidBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        x = floating_array("hardsigmoid_cpu", a)
        ctx.save_for_backward(a)
        return (a._xp.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if grad.__class__ is Tensor:  # torch defines no derivative of this backward
            return (HardsigmoidBackward.apply(grad, a),)
        return (grad * ((a > -3) & (a < 3)) * _ONE_SIXTH,)


class HardsigmoidBackward(_NotDifferentiable):
    """hardsigmoid's backward under create_graph: computed, but torch defines no derivative
    of it (a NotImplemented node whose backward raises torch's error), so a second
    derivative fails here as in torch instead of giving numbers torch does not."""

    node_name = "torch::autograd::NotImplemented"
    _aten_name = "hardsigmoid_backward"

    @staticmethod
    def forward(ctx, grad, a):
        x = a._array
        return (grad._array * ((x > -3) & (x < 3)) * _ONE_SIXTH).astype(grad._array.dtype,
                                                                          copy=False)


# torch's hardsigmoid backward multiplies by 1/6 rounded to float32, in every dtype
_ONE_SIXTH = float(np.float32(1.0) / np.float32(6.0))


class Hardswish(Op):
    node_name = "HardswishBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a):
        x = floating_array("hardswish_cpu", a)
        ctx.save_for_backward(a)
        return (x * a._xp.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if grad.__class__ is Tensor:  # torch's HardswishBackwardBackward0
            return (HardswishBackward.apply(grad, a),)
        return (_hardswish_grad(_math.xp(a), grad, a),)


def _hardswish_grad(xp, grad, x):
    """hardswish's derivative times ``grad``, on arrays (torch's hardswish_backward)."""
    middle = grad * (x * (1 / 3) + 0.5)
    return xp.where(x < -3, 0.0, xp.where(x <= 3, middle, grad)).astype(grad.dtype, copy=False)


class HardswishBackward(Op):
    """hardswish's backward as a node (create_graph), as torch records it: its gradient
    for the incoming gradient is the same map, for the input ``gg * grad / 3`` strictly
    inside (-3, 3), zero elsewhere (torch's formula)."""

    node_name = "HardswishBackwardBackward0"
    saved_names = ("grad_output", "self")  # as PyTorch names them
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, grad, a):
        ctx.save_for_backward(grad, a)
        return _hardswish_grad(a._xp, grad._array, a._array)

    @staticmethod
    def backward(ctx, grad_grad):
        grad, a = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_of_self = None
        if needs[1]:
            inside = _math.constant(grad_grad, (-3 < _math.array_of(a)) & (_math.array_of(a) < 3))
            grad_of_self = _math.where(inside, grad_grad * grad / 3.0, 0.0)
        return (_math.apply(HardswishBackward, grad_grad, a) if needs[0] else None,
                grad_of_self)


class Mish(Op):
    """``x * tanh(softplus(x))``."""

    node_name = "MishBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a):
        x = floating_array("mish_cpu", a)
        ctx.save_for_backward(a)
        xp = a._xp
        return x * xp.tanh(xp.logaddexp(0, x))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if grad.__class__ is Tensor:  # torch's infinitely_differentiable_mish_backward
            sigmoid = _math.sigmoid(a)
            t = _math.tanh(_math.log1p(_math.exp(a)))
            return (grad * (t + a * sigmoid * _math.number_minus(1.0, t * t)),)
        t = _math.tanh(_math.reapply(Softplus, a, 1.0, 20.0))
        return (grad * (t + a * _math.sigmoid(a) * (1 - t * t)),)


class LogSigmoid(Op):
    node_name = "LogSigmoidBackward0"
    array_backward = True
    saved_names = ("self",)  # as PyTorch names them; buffer below

    @staticmethod
    def forward(ctx, a):
        x = floating_array("log_sigmoid_cpu", a)
        ctx.save_for_backward(a)
        xp = a._xp
        # (torch allocates the result, and its buffer, contiguous)
        return row_major(xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if grad.__class__ is Tensor:  # torch's LogSigmoidBackwardBackward0
            return (LogSigmoidBackward.apply(grad, a),)
        return (grad * _math.sigmoid(-a),)


class LogSigmoidBackward(Op):
    """logsigmoid's backward ``grad * sigmoid(-x)`` as a node (create_graph), as torch
    records it: the same map of the incoming gradient, and torch's
    ``log_sigmoid_double_backward`` for the input, ``gg * grad * (z - 1) * z`` with
    ``z = sigmoid(x)``."""

    node_name = "LogSigmoidBackwardBackward0"
    saved_names = ("grad_output", "self")  # as PyTorch names them; buffer below
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, grad, a):
        ctx.save_for_backward(grad, a)
        xp = a._xp
        return grad._array * unary._stable_sigmoid(xp, -a._array)

    @staticmethod
    def backward(ctx, grad_grad):
        grad, a = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_of_self = None
        if needs[1]:
            z = _math.sigmoid(a)  # torch's log_sigmoid_double_backward: (z - 1) a sub.Scalar
            grad_of_self = grad_grad * grad * _math.shifted(z, -1) * z
        return (_math.apply(LogSigmoidBackward, grad_grad, a) if needs[0] else None,
                grad_of_self)


def _log_sigmoid_buffer(node):
    """torch's ``_saved_buffer`` of log_sigmoid (its CPU kernel keeps ``exp(-|x|)`` for the
    backward): made from the saved input when read, so the forward saves nothing more."""
    a = node._saved_self
    return Tensor._wrap(a._xp.exp(-a._xp.abs(a._array)), False)


class Glu(Op):
    """``a * sigmoid(b)`` for the two halves ``a, b`` of ``dim``."""

    node_name = "GluBackward0"
    array_backward = True
    saved_names = ("self",)  # as PyTorch names them; dim below

    @staticmethod
    def forward(ctx, a, dim=-1):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = floating_array("glu_cpu", a)
        if x.ndim == 0:
            raise RuntimeError(f"glu does not support scalars because halving size must be "
                               f"even ({a._describe()})")
        axis = wrap_dim(dim, x.ndim)
        if x.shape[axis] % 2:
            raise RuntimeError(
                f"Halving dimension must be even, but dimension {axis} is size "
                f"{x.shape[axis]} ({a._describe()})")
        ctx.save_for_backward(a)
        ctx.axis = axis
        first, second = a._xp.split(x, 2, axis=axis)
        return first * unary._stable_sigmoid(a._xp, second)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if grad.__class__ is Tensor:  # torch's GluBackwardBackward0
            return (GluBackward.apply(grad, a, ctx.given), None)
        return (_glu_grad(a, grad, ctx.axis), None)


def _glu_grad(a, grad, axis: int):
    """glu's derivative applied to ``grad`` (torch's glu_backward): Tensors or arrays."""
    half = a.shape[axis] // 2
    first = _math.narrow(a, axis, 0, half)
    gate = _math.sigmoid(_math.narrow(a, axis, half, 2 * half))
    grad_first = grad * gate
    grad_second = grad_first * first * (1 - gate)
    return _math.cat((grad_first, grad_second), axis)


class GluBackward(Op):
    """glu's backward as a node (create_graph), as torch records it, with torch's
    ``glu_double_backward_grad_output`` (the incoming gradient) and
    ``glu_double_backward`` (the input) as its gradients."""

    node_name = "GluBackwardBackward0"
    saved_names = ("grad_output", "self")  # as PyTorch names them; dim below
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, grad, a, dim):
        ctx.save_for_backward(grad, a)
        ctx.given = dim
        ctx.axis = wrap_dim(dim, a._array.ndim)
        return _glu_grad(a._array, grad._array, ctx.axis)

    @staticmethod
    def backward(ctx, grad_grad):
        grad, a = ctx.saved_tensors
        needs = ctx.needs_input_grad
        axis = ctx.axis
        half = a.shape[axis] // 2
        grad_of_grad = grad_of_self = None
        if needs[0]:
            sizes = list(a.shape)
            sizes[axis] = half
            ones = _math.constant(grad_grad, _math.xp(a).ones(sizes, _math.numpy_dtype(a)))
            spread = grad_grad * _math.apply(GluBackward, ones, a, ctx.given)
            grad_of_grad = (_math.narrow(spread, axis, 0, half) +
                            _math.narrow(spread, axis, half, 2 * half))
        if needs[1]:
            first = _math.narrow(a, axis, 0, half)
            gate = _math.sigmoid(_math.narrow(a, axis, half, 2 * half))
            one_minus_gate = 1 - gate
            gate_slope = gate * one_minus_gate
            gg_first = _math.narrow(grad_grad, axis, 0, half)
            gg_second = _math.narrow(grad_grad, axis, half, 2 * half)
            self_first = gg_second * grad * gate_slope
            curvature = gate_slope * one_minus_gate - gate ** 2 * one_minus_gate
            self_second = (gg_second * first * grad * curvature +
                           gg_first * grad * gate_slope)
            grad_of_self = _math.cat((self_first, self_second), axis)
        return grad_of_grad, grad_of_self, None


class PreluKernel(Op):
    """torch's ``_prelu_kernel``: ``x if x > 0 else weight * x``, the weight broadcast
    (``prelu`` shapes it first: ``prelu_weight``)."""

    node_name = "PreluKernelBackward0"
    array_backward = True
    saved_names = ("self", "weight")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a, weight):
        x = floating_array("prelu_cpu", a)
        ctx.save_for_backward(a, weight)
        return a._xp.where(x > 0, x, x * weight._array)

    @staticmethod
    def backward(ctx, grad):
        a, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        positive = a > 0
        grad_input = unary_where(positive, grad, grad * weight) if needs[0] else None
        grad_weight = None
        if needs[1]:
            grad_weight = sum_to(unary_where(positive, 0.0, grad * a), tuple(weight.shape))
        return grad_input, grad_weight


def prelu_weight(a: Tensor, weight: Tensor) -> Tensor:
    """``prelu``'s weight as torch hands it to ``_prelu_kernel``: checked, and -- where its
    rank differs from the input's -- reshaped (a recorded view, ViewBackward0) to the
    input's rank with its values along dim 1."""
    count = weight._array.size
    if count != 1:
        if a._array.ndim == 0:
            raise ShapeError("Not allow zero-dim input tensor.")
        channels = a._array.shape[1] if a._array.ndim >= 2 else 1
        if count != channels:
            raise ShapeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {count} and channel size = {channels}. ({a._describe()}) Hint: "
                "PReLU's num_parameters must be 1 or the input's size along dim 1.")
    if weight._array.ndim > 1:
        raise ShapeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                         f"ndim = {weight._array.ndim}")
    if a._array.ndim == weight._array.ndim:
        return weight
    shape = [1] * a._array.ndim
    if a._array.ndim > 1:
        shape[1] = count
    return weight.reshape(shape)


class Threshold(Op):
    node_name = "ThresholdBackward0"
    array_backward = True
    saved_names = ("self", "threshold=threshold")  # as PyTorch names them

    @staticmethod
    def forward(ctx, a, threshold, value):
        x = a._array
        ctx.save_for_backward(a)
        ctx.threshold = threshold
        return a._xp.where(x > threshold, x, a._xp.asarray(value, dtype=x.dtype))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (mask_backward(ThresholdBackward, grad, a, ctx.threshold), None, None)


class Softshrink(Op):
    node_name = "SoftshrinkBackward0"
    array_backward = True
    saved_names = ("self", "lambd=lambd")  # as PyTorch names them

    @staticmethod
    def forward(ctx, a, lambd=0.5):
        x = floating_array("softshrink_cpu", a)
        ctx.save_for_backward(a)
        ctx.lambd = lambd
        xp = a._xp
        return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, 0)).astype(
            x.dtype, copy=False)

    _backward_op = None  # (set below: the backward's own op under create_graph)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if grad.__class__ is Tensor:  # torch's SoftshrinkBackwardBackward0 (Hardshrink's)
            return (ctx._function._backward_op.apply(grad, a, ctx.lambd), None)
        return (grad * ((a > ctx.lambd) | (a < -ctx.lambd)), None)


class Hardshrink(Softshrink):
    node_name = "HardshrinkBackward0"

    @staticmethod
    def forward(ctx, a, lambd=0.5):
        x = floating_array("hardshrink_cpu", a)
        ctx.save_for_backward(a)
        ctx.lambd = lambd
        return a._xp.where((x > lambd) | (x < -lambd), x, 0).astype(x.dtype, copy=False)


class SoftshrinkBackward(Op):
    """softshrink's backward as a node (create_graph), as torch records it: the incoming
    gradient where |x| > lambd, 0 elsewhere; its own backward maps the gradient the same
    way and gives the input a zero gradient (torch's zeros_like)."""

    node_name = "SoftshrinkBackwardBackward0"
    array_backward = True
    saved_names = ("self", "lambd=lambd")  # as PyTorch names them

    @staticmethod
    def forward(ctx, grad, a, lambd):
        ctx.save_for_backward(a)
        ctx.lambd = lambd
        x, g = a._array, grad._array
        return a._xp.where((x > lambd) | (x < -lambd), g, 0).astype(g.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad_grad):
        (a,) = ctx.saved_tensors
        needs = ctx.needs_input_grad
        return (_math.apply(ctx._function, grad_grad, a, ctx.lambd) if needs[0] else None,
                _math.constant(grad_grad, _math.xp(grad_grad).zeros_like(
                    _math.array_of(grad_grad))) if needs[1] else None, None)


class HardshrinkBackward(SoftshrinkBackward):
    node_name = "HardshrinkBackwardBackward0"


Softshrink._backward_op, Hardshrink._backward_op = SoftshrinkBackward, HardshrinkBackward


__all__ = ["SELU_ALPHA", "SELU_SCALE"]

show_saved(Glu, "dim", lambda node: as_torch_int(node.given))
show_saved(GluBackward, "dim", lambda node: as_torch_int(node.given))
show_saved(LogSigmoid, "buffer", _log_sigmoid_buffer)
show_saved(LogSigmoidBackward, "buffer", _log_sigmoid_buffer)
