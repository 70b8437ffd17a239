"""Elementwise math and activations: exp log sqrt abs sin cos tanh sigmoid relu clamp,
maximum/minimum, softmax/log_softmax."""

from __future__ import annotations

import numpy as np

from .._layout import iterates, row_major
from ..autograd.function import Op
from ..autograd.quiet import FLOAT_ERRORS, quiet, restore, retry, silence, silenced
from ..backends import kernels
from . import _math
from ._checks import wrap_dim
from ._edges import select_edges
from ._math import sum_to
from ._operands import broadcast_error, operands
from ._saved import as_torch_int, show_saved


def _float(a):
    """Math functions on int tensors give the default float, as in torch."""
    x = a._array
    return x if x.dtype.kind == "f" else x.astype("float32")


class Exp(Op):
    node_name = "ExpBackward0"
    array_backward = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them
    saves_output = True

    @staticmethod
    def forward(ctx, a):
        token = silence()  # exp(1000.) is inf in torch, with no warning
        try:
            return a._xp.exp(_float(a))
        finally:
            restore(token)

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return (grad * result,)


class Log(Op):
    node_name = "LogBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        xp = a._xp
        with _quiet(xp):
            return xp.log(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad / a,)


class Sqrt(Op):
    node_name = "SqrtBackward0"
    array_backward = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them
    saves_output = True

    @staticmethod
    def forward(ctx, a):
        xp = a._xp
        with _quiet(xp):
            return xp.sqrt(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return (grad / _math.scaled(result, 2),)  # (torch's 2 * result: MulBackward1)


class Abs(Op):
    node_name = "AbsBackward0"
    array_backward = True
    inference_overload = "abs"  # (torch's composite abs fills through out=: inference.py)
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a._xp.abs(a._array)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        # beside Tensors torch's grad * self.sgn(): recorded (its derivative is zero), so
        # the gradient made with create_graph requires grad, as in torch
        return (grad * (a.sgn() if a.__class__ is _math.Tensor else _math.sign(a)),)


class Sin(Op):
    node_name = "SinBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        x = _float(a)
        try:
            return a._xp.sin(x)
        except FLOAT_ERRORS:  # sin(inf) is nan, with warnings as errors: torch is silent
            return retry(a._xp.sin, x)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * _math.cos(a),)


class Cos(Op):
    node_name = "CosBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        x = _float(a)
        try:
            return a._xp.cos(x)
        except FLOAT_ERRORS:  # cos(inf) is nan, with warnings as errors: torch is silent
            return retry(a._xp.cos, x)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * -_math.sin(a),)  # (torch's order: a recorded graph ends in a mul)


