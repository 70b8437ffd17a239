"""Elementwise functions of two or three tensors beyond arith.py's: atan2, fmod, remainder,
floor division, hypot, lerp, addcmul/addcdiv, xlogy, logaddexp, copysign, fmax/fmin.

Arguments broadcast and promote as in torch (``operands``); each gradient is summed back
to its input's shape (``sum_to``). Two ops torch has no derivative for (``floor_divide``,
``heaviside``) record a node whose backward raises torch's error, so a graph through them
fails the way it fails in torch instead of silently getting no gradient.
"""

from __future__ import annotations

from .. import _dtype
from .._layout import iterates
from ..autograd.function import Op
from ..autograd.node import _ONE_EDGE, _TUPLE_EDGES  # (one edge: a number operand)
from ..autograd.quiet import silenced
from ..errors import (
    ArgumentTypeError,
    AutogradError,
    DTypeError,
    InvalidValueError,
    UnsupportedDTypeError,
)
from ..tensor import Tensor
from . import _math
from ._edges import number_edge
from ._math import sum_to
from ._operands import broadcast_error, operands
from .unary import _quiet

_LN2 = 0.6931471805599453


def _shape(value) -> tuple:
    """A Tensor's or an array's shape; () for a number."""
    if isinstance(value, Tensor):
        return value._array.shape  # a plain tuple (see arith._shape)
    return getattr(value, "shape", ())


def _pair(op_name: str, a, b):
    """Both operands promoted; a broadcast error that names the tensors."""
    x, y = operands(a, b)
    try:
        (a if isinstance(a, Tensor) else b)._xp.broadcast_shapes(
            getattr(x, "shape", ()), getattr(y, "shape", ()))
    except ValueError:
        raise broadcast_error(op_name, a, b) from None
    return x, y


def _float_pair(op_name: str, a, b):
    x, y = _pair(op_name, a, b)
    default = _dtype.default_float.numpy
    if getattr(x, "dtype", None) is not None and x.dtype.kind != "f":
        x = x.astype(default)
    if getattr(y, "dtype", None) is not None and y.dtype.kind != "f":
        y = y.astype(default)
    return x, y


def _check_integer_divisor(op_name: str, divisor, tensor) -> None:
    """Integer division by zero: torch raises (NumPy would warn and give 0)."""
    kind = getattr(divisor, "dtype", None)
    if kind is None:
        if isinstance(divisor, int) and divisor == 0:
            raise ZeroDivisionRuntimeError(op_name, tensor)
        return
    if divisor.dtype.kind in "iub" and not divisor.all():
        raise ZeroDivisionRuntimeError(op_name, tensor)


class ZeroDivisionRuntimeError(InvalidValueError):
    """torch's "ZeroDivisionError" (a RuntimeError) for integer division by zero."""

    def __init__(self, op_name: str, tensor) -> None:
        super().__init__(
            f"ZeroDivisionError ({op_name}: integer division by zero with "
            f"{tensor._describe()}). Hint: make the divisor nonzero, or use floating point "
            "tensors (.float()) to get inf/nan instead.")


