"""Arithmetic: + - * / ** and negation. Each op's forward and backward side by side.

Backward is written with tensor ops, so with create_graph=True it records a graph of its
own (second derivatives). ``sum_to`` undoes broadcasting in one place.
"""

from __future__ import annotations

import operator

import numpy as np

from .._layout import iterates, iterator_layout
from ..autograd.function import Op
from ..autograd.node import _ONE_EDGE, _TUPLE_EDGES  # (one edge: a number operand)
from ..autograd.quiet import FLOAT_ERRORS, restore, retry, silence, silenced
from ..errors import DTypeError
from ..tensor import Tensor
from . import _math
from ._edges import number_edge
from ._math import sum_to
from ._operands import broadcast_error, operands, true_divide_dtype
from .unary import _quiet

_BOOL = np.dtype(bool)


def _is_bool(value) -> bool:
    return value.__class__ is bool or getattr(value, "dtype", None) is _BOOL


def _bool_subtraction_error(a, b) -> DTypeError:
    described = " and ".join(t._describe() for t in (a, b) if isinstance(t, Tensor))
    if _is_bool(a._array if isinstance(a, Tensor) else a) and _is_bool(
            b._array if isinstance(b, Tensor) else b):
        return DTypeError(
            f"Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
            f"`^` or `logical_xor()` operator instead. ({described}) Hint: convert with "
            ".long() or .float() to subtract them as numbers.")
    return DTypeError(
        f"Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
        f"trying to invert a mask, use the `~` or `logical_not()` operator instead. "
        f"({described}) Hint: convert with .long() or .float() to subtract it as numbers.")


class Add(Op):
    """``a + alpha * b``: alpha is part of the node, as in torch (one AddBackward0)."""

    node_name = "AddBackward0"
    elementwise = True  # (see Op)
    array_backward = True
    saved_names = ("alpha=alpha",)  # grad_fn._saved_alpha, as PyTorch names it

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if a.__class__ is Tensor and b.__class__ is Tensor and \
                a._array.dtype is b._array.dtype and a._array.__class__ is b._array.__class__:
            x, y = a._array, b._array  # operands' answer for two alike tensors, inline
        else:
            x, y = operands(a, b)
        # a recorded tensor + number: torch's 2nd edge (one edge)
        edge = ctx._next1  # (read once: this runs on every recorded op)
        if edge is _ONE_EDGE or edge is _TUPLE_EDGES and ctx.needs_input_grad and \
                len(ctx._next_nodes) == 1:
            number_edge(ctx, 1 if isinstance(a, Tensor) else 0)
        if alpha != 1:
            ctx.alpha = alpha
            y = y * alpha
        try:
            result = x + y
        except ValueError:
            raise broadcast_error("add", a, b) from None
        except FLOAT_ERRORS:  # inf - inf, with warnings as errors: torch is silent
            return retry(operator.add, x, y)
        # torch's layout for 2+ dims (a 1-d result is dense either way: one read per op)
        return result if result.ndim < 2 else iterator_layout(result, x, y)

    @staticmethod
    def backward(ctx, grad):
        # Each gradient as broadcast: the engine sums it to its input's shape.
        needs = ctx.needs_input_grad
        return (grad if needs[0] else None,
                (grad if ctx.alpha == 1 else grad * ctx.alpha) if needs[1] else None)


class Sub(Op):
    """``a - alpha * b``: alpha is part of the node, as in torch (one SubBackward0)."""

    node_name = "SubBackward0"
    elementwise = True  # (see Op)
    array_backward = True
    saved_names = ("alpha=alpha",)  # grad_fn._saved_alpha, as PyTorch names it

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        # a recorded tensor - number: torch's 2nd edge (one edge)
        edge = ctx._next1  # (read once: this runs on every recorded op)
        if edge is _ONE_EDGE or edge is _TUPLE_EDGES and ctx.needs_input_grad and \
                len(ctx._next_nodes) == 1:
            number_edge(ctx, 1 if isinstance(a, Tensor) else 0)
        if alpha != 1:
            ctx.alpha = alpha
        return _subtract(ctx, a, b, alpha)

    @staticmethod
    def backward(ctx, grad):
        # Each gradient as broadcast: the engine sums it to its input's shape.
        needs = ctx.needs_input_grad
        alpha = ctx.alpha
        return (grad if needs[0] else None,
                (-grad if alpha == 1 else grad * -alpha) if needs[1] else None)