class Tanh(Op):
    node_name = "TanhBackward0"
    array_backward = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them
    saves_output = True

    @staticmethod
    def forward(ctx, a):
        return a._xp.tanh(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        fused = _math.fused_activation("tanh", grad, result)
        if fused is not None:
            return (fused,)
        if grad.__class__ is _math.Tensor:  # torch's TanhBackwardBackward0
            return (TanhBackward.apply(grad, result),)
        return (grad * (1 - result * result),)


class TanhBackward(Op):
    """tanh's backward ``grad * (1 - output**2)`` as a node (create_graph), as torch
    records it: its gradients are the same map of the incoming gradient, and
    ``-2 * output * grad_grad * grad`` for the output."""

    node_name = "TanhBackwardBackward0"
    saved_names = ("grad_output", "output")  # as PyTorch names them
    array_backward = True

    @staticmethod
    def forward(ctx, grad, output):
        ctx.save_for_backward(grad, output)
        y = output._array
        return grad._array * (1 - y * y)

    @staticmethod
    def backward(ctx, grad_grad):
        grad, output = ctx.saved_tensors
        needs = ctx.needs_input_grad
        # torch's formula, grouped as torch writes it: grad * ((-2 * output) * grad_output),
        # the -2 a scalar product (MulBackward1)
        return (_math.apply(TanhBackward, grad_grad, output) if needs[0] else None,
                grad_grad * (_math.scaled(output, -2) * grad) if needs[1] else None)


class Sigmoid(Op):
    node_name = "SigmoidBackward0"
    array_backward = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them
    saves_output = True

    @staticmethod
    def forward(ctx, a):
        x = _float(a)
        if x.__class__ is not _ndarray and kernels.enabled:
            return kernels.sigmoid_forward(x)
        return _stable_sigmoid(a._xp, x)

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        fused = _math.fused_activation("sigmoid", grad, result)
        if fused is not None:
            return (fused,)
        if grad.__class__ is _math.Tensor:  # torch's SigmoidBackwardBackward0
            return (SigmoidBackward.apply(grad, result),)
        return (grad * result * (1 - result),)


class SigmoidBackward(Op):
    """sigmoid's backward ``grad * output * (1 - output)`` as a node (create_graph), as
    torch records it: its gradients are the same map of the incoming gradient, and
    ``grad_grad * grad * (1 - 2 * output)`` for the output."""

    node_name = "SigmoidBackwardBackward0"
    saved_names = ("grad_output", "output")  # as PyTorch names them
    array_backward = True

    @staticmethod
    def forward(ctx, grad, output):
        ctx.save_for_backward(grad, output)
        y = output._array
        return grad._array * y * (1 - y)

    @staticmethod
    def backward(ctx, grad_grad):
        grad, output = ctx.saved_tensors
        needs = ctx.needs_input_grad
        return (_math.apply(SigmoidBackward, grad_grad, output) if needs[0] else None,
                # torch's formula as it groups it: grad * grad_output * (-2 * output + 1)
                grad_grad * grad * _math.shifted(_math.scaled(output, -2), 1)
                if needs[1] else None)


def _stable_sigmoid(xp, x):
    # exp of -|x| never overflows; pick the stable form by sign
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


class Silu(Op):
    """``x * sigmoid(x)`` (swish), one node as in ``torch.nn.functional.silu``."""

    node_name = "SiluBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a):
        ctx.save_for_backward(a)
        x = _float(a)
        if x.__class__ is not _ndarray and kernels.enabled:
            return kernels.silu_forward(x)
        return x * _stable_sigmoid(a._xp, x)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        fused = _math.fused_activation("silu", grad, a)
        if fused is not None:
            return (fused,)
        s = _math.sigmoid(a)  # (written as torch's formula is: its nodes under create_graph)
        return (grad * s * _math.shifted(a * _math.number_minus(1, s), 1),)


class Relu(Op):
    node_name = "ReluBackward0"
    array_backward = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them
    saves_output = True

    @staticmethod
    def forward(ctx, a):
        x = a._array
        return a._xp.maximum(x, x.dtype.type(0))

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        fused = _math.fused_activation("relu", grad, result)
        if fused is not None:
            return (fused,)
        if grad.__class__ is _math.Tensor:  # torch's ThresholdBackwardBackward0
            from .activation import ThresholdBackward  # (it imports this module)

            return (ThresholdBackward.apply(grad, result, 0),)
        return (grad * (result > 0),)


_ndarray = np.ndarray


class ClampMin(Op):
    """``clamp_min(x, number)``; ``clamp(x, min=number)`` is Clamp (ClampBackward1)."""

    node_name = "ClampMinBackward0"
    array_backward = True
    saved_names = ("self", "min=min")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, min):
        ctx.save_for_backward(a)
        ctx.min = min
        return a._xp.maximum(a._array, _bound(a, min))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * (a >= ctx.min), None)


class ClampMax(Op):
    node_name = "ClampMaxBackward0"
    array_backward = True
    saved_names = ("self", "max=max")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, max):
        ctx.save_for_backward(a)
        ctx.max = max
        return a._xp.minimum(a._array, _bound(a, max))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * (a <= ctx.max), None)