class Atan2(Op):
    node_name = "Atan2Backward0"
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @iterates
    def forward(ctx, a, b):
        x, y = _float_pair("atan2", a, b)
        ctx.save_for_backward(a, b)
        return a._xp.arctan2(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        denominator = a * a + b * b
        # torch's atan2_backward: 0 at the origin, not 0 * inf = nan
        scale = _math.where(denominator == 0, 0.0, grad / denominator)
        return (_math.sum_to(scale * b, a.shape) if needs[0] else None,
                _math.sum_to(-scale * a, b.shape) if needs[1] else None)


class FmodScalar(Op):
    """``fmod(tensor, number)``: the remainder with the dividend's sign (C's fmod). Of an
    inference tensor, torch wraps the number: FmodBackward1 (autograd/inference.py)."""

    node_name = "FmodBackward0"
    array_backward = True

    @staticmethod
    @iterates
    def forward(ctx, a, other):
        x, y = operands(a, other)
        _check_integer_divisor("fmod", y, a)
        with _quiet(a._xp):
            return a._xp.fmod(x, y)

    @staticmethod
    def backward(ctx, grad):
        return (grad, None)


class Fmod(Op):
    node_name = "FmodBackward1"
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @iterates
    def forward(ctx, a, b):
        x, y = _pair("fmod", a, b)
        _check_integer_divisor("fmod", y, a)
        _save_for_divisor_grad(ctx, a, b)
        with _quiet(a._xp):
            return a._xp.fmod(x, y)

    @staticmethod
    def backward(ctx, grad):
        # Each gradient as broadcast: the engine sums it to its input's shape.
        needs = ctx.needs_input_grad
        grad_b = None
        if needs[1]:
            a, b = ctx.saved_tensors
            grad_b = -grad * _math.trunc(a / b)
        return (grad if needs[0] else None), grad_b


def _save_for_divisor_grad(ctx, a, b) -> None:
    """fmod's and remainder's saving, as torch's: both operands, only when the divisor's
    gradient (the only one that reads them) is needed. A number operand (torch's wrapped
    number, when it records these for an inference tensor: autograd/inference.py) gets
    its ``(None, 0)`` edge."""
    needs = ctx.needs_input_grad
    if not needs:
        return
    if ctx._next1 is _ONE_EDGE or (ctx._next1 is _TUPLE_EDGES and len(ctx._next_nodes) == 1):
        number_edge(ctx, 1 if isinstance(a, Tensor) else 0)
        needs = ctx.needs_input_grad
    if needs[1]:
        ctx.save_for_backward(a, b)


class RemainderScalar(Op):
    """``remainder(tensor, number)``: Python's ``%`` (the divisor's sign). Of an inference
    tensor, torch wraps the number: RemainderBackward1 (autograd/inference.py)."""

    node_name = "RemainderBackward0"
    array_backward = True

    @staticmethod
    @iterates
    def forward(ctx, a, other):
        x, y = operands(a, other)
        _check_integer_divisor("remainder", y, a)
        with _quiet(a._xp):
            return a._xp.remainder(x, y)

    @staticmethod
    def backward(ctx, grad):
        return (grad, None)


class Remainder(Op):
    node_name = "RemainderBackward1"
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @iterates
    def forward(ctx, a, b):
        x, y = _pair("remainder", a, b)
        _check_integer_divisor("remainder", y, b if isinstance(b, Tensor) else a)
        _save_for_divisor_grad(ctx, a, b)
        with _quiet(a._xp if isinstance(a, Tensor) else b._xp):
            return (a if isinstance(a, Tensor) else b)._xp.remainder(x, y)

    @staticmethod
    def backward(ctx, grad):
        # Each gradient as broadcast: the engine sums it to its input's shape.
        needs = ctx.needs_input_grad
        grad_b = None
        if needs[1]:
            a, b = ctx.saved_tensors
            grad_b = -grad * _math.floor(a / b)
        return (grad if needs[0] else None), grad_b


class _NotDifferentiable(Op):
    """An op torch defines no derivative for: its node raises torch's error in backward."""

    node_name = "torch::autograd::NotImplemented"
    array_backward = True
    _aten_name = ""

    @staticmethod
    def backward(ctx, grad):
        raise AutogradError(
            f"derivative for aten::{ctx._function._aten_name} is not implemented. Hint: "
            "torch has no gradient for it either; detach() its inputs, or use a "
            "differentiable formula.")


class FloorDivide(_NotDifferentiable):
    """``a // b``: division rounded toward negative infinity (torch's floor_divide)."""

    node_name = "torch::autograd::NotImplemented"
    _aten_name = "floor_divide"

    @staticmethod
    @iterates
    def forward(ctx, a, b):
        x, y = _pair("floor_divide", a, b)
        tensor = a if isinstance(a, Tensor) else b
        _check_integer_divisor("floor_divide", y, tensor)
        with _quiet(tensor._xp):
            return tensor._xp.floor_divide(x, y)


class Heaviside(_NotDifferentiable):
    """``heaviside(input, values)``: 0 below zero, 1 above, ``values`` at zero."""

    node_name = "torch::autograd::NotImplemented"
    _aten_name = "heaviside"

    @staticmethod
    @iterates
    def forward(ctx, a, values):
        if a._array.dtype != values._array.dtype:
            raise DTypeError(
                f"heaviside is not yet implemented for tensors with different dtypes "
                f"({a._describe()} and {values._describe()}). Hint: convert values with "
                f".to({a.dtype!r}).")
        x, y = _pair("heaviside", a, values)
        xp = a._xp
        return xp.where(x == 0, y, (x > 0).astype(x.dtype))


class RemainderScalarSelf(_NotDifferentiable):
    """``number % tensor``: torch defines no derivative for a number as dividend. Of an
    inference tensor, torch wraps the number: RemainderBackward1, which refuses to save it
    (autograd/inference.py)."""

    node_name = "torch::autograd::NotImplemented"
    _aten_name = "remainder"

    @staticmethod
    @iterates
    def forward(ctx, a, b):
        x, y = operands(a, b)
        _check_integer_divisor("remainder", y, b)
        with _quiet(b._xp):
            return b._xp.remainder(x, y)


class DivRounding(Op):
    """``div(a, b, rounding_mode="trunc"|"floor")``: piecewise constant, zero gradient."""

    node_name = "DivBackward2"
    array_backward = True
    # as torch keeps them (its formula, grad * 0, reads neither): the divisor always, the
    # dividend only if the divisor needs a gradient, as for a true division
    saved_names = ("self", "other", "rounding_mode=rounding_mode")

    @staticmethod
    @iterates
    def forward(ctx, a, b, rounding_mode):
        x, y = _pair("div", a, b)
        # tensor / number: torch's 2nd edge (one edge)
        edge = ctx._next1  # (read once: this runs on every recorded op)
        if edge is _ONE_EDGE or edge is _TUPLE_EDGES and ctx.needs_input_grad and \
                len(ctx._next_nodes) == 1:
            number_edge(ctx, 1 if isinstance(a, Tensor) else 0)
        tensor = a if isinstance(a, Tensor) else b
        needs = ctx.needs_input_grad
        if needs:
            ctx.save_for_backward(a if needs[1] else None, b)
            ctx.rounding_mode = rounding_mode
        _check_integer_divisor("div", y, tensor)
        xp = tensor._xp
        with _quiet(xp):
            if getattr(x, "dtype", None) is not None and x.dtype.kind != "f" and not (
                    isinstance(y, float) or getattr(y, "dtype", x.dtype).kind == "f"):
                quotient = xp.floor_divide(x, y)
                if rounding_mode == "trunc":  # floor and trunc differ for negative quotients
                    remainder = xp.remainder(x, y)
                    quotient = quotient + ((remainder != 0) & ((x < 0) != (y < 0)))
                return quotient
            quotient = x / y
            return xp.trunc(quotient) if rounding_mode == "trunc" else xp.floor(quotient)

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - raises if one changed in place, as in torch
        meta = ctx._input_meta
        needs = ctx.needs_input_grad
        grads = [None, None, None]
        slot = 0
        for position in range(2):
            if position in ctx._arg_slots:
                if needs[position]:
                    grads[position] = sum_to(grad * 0, meta[slot][0])
                slot += 1
        return tuple(grads)


class Hypot(Op):
    node_name = "HypotBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("self", "other", "result")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @iterates
    def forward(ctx, a, b):
        x, y = _pair("hypot", a, b)
        if x.dtype.kind != "f":
            from .pointwise import _torch_type_name

            raise UnsupportedDTypeError(f"\"hypot_cpu\" not implemented for "
                                        f"'{_torch_type_name(x.dtype)}' ({a._describe()}). "
                                        "Hint: convert it with .float() first.")
        ctx.save_for_backward(a, b)
        return a._xp.hypot(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b, result = ctx.saved_tensors
        needs = ctx.needs_input_grad
        # torch's formulas: grad * self / result, grad * other / result
        return (_math.sum_to(grad * a / result, a.shape) if needs[0] else None,
                _math.sum_to(grad * b / result, b.shape) if needs[1] else None)


def _same_dtype(op_name: str, names: tuple, *tensors) -> None:
    first = tensors[0]
    for name, tensor in zip(names[1:], tensors[1:]):
        if isinstance(tensor, Tensor) and tensor._array.dtype != first._array.dtype:
            raise DTypeError(
                f"expected dtype {_torch_name(first)} for `{name}` but got dtype "
                f"{_torch_name(tensor)} ({op_name}: {tensor._describe()}). Hint: convert it "
                f"with .to({first.dtype!r}).")


def _torch_name(tensor) -> str:
    return {"float32": "float", "float64": "double", "float16": "half", "int64": "long",
            "int32": "int"}.get(tensor.dtype.name, tensor.dtype.name)


class Lerp(Op):
    """``start + weight * (end - start)`` with a number as weight."""

    node_name = "LerpBackward0"
    array_backward = True
    saved_names = ("weight=weight",)  # as PyTorch names it

    @staticmethod
    @silenced
    @iterates
    def forward(ctx, start, end, weight):
        _same_dtype("lerp", ("self", "end"), start, end)
        x, y = _pair("lerp", start, end)
        ctx.weight = weight
        ctx.shapes = (x.shape, y.shape)
        return x + weight * (y - x)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        weight = ctx.weight
        return (_math.sum_to(grad * (1 - weight), ctx.shapes[0]) if needs[0] else None,
                _math.sum_to(grad * weight, ctx.shapes[1]) if needs[1] else None, None)


class LerpTensor(Op):
    node_name = "LerpBackward1"
    array_backward = True
    saved_names = ("self", "end", "weight")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    @iterates
    def forward(ctx, start, end, weight):
        _same_dtype("lerp", ("self", "end", "weight"), start, end, weight)
        x, y = _pair("lerp", start, end)
        w = weight._array
        # What torch keeps: weight always, start and end only for weight's gradient (the
        # slots are empty otherwise: grad_fn._saved_self is then None).
        needs = ctx.needs_input_grad  # (empty when nothing is recorded)
        for_weight = bool(needs) and needs[2]
        ctx.save_for_backward(start if for_weight else None, end if for_weight else None, weight)
        ctx.shapes = (x.shape, y.shape, w.shape)
        try:
            return x + w * (y - x)
        except ValueError:
            raise broadcast_error("lerp", start, weight) from None

    @staticmethod
    def backward(ctx, grad):
        start, end, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        shapes = ctx.shapes
        return (_math.sum_to(grad * _math.number_minus(1, weight), shapes[0])
                if needs[0] else None,
                _math.sum_to(grad * weight, shapes[1]) if needs[1] else None,
                _math.sum_to(grad * (end - start), shapes[2]) if needs[2] else None)


class Addcmul(Op):
    """``input + value * tensor1 * tensor2``."""

    node_name = "AddcmulBackward0"
    array_backward = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("tensor1", "tensor2", "value=value")

    @staticmethod
    @silenced
    @iterates
    def forward(ctx, a, t1, t2, value=1):
        x, y = _pair("addcmul", t1, t2)
        product = x * y
        ctx.save_for_backward(t1, t2)
        ctx.value = value
        try:
            return a._array + value * product
        except ValueError:
            raise broadcast_error("addcmul", a, t1) from None

    @staticmethod
    def backward(ctx, grad):
        t1, t2 = ctx.saved_tensors
        needs = ctx.needs_input_grad
        value = ctx.value
        shape_a = ctx._input_meta[0][0]
        return (_math.sum_to(grad, shape_a) if needs[0] else None,
                # torch's formulas: grad * (tensor2 * value), grad * (tensor1 * value)
                _math.sum_to(grad * _math.scaled(t2, value), t1.shape) if needs[1] else None,
                _math.sum_to(grad * _math.scaled(t1, value), t2.shape) if needs[2] else None,
                None)


class Addcdiv(Op):
    """``input + value * tensor1 / tensor2``."""

    node_name = "AddcdivBackward0"
    array_backward = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("tensor1", "tensor2", "value=value")

    @staticmethod
    @iterates
    def forward(ctx, a, t1, t2, value=1):
        x, y = _pair("addcdiv", t1, t2)
        if x.dtype.kind != "f" and y.dtype.kind != "f":
            raise DTypeError(
                f"Integer division with addcdiv is no longer supported, and in a future "
                f"release addcdiv will perform a true division of tensor1 and tensor2. "
                f"({t1._describe()} / {t2._describe()}). Hint: convert them with .float().")
        ctx.save_for_backward(t1, t2)
        ctx.value = value
        with _quiet(a._xp):
            try:
                return a._array + value * (x / y)
            except ValueError:
                raise broadcast_error("addcdiv", a, t1) from None

    @staticmethod
    def backward(ctx, grad):
        t1, t2 = ctx.saved_tensors
        needs = ctx.needs_input_grad
        value = ctx.value
        shape_a = ctx._input_meta[0][0]
        return (_math.sum_to(grad, shape_a) if needs[0] else None,
                # torch's formulas: grad * (value / tensor2),
                # -grad * (value * tensor1 / (tensor2 * tensor2))
                _math.sum_to(grad * _math.number_over(value, t2), t1.shape)
                if needs[1] else None,
                _math.sum_to(-grad * (_math.scaled(t1, value) / (t2 * t2)), t2.shape)
                if needs[2] else None, None)


def _xlogy_array(xp, x, y):
    with _quiet(xp):
        product = x * xp.log(y)
    # 0 * log(y) is 0 unless y is NaN (torch's rule)
    return xp.where((x == 0) & ~xp.isnan(y), xp.zeros_like(product), product)


class Xlogy(Op):
    """``x * log(y)``, 0 where x == 0 (unless y is NaN)."""

    node_name = "XlogyBackward0"
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @iterates
    def forward(ctx, a, b):
        x, y = _float_pair("xlogy", a, b)
        xp = (a if isinstance(a, Tensor) else b)._xp
        ctx.save_for_backward(a, b)
        return _xlogy_array(xp, x, xp.asarray(y, dtype=x.dtype if hasattr(x, "dtype")
                                              else None))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_a = grad_b = None
        if needs[0]:
            nonzero = _math.like_dtype(a != 0, grad)
            grad_a = sum_to(grad * _math.apply(Xlogy, nonzero, b), _shape(a))
        if needs[1]:
            grad_b = sum_to(grad * a / b, _shape(b))
        return grad_a, grad_b


class XlogyScalarSelf(Xlogy):
    node_name = "XlogyBackward1"
    inference_overload = Xlogy  # (torch wraps the number: autograd/inference.py)
    saved_names = ("self#", "other")  # self: torch's saved Scalar


class XlogyScalarOther(Xlogy):
    node_name = "XlogyBackward2"
    inference_overload = Xlogy  # (torch wraps the number: autograd/inference.py)
    saved_names = ("self", "other#")  # other: torch's saved Scalar


class Logaddexp(Op):
    node_name = "LogaddexpBackward0"
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    @iterates
    def forward(ctx, a, b):
        x, y = _pair("logaddexp", a, b)
        _check_float("logaddexp", x, a)
        ctx.save_for_backward(a, b)
        return a._xp.logaddexp(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        # torch's formulas: grad / (1 + exp(other - self)), and the same swapped
        return (_math.sum_to(grad / _math.shifted(_math.exp(b - a), 1), a.shape)
                if needs[0] else None,
                _math.sum_to(grad / _math.shifted(_math.exp(a - b), 1), b.shape)
                if needs[1] else None)


class Logaddexp2(Op):
    node_name = "Logaddexp2Backward0"
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    @iterates
    def forward(ctx, a, b):
        x, y = _pair("logaddexp2", a, b)
        _check_float("logaddexp2", x, a)
        ctx.save_for_backward(a, b)
        return a._xp.logaddexp2(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        # torch's formulas: grad / (1 + pow(2, other - self)), and the same swapped
        return (_math.sum_to(grad / _math.shifted(2 ** (b - a), 1), a.shape)
                if needs[0] else None,
                _math.sum_to(grad / _math.shifted(2 ** (a - b), 1), b.shape)
                if needs[1] else None)


def _check_float(op_name: str, array, tensor) -> None:
    if array.dtype.kind != "f":
        from .pointwise import _torch_type_name

        raise UnsupportedDTypeError(f"\"{op_name}_cpu\" not implemented for "
                         f"'{_torch_type_name(array.dtype)}' ({tensor._describe()}). Hint: "
                         "convert it with .float() first.")


class Copysign(Op):
    """``|a|`` with the sign of ``b``; the gradient flows to ``a`` only. The node keeps
    the input and the result, as torch's (its formula: ``grad * result / self``, 0 where
    self is 0)."""

    node_name = "CopysignBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("self", "result")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @iterates
    def forward(ctx, a, b):
        x, y = _float_pair("copysign", a, b)
        ctx.save_for_backward(a)
        ctx.shape_b = _shape(b)
        return a._xp.copysign(x, y)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        a, result = ctx.saved_tensors
        xp = _math.xp(grad)
        # result / self: +1 kept, -1 flipped, 0 at 0 (read off the signs: no 0/0)
        ratio = xp.sign(_math.array_of(result)) * xp.sign(_math.array_of(a))
        flip = _math.constant(grad, ratio.astype(_math.numpy_dtype(grad), copy=False))
        grad_a = sum_to(grad * flip, a.shape) if needs[0] else None
        grad_b = None
        if len(needs) > 1 and needs[1]:
            grad_b = sum_to(grad * 0, ctx.shape_b)
        return grad_a, grad_b


class CopysignScalar(Copysign):
    node_name = "CopysignBackward1"


class Fmax(Op):
    """Elementwise max that ignores NaN (NaN only where both are NaN). The node keeps both
    inputs, as torch's, whose formula sends the gradient to self where ``self >= other``
    (``<=`` for fmin) or other is NaN, to other elsewhere."""

    node_name = "FmaxBackward0"
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them
    _pick = "fmax"

    @staticmethod
    @iterates
    def forward(ctx, a, b):
        x, y = _pair(ctx._function._pick, a, b)
        ctx.save_for_backward(a, b)
        ctx.shapes = (_shape(a), _shape(b))
        return getattr(a._xp, ctx._function._pick)(x, y)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        a, b = ctx.saved_tensors
        x, y = _math.array_of(a), _math.array_of(b)
        picked = (x >= y) if ctx._function._pick == "fmax" else (x <= y)
        from_a = _math.constant(grad, picked | _math.xp(grad).isnan(y))
        return (sum_to(_math.where(from_a, grad, 0.0), ctx.shapes[0]) if needs[0] else None,
                sum_to(_math.where(from_a, 0.0, grad), ctx.shapes[1]) if needs[1] else None)


class Fmin(Fmax):
    node_name = "FminBackward0"
    _pick = "fmin"


class Ldexp(Op):
    """``input * 2 ** other``."""

    node_name = "LdexpBackward0"
    array_backward = True
    saves_output = True
    # as torch: other only for the input's gradient; the result for other's
    saved_names = ("other", "result")

    @staticmethod
    @silenced
    @iterates
    def forward(ctx, a, other):
        x, y = _float_pair("ldexp", a, other)
        needs = ctx.needs_input_grad
        if needs:
            ctx.save_for_backward(other if needs[0] else None)
        return x * a._xp.exp2(y)

    @staticmethod
    def backward(ctx, grad):
        other, result = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_a = grad_other = None
        if needs[0]:
            power = _math.exp2(other) if hasattr(other, "shape") else 2.0 ** other
            grad_a = sum_to(grad * power, ctx._input_meta[0][0])
        if len(needs) > 1 and needs[1]:
            grad_other = sum_to(grad * result * _LN2, ctx._input_meta[1][0])
        return grad_a, grad_other


def check_tensor_argument(op_name: str, name: str, position: int, value, tensor=None) -> None:
    """torch's TypeError for a number where its signature takes only a Tensor."""
    if not isinstance(value, Tensor):
        beside = f" (beside {tensor._describe()})" if tensor is not None else ""
        raise ArgumentTypeError(
            f"{op_name}(): argument '{name}' (position {position}) must be Tensor, not "
            f"{type(value).__name__}{beside}. Hint: wrap it with tracegrad.tensor(...).")



# torch computes these Scalar overloads by wrapping the number and calling the Tensor
# overload: of an inference tensor alone, that one records (autograd/inference.py).
FmodScalar.inference_overload = Fmod
RemainderScalar.inference_overload = RemainderScalarSelf.inference_overload = Remainder