class RSub(Sub):
    """``number - alpha * tensor``: one edge, the tensor's (rsub.Scalar in torch; alpha is
    part of the node). Of an inference tensor alone, torch computes it as
    ``sub(wrapped number, tensor, alpha)``: SubBackward0 (autograd/inference.py)."""

    node_name = "RsubBackward1"
    inference_overload = Sub

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if alpha != 1:
            ctx.alpha = alpha
        return _subtract(ctx, a, b, alpha)


class RSubTensor(Op):
    """``rsub(input, other, alpha)`` of two tensors: ``other - alpha * input``, the edges in
    argument order, input's first (rsub.Tensor in torch; ``t - x`` is ``t.sub(x)``)."""

    node_name = "RsubBackward0"
    array_backward = True
    saved_names = ("alpha=alpha",)  # grad_fn._saved_alpha, as PyTorch names it

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if alpha != 1:
            ctx.alpha = alpha
        return _subtract(ctx, b, a, alpha)

    @staticmethod
    def backward(ctx, grad):
        # Each gradient as broadcast: the engine sums it to its input's shape.
        needs = ctx.needs_input_grad
        alpha = ctx.alpha
        return ((-grad if alpha == 1 else grad * -alpha) if needs[0] else None,
                grad if needs[1] else None)


def _subtract(ctx, a, b, alpha=1):
    if a.__class__ is Tensor and b.__class__ is Tensor and \
            a._array.dtype is b._array.dtype and a._array.__class__ is b._array.__class__:
        x, y = a._array, b._array  # operands' answer for two alike tensors, inline
    else:
        x, y = operands(a, b)
    # identity, not ==: builtin dtypes are singletons, and this runs on every subtraction
    if getattr(x, "dtype", None) is _BOOL or getattr(y, "dtype", None) is _BOOL or \
            x.__class__ is bool or y.__class__ is bool:
        raise _bool_subtraction_error(a, b)
    try:
        result = x - y if alpha == 1 else x - y * alpha
    except ValueError:
        raise broadcast_error("sub", a, b) from None
    except FLOAT_ERRORS:  # overflow, with warnings as errors: torch is silent
        return retry(_subtract_scaled, x, y, alpha)
    return result if result.ndim < 2 else iterator_layout(result, x, y)  # (as Add's)


def _subtract_scaled(x, y, alpha):
    return x - y if alpha == 1 else x - y * alpha


# alpha is 1 on every node that was not given one: a class default, not a per-call write
Add._node_class.alpha = Sub._node_class.alpha = RSub._node_class.alpha = 1
RSubTensor._node_class.alpha = 1


class Mul(Op):
    node_name = "MulBackward0"
    elementwise = True  # (see Op)
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, b):
        if a.__class__ is Tensor and b.__class__ is Tensor and \
                a._array.dtype is b._array.dtype and a._array.__class__ is b._array.__class__:
            x, y = a._array, b._array  # operands' answer for two alike tensors, inline
        else:
            x, y = operands(a, b)
        # As PyTorch does: each side is saved only if the other side's gradient needs it
        # (needs_input_grad is empty when nothing is recorded). OpNode.save_for_backward's
        # one line, inline: a call less on every recorded product.
        needs = ctx.needs_input_grad
        if needs:
            ctx._to_save = (a if needs[1] else None, b if needs[0] else None)
            # tensor * number: torch's 2nd edge (one edge)
            edge = ctx._next1  # (read once: this runs on every recorded op)
            if edge is _ONE_EDGE or edge is _TUPLE_EDGES and ctx.needs_input_grad and \
                    len(ctx._next_nodes) == 1:
                number_edge(ctx, 1 if isinstance(a, Tensor) else 0)
        try:
            result = x * y
        except ValueError:
            raise broadcast_error("mul", a, b) from None
        except FLOAT_ERRORS:  # overflow, 0 * inf, with warnings as errors: torch is silent
            return retry(operator.mul, x, y)
        return result if result.ndim < 2 else iterator_layout(result, x, y)  # (as Add's)

    @staticmethod
    def backward(ctx, grad):
        # Each gradient as broadcast: the engine sums it to its input's shape.
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        return grad * b if needs[0] else None, grad * a if needs[1] else None