class Clamp(Op):
    """``clamp(x, min, max)`` with numbers (either may be None)."""

    node_name = "ClampBackward1"
    array_backward = True
    saved_names = ("self", "min=min", "max=max")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, min, max):
        ctx.save_for_backward(a)
        ctx.min, ctx.max = min, max
        x = a._array
        xp = a._xp
        if min is not None:
            x = xp.maximum(x, _bound(a, min))
        if max is not None:
            x = xp.minimum(x, _bound(a, max))
        return x if x is not a._array else x.copy()

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        low, high = ctx.min, ctx.max
        if low is None:
            inside = a <= high
        elif high is None:
            inside = a >= low
        else:
            inside = (a >= low) & (a <= high)
        return (grad * inside, None, None)


class ClampTensor(Op):
    """``clamp(x, min, max)`` with tensor bounds: the gradient goes to whichever of x,
    min and max was picked."""

    node_name = "ClampBackward0"
    array_backward = True
    saved_names = ("self", "min", "max")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, min, max):
        select_edges(ctx, (0, 1, 2))  # torch's edges: input, min, max (None ones too)
        ctx.save_for_backward(a, min, max)
        xp = a._xp
        x = a._array
        try:
            if min is not None:
                x = xp.maximum(x, min._array if hasattr(min, "_array") else min)
            if max is not None:
                x = xp.minimum(x, max._array if hasattr(max, "_array") else max)
        except ValueError:
            bound = min if min is not None and hasattr(min, "_array") else max
            raise broadcast_error("clamp", a, bound) from None
        return x if x is not a._array else x.copy()

    @staticmethod
    def backward(ctx, grad):
        a, low, high = ctx.saved_tensors
        needs = ctx.needs_input_grad
        above_low = a >= low if low is not None else None
        below_high = a <= high if high is not None else None
        if above_low is None:
            inside = below_high
        elif below_high is None:
            inside = above_low
        else:
            inside = above_low & below_high
        grad_low = grad_high = None
        if low is not None and needs[1]:
            picked_low = ~above_low if below_high is None else (~above_low) & (
                low <= high)
            grad_low = sum_to(grad * picked_low, low.shape)
        if high is not None and len(needs) > 2 and needs[2]:
            picked_high = ~below_high if low is None else (~below_high) | (low > high)
            grad_high = sum_to(grad * picked_high, high.shape)
        return (sum_to(grad * inside, a.shape) if needs[0] else None), grad_low, grad_high


def _clamp_to_tensor(ctx, name: str, a, bound, pick):
    """The forward of clamp_min/clamp_max with a tensor bound: ``pick`` (maximum or
    minimum) of x and the bound, broadcast."""
    ctx.save_for_backward(a, bound)
    try:
        return pick(a._array, bound._array)
    except ValueError:
        raise broadcast_error(name, a, bound) from None


def _clamp_to_tensor_grads(ctx, grad, keeps):
    """The gradient goes to x where ``keeps(x, bound)`` (x is on the right side of the
    bound), else to the bound."""
    a, bound = ctx.saved_tensors
    needs = ctx.needs_input_grad
    kept = keeps(a, bound)
    return (sum_to(grad * kept, a.shape) if needs[0] else None,
            sum_to(grad * ~kept, bound.shape) if needs[1] else None)


class ClampMinTensor(Op):
    """``clamp_min(x, tensor)``: the gradient goes to x where x >= min, else to min."""

    node_name = "ClampMinBackward1"
    array_backward = True
    saved_names = ("self", "min")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, min):
        return _clamp_to_tensor(ctx, "clamp_min", a, min, a._xp.maximum)

    @staticmethod
    def backward(ctx, grad):
        return _clamp_to_tensor_grads(ctx, grad, lambda x, low: x >= low)


class ClampMaxTensor(Op):
    """``clamp_max(x, tensor)``: the gradient goes to x where x <= max, else to max."""

    node_name = "ClampMaxBackward1"
    array_backward = True
    saved_names = ("self", "max")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, max):
        return _clamp_to_tensor(ctx, "clamp_max", a, max, a._xp.minimum)

    @staticmethod
    def backward(ctx, grad):
        return _clamp_to_tensor_grads(ctx, grad, lambda x, high: x <= high)


def clamp_op(min, max) -> type:
    """The op torch records for clamp with these bounds: ClampBackward0 when either is a
    tensor, ClampBackward1 for numbers (whether one or both are given)."""
    return ClampTensor if hasattr(min, "_array") or hasattr(max, "_array") else Clamp


def _bound(a, value):
    if hasattr(value, "_array"):
        return value._array
    return a._array.dtype.type(value) if a._array.dtype.kind == "f" else value


def clamp(a, min=None, max=None):
    if min is None and max is None:
        from ..errors import InvalidValueError

        raise InvalidValueError(
            f"torch.clamp: At least one of 'min' or 'max' must not be None "
            f"({a._describe()}). Hint: pass min=, max= or both.")
    return clamp_op(min, max).apply(a, min, max)


class Maximum(Op):
    node_name = "MaximumBackward0"
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them
    _pick = "maximum"

    @staticmethod
    @iterates
    def forward(ctx, a, b):
        x, y = operands(a, b)
        ctx.save_for_backward(a, b)
        try:
            return getattr(a._xp, ctx._function._pick)(x, y)
        except ValueError:
            raise broadcast_error(ctx._function._pick, a, b) from None

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        wins = (a > b) if ctx._function._pick == "maximum" else (a < b)
        ties = (a == b)
        share_a = wins + ties * 0.5
        share_b = (1 - share_a)
        return (_math.sum_to(grad * share_a, a.shape) if needs[0] else None,
                _math.sum_to(grad * share_b, b.shape) if needs[1] else None)


class Minimum(Maximum):
    node_name = "MinimumBackward0"
    _pick = "minimum"


class Softmax(Op):
    node_name = "SoftmaxBackward0"
    array_backward = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them
    saves_output = True

    @staticmethod
    def forward(ctx, a, dim):
        x = row_major(_float(a))  # torch's softmax works on (and gives) a contiguous copy
        axis = wrap_dim(dim, x.ndim, a)
        ctx.axis, ctx._dim = axis, dim  # _dim as given: grad_fn._saved_dim shows it
        xp = a._xp
        if x.size == 0:  # nothing to normalize (and max of nothing has no identity)
            return x.copy()
        with _quiet():  # a row of infs is nan in torch, with no warning
            shifted = x - x.max(axis=axis, keepdims=True)
            e = xp.exp(shifted)
            return e / e.sum(axis=axis, keepdims=True)

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        if grad.__class__ is _math.Tensor:  # torch's SoftmaxBackwardDataBackward0
            return (SoftmaxBackwardData.apply(grad, result, ctx.axis, ctx._dim), None)
        inner = _math.sum_keepdim(grad * result, ctx.axis)
        return (result * (grad - inner), None)


class SafeSoftmax(Softmax):
    """torch's ``_safe_softmax`` (scaled_dot_product_attention's math path): a softmax whose
    rows of nothing but -inf give zeros, not NaN; softmax's backward."""

    node_name = "SafeSoftmaxBackward0"

    @staticmethod
    def forward(ctx, a, dim):
        result = Softmax.forward(ctx, a, dim)
        x = a._array
        if x.size:
            empty = a._xp.isneginf(x).all(axis=ctx.axis, keepdims=True)
            if empty.any():
                result = a._xp.where(empty, result.dtype.type(0), result)
        return result


class LogSoftmax(Op):
    node_name = "LogSoftmaxBackward0"
    array_backward = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them
    saves_output = True

    @staticmethod
    def forward(ctx, a, dim):
        x = row_major(_float(a))  # torch's softmax works on (and gives) a contiguous copy
        axis = wrap_dim(dim, x.ndim, a)
        ctx.axis, ctx._dim = axis, dim  # _dim as given: grad_fn._saved_dim shows it
        xp = a._xp
        if x.size == 0:
            return x.copy()
        with _quiet():  # a row of -infs is nan in torch, with no warning
            shifted = x - x.max(axis=axis, keepdims=True)
            return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        if grad.__class__ is _math.Tensor:  # torch's LogSoftmaxBackwardDataBackward0
            return (LogSoftmaxBackwardData.apply(grad, result, ctx.axis, ctx._dim), None)
        return (grad - _math.exp(result) * _math.sum_keepdim(grad, ctx.axis), None)