class MulScalar(Op):
    """torch's mul.Scalar (MulBackward1): what its own C++ writes as ``tensor * number`` --
    composite ops (trapezoid) and backward formulas under create_graph. (``x * 2`` from
    Python is mul.Tensor: ``Mul``, MulBackward0.) Use ``_math.scaled``."""

    node_name = "MulBackward1"
    array_backward = True
    saved_names = ("other=other",)  # the number, as given
    _operator = staticmethod(operator.mul)  # on arrays, and on the gradient:
    _formula = staticmethod(_math.scaled)

    @staticmethod
    def forward(ctx, a, other):
        ctx.other = other
        with _quiet(a._xp):
            return ctx._function._operator(a._array, other)

    @staticmethod
    def backward(ctx, grad):
        return ctx._function._formula(grad, ctx.other), None


class DivScalar(MulScalar):
    """torch's div.Scalar (DivBackward1), as its C++ writes ``tensor / number``. Use
    ``_math.divided``."""

    node_name = "DivBackward1"
    _operator = staticmethod(operator.truediv)
    _formula = staticmethod(_math.divided)


class AddScalar(Op):
    """torch's add.Scalar (AddBackward1), as its C++ formulas write ``tensor + number``.
    Use ``_math.shifted``."""

    node_name = "AddBackward1"
    array_backward = True

    @staticmethod
    def forward(ctx, a, other):
        return a._array + other

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class SubScalar(AddScalar):
    """torch's sub.Scalar (SubBackward1), as its C++ formulas write ``tensor - number``.
    Use ``_math.shifted`` with the number negated."""

    node_name = "SubBackward1"

    @staticmethod
    def forward(ctx, a, other):
        return a._array - other


class Div(Op):
    node_name = "DivBackward0"
    elementwise = True  # (see Op)
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, b):
        if a.__class__ is Tensor and b.__class__ is Tensor and \
                a._array.dtype is b._array.dtype and a._array.__class__ is b._array.__class__:
            x, y = a._array, b._array  # operands' answer for two alike tensors, inline
        else:
            x, y = operands(a, b)
        # As PyTorch does: the divisor is always kept, the dividend only for the
        # divisor's gradient (needs_input_grad is empty when nothing is recorded).
        needs = ctx.needs_input_grad
        if needs:
            ctx._to_save = (a if needs[-1] else None, b)  # (save_for_backward, inline)
            # tensor / number: torch's 2nd edge (one edge)
            edge = ctx._next1  # (read once: this runs on every recorded op)
            if edge is _ONE_EDGE or edge is _TUPLE_EDGES and ctx.needs_input_grad and \
                    len(ctx._next_nodes) == 1:
                number_edge(ctx, 1 if isinstance(a, Tensor) else 0)
        token = silence()  # x / 0 is inf (0 / 0 nan) in torch, with no warning
        try:
            result = x / y
        except ValueError:
            raise broadcast_error("div", a, b) from None
        finally:
            restore(token)
        result_dtype = true_divide_dtype(x, y)
        if result_dtype is not None:
            result = result.astype(result_dtype)
        return result if result.ndim < 2 else iterator_layout(result, x, y)  # (as Add's)

    @staticmethod
    def backward(ctx, grad):
        # Each gradient as broadcast: the engine sums it to its input's shape.
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        # torch's div_tensor_other_backward: -grad * ((self / other) / other)
        return (grad / b if needs[0] else None,
                -grad * ((a / b) / b) if needs[-1] else None)


class Neg(Op):
    node_name = "NegBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a):
        x = a._array
        if x.dtype is _BOOL:
            raise DTypeError(
                f"Negation, the `-` operator, on a bool tensor is not supported. If you are "
                f"trying to invert a mask, use the `~` or `logical_not()` operator instead. "
                f"(negating {a._describe()}) Hint: ~mask inverts it; -mask.long() negates "
                "it as integers.")
        return -x

    @staticmethod
    def backward(ctx, grad):
        return (-grad,)


class PowScalar(Op):
    """``tensor ** number``."""

    node_name = "PowBackward0"
    array_backward = True
    saved_names = ("self", "exponent=exponent")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a, exponent):
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        x = a._array
        if isinstance(exponent, float) and x.dtype.kind != "f":
            x = x.astype("float32")
        if exponent < 0 or exponent != int(exponent):
            with _quiet(a._xp):  # 0 ** -1 is inf, (-2) ** 1.5 nan, as in torch: no warning
                return x ** exponent
        return x ** exponent

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        exponent = ctx.exponent
        if exponent == 0:
            return (grad * 0, None)
        exponent = float(exponent)  # torch's pow_backward: the exponent as a double, and
        with _quiet(_math.xp(grad)):  # grad times the rest last (the node create_graph shows)
            return (grad * _math.scaled(a ** (exponent - 1), exponent), None)