class SoftmaxBackwardData(Op):
    """softmax's backward ``output * (grad - sum(grad * output))`` as a node (create_graph),
    as torch records it (_softmax_backward_data): the same map of the incoming gradient,
    and ``gg * (grad - sum(grad * output)) - sum(gg * output) * grad`` for the output."""

    node_name = "SoftmaxBackwardDataBackward0"
    saved_names = ("grad_output", "output")  # as PyTorch names them; dim below
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, grad, output, axis, dim):
        ctx.save_for_backward(grad, output)
        ctx.axis, ctx._dim = axis, dim
        g, y = grad._array, output._array
        return y * (g - (g * y).sum(axis=axis, keepdims=True))

    @staticmethod
    def backward(ctx, grad_grad):
        grad, output = ctx.saved_tensors
        needs = ctx.needs_input_grad
        axis = ctx.axis
        grad_of_grad = _math.apply(SoftmaxBackwardData, grad_grad, output, axis, ctx._dim) \
            if needs[0] else None
        grad_of_output = None
        if needs[1]:  # torch's softmax_double_backward, as it writes it
            grad_of_output = grad * grad_grad - \
                _math.sum_keepdim(output * grad, axis) * grad_grad - \
                grad * _math.sum_keepdim(output * grad_grad, axis)
        return grad_of_grad, grad_of_output, None, None


class LogSoftmaxBackwardData(Op):
    """log_softmax's backward ``grad - exp(output) * sum(grad)`` as a node (create_graph),
    as torch records it: ``gg - sum(gg * exp(output))`` for the incoming gradient, and
    ``-sum(grad) * exp(output) * gg`` for the output."""

    node_name = "LogSoftmaxBackwardDataBackward0"
    saved_names = ("grad_output", "output")  # as PyTorch names them; dim below
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, grad, output, axis, dim):
        ctx.save_for_backward(grad, output)
        ctx.axis, ctx._dim = axis, dim
        g = grad._array
        return g - output._xp.exp(output._array) * g.sum(axis=axis, keepdims=True)

    @staticmethod
    def backward(ctx, grad_grad):
        grad, output = ctx.saved_tensors
        needs = ctx.needs_input_grad
        axis = ctx.axis
        exp = _math.exp(output)
        grad_of_grad = grad_grad - _math.sum_keepdim(grad_grad * exp, axis) \
            if needs[0] else None
        grad_of_output = -_math.sum_keepdim(grad, axis) * exp * grad_grad if needs[1] else None
        return grad_of_grad, grad_of_output, None, None


for _op in (Softmax, SafeSoftmax, LogSoftmax, SoftmaxBackwardData, LogSoftmaxBackwardData):
    show_saved(_op, "dim", lambda node: as_torch_int(node._dim))


def softmax(a, dim=None, dtype=None):
    if dtype is not None:
        a = a.to(dtype)
    return Softmax.apply(a, _default_dim(a, dim))


def log_softmax(a, dim=None, dtype=None):
    if dtype is not None:
        a = a.to(dtype)
    return LogSoftmax.apply(a, _default_dim(a, dim))


def _default_dim(a, dim):
    if dim is not None:
        return dim
    # torch's legacy implicit choice, with its warning's advice baked into the error
    raise TypeError("softmax(): missing the 'dim' argument. Hint: pass dim=-1 for the last "
                    "dimension.")


def exp(a):
    return Exp.apply(a)


def silu(a):
    return Silu.apply(a)


def log(a):
    return Log.apply(a)


def sin(a):
    return Sin.apply(a)


def cos(a):
    return Cos.apply(a)


def sign(a):
    from ..tensor import Tensor

    return Tensor._wrap(a._xp.sign(a._array), False)


class _quiet(quiet):
    """``with _quiet(xp):`` NumPy's floating-point warnings off for the block: torch gives
    inf/nan without a word (autograd/quiet.py). ``xp`` is ignored: the state is NumPy's,
    and CuPy never warns."""

    __slots__ = ()

    def __init__(self, xp=None) -> None:
        pass