class Pow(Op):
    """``tensor ** tensor`` and ``number ** tensor``."""

    node_name = "PowBackward1"
    elementwise = True  # (see Op)
    array_backward = True
    saved_names = ("self", "exponent", "result")  # grad_fn._saved_<name>, as PyTorch names them
    saves_output = True

    @staticmethod
    @iterates
    def forward(ctx, a, b):
        x, y = operands(a, b)
        ctx.save_for_backward(a, b)
        try:
            with _quiet(b._xp if isinstance(b, Tensor) else a._xp):
                return x ** y
        except ValueError:
            raise broadcast_error("pow", a, b) from None

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's formulas at 0, not NaN: d/da is 0 where b == 0 (a ** 0 is constant),
        # and d/db is 0 where a == 0 and b >= 0 (0 ** b is constant there). (inf * 0 in the
        # branch `where` drops is expected: the backward pass keeps NumPy quiet.)
        a, b, result = ctx.saved_tensors
        needs = ctx.needs_input_grad
        meta = ctx._input_meta  # (shape, dtype) per tensor argument: a first (if one), b last
        grad_a = grad_b = None
        # (grouped as torch's formulas are, so create_graph records torch's nodes)
        if needs[0] and len(meta) == 2:  # a is a tensor (not RPow's number)
            power = grad * (b * a ** _math.shifted(b, -1))
            grad_a = sum_to(_math.where(b == 0, 0.0, power), meta[0][0])
        if needs[-1]:
            base = a if len(meta) == 2 else _math.constant(grad, _base_array(result, a))
            grad_b = grad * _math.where((base == 0) & (b >= 0), 0.0, result * _math.log(base))
            grad_b = sum_to(grad_b, meta[-1][0])
        return grad_a, grad_b


class RPow(Pow):
    """``number ** tensor`` (PowBackward2 in torch). Of an inference tensor alone, torch
    computes it through ``pow(..., out=)`` and refuses (autograd/inference.py)."""

    node_name = "PowBackward2"
    inference_overload = "pow"
    saved_names = ("self#", "exponent", "result")  # self: torch's saved Scalar (the base)


def _base_array(result, value):
    """RPow's number base as an array of the result's dtype (its log is the gradient's)."""
    array = result._array if result.__class__ is Tensor else result
    return _math.xp(result).asarray(value, dtype=array.dtype)


class Fill(Op):
    """``full_like(input, value)``: what ``fill_(number)`` records (the old value gets no
    grad)."""

    node_name = "FillBackward2"
    array_backward = True
    writes_one_value = True  # may write into an expanded view (autograd/views.check_result)

    @staticmethod
    def forward(ctx, a, value):
        return a._xp.full_like(a._array, value)

    @staticmethod
    def backward(ctx, grad):
        return (grad * 0, None)


class FillTensor(Op):
    """``fill_(tensor)`` with a 0-dim tensor: the value's gradient is the sum."""

    node_name = "FillBackward3"
    array_backward = True

    @staticmethod
    def forward(ctx, a, value):
        return a._xp.full_like(a._array, value._array.reshape(()).astype(a._array.dtype))

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        return (grad * 0 if needs[0] else None, grad.sum() if needs[1] else None)


class Zero(Fill):
    node_name = "ZeroBackward0"


class Copy(Op):
    """``input.copy_(src)``: the result is src, broadcast and cast to input's shape/dtype."""

    node_name = "torch::autograd::CopyBackwards"
    array_backward = True

    @staticmethod
    def forward(ctx, a, src):
        from .. import backends

        value = src._array
        if type(value) is not type(a._array):
            value = backends.to_device(value, a.device)
        ctx.src_shape, ctx.src_dtype = src._array.shape, src._array.dtype
        xp = a._xp
        return xp.broadcast_to(value, a._array.shape).astype(a._array.dtype, copy=True)

    @staticmethod
    def backward(ctx, grad):
        # src's gradient as broadcast, in input's dtype: the engine sums it to src's shape
        # and casts it to src's dtype.
        needs = ctx.needs_input_grad
        return (grad * 0 if needs[0] else None), (grad if needs[1] else None)


def copy_into_new(a, dtype=None, *_):
    """What torch's clone and ``to(dtype)`` do for an inference tensor alone (outside
    inference mode): a new normal tensor (of ``dtype``), ``copy_``'d from it, which records
    ``CopyBackwards`` (autograd/inference.py)."""
    array = a._array
    new = Tensor._wrap(a._xp.empty(array.shape, dtype=array.dtype if dtype is None else dtype),
                       False)
    return Copy.apply(new, a)
