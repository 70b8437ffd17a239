"""Elementwise functions of one tensor beyond unary.py's: logs and exponentials, the error
function, rounding, hyperbolic and inverse trigonometric functions, sign, logit, sinc.

Each op's forward and backward side by side; backward is written with tensor ops, so
second derivatives work. Integer inputs give the default float dtype for the functions
that are only defined on reals (as torch does); rounding and sign keep the input's dtype.
"""

from __future__ import annotations

import math

from .. import _dtype
from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..errors import UnsupportedDTypeError
from ..tensor import Tensor
from . import _math, _special
from .unary import _quiet

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _float(a):
    """The input as a floating array: an integer or bool tensor becomes the default float."""
    x = a._array
    return x if x.dtype.kind == "f" else x.astype(_dtype.default_float.numpy)


def _zeros_like_grad(grad):
    """The zero gradient of a step function: torch's ``zeros_like(grad)`` (so an inf
    gradient gives 0, not nan), beside Tensors too: a constant, so the gradient made with
    create_graph does not require grad, as in torch (``grad * 0`` did)."""
    if grad.__class__ is Tensor:
        return Tensor._wrap(grad._xp.zeros_like(grad._array), False)
    return _math.xp(grad).zeros_like(grad)


class Log2(Op):
    node_name = "Log2Backward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with _quiet(a._xp):
            return a._xp.log2(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad / _math.scaled(a, _LN2),)  # (torch's formulas, their scalar ops)


class Log10(Op):
    node_name = "Log10Backward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with _quiet(a._xp):
            return a._xp.log10(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad / _math.scaled(a, _LN10),)


class Log1p(Op):
    node_name = "Log1PBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with _quiet(a._xp):
            return a._xp.log1p(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad / _math.shifted(a, 1),)


class Expm1(Op):
    node_name = "Expm1Backward0"
    array_backward = True
    saves_output = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        with _quiet(a._xp):
            return a._xp.expm1(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return (grad * _math.shifted(result, 1),)


class Exp2(Op):
    node_name = "Exp2Backward0"
    array_backward = True
    saves_output = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        with _quiet(a._xp):
            return a._xp.exp2(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return (_math.scaled(grad * result, _LN2),)


class Erf(Op):
    node_name = "ErfBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _special.erf(a._xp, _float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        # torch's formula as written: 2 / sqrt(pi) * exp(-(self.pow(2))) * grad
        return (_math.scaled(_math.exp(-(a ** 2)), _TWO_OVER_SQRT_PI) * grad,)


class Erfc(Op):
    node_name = "ErfcBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _special.erfc(a._xp, _float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (_math.scaled(_math.exp(-(a ** 2)), -_TWO_OVER_SQRT_PI) * grad,)


class Erfinv(Op):
    """The inverse error function. Its node keeps the input, as torch's (whose formula
    computes erfinv again: ``sqrt(pi) / 2 * exp(erfinv(x) ** 2) * grad``), so an in-place
    change of the input, not of the output, is what backward refuses."""

    node_name = "ErfinvBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _special.erfinv(a._xp, _float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        inverse = a.erfinv() if a.__class__ is Tensor else _special.erfinv(_math.xp(a), a)
        return (_SQRT_PI_OVER_2 * _math.exp(inverse ** 2) * grad,)


class Rsqrt(Op):
    node_name = "RsqrtBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        xp = a._xp
        with _quiet(xp):
            return 1 / xp.sqrt(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        # torch's formula as written: -0.5 * grad * result.pow(3)
        return (_math.scaled(grad, -0.5) * result ** 3,)


class Reciprocal(Op):
    node_name = "ReciprocalBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        with _quiet(a._xp):
            return 1 / _float(a)

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return (-grad * (result * result),)  # (torch's grouping)


# -- trigonometric and hyperbolic -------------------------------------------------------
class Tan(Op):
    node_name = "TanBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("result",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        return a._xp.tan(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return (grad * _math.shifted(result ** 2, 1),)


class Sinh(Op):
    node_name = "SinhBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with _quiet(a._xp):
            return a._xp.sinh(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * _math.cosh(a),)


class Cosh(Op):
    node_name = "CoshBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with _quiet(a._xp):
            return a._xp.cosh(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * _math.sinh(a),)


class Asin(Op):
    node_name = "AsinBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with _quiet(a._xp):
            return a._xp.arcsin(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * _math.rsqrt(_math.shifted(-a * a, 1)),)


class Acos(Op):
    node_name = "AcosBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with _quiet(a._xp):
            return a._xp.arccos(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * -_math.rsqrt(_math.shifted(-a * a, 1)),)


class Atan(Op):
    node_name = "AtanBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a._xp.arctan(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad / _math.shifted(a * a, 1),)  # (torch's: + 1 an add.Scalar)


class Asinh(Op):
    node_name = "AsinhBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a._xp.arcsinh(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * _math.rsqrt(_math.shifted(a ** 2, 1)),)  # (as torch writes it)


class Acosh(Op):
    node_name = "AcoshBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with _quiet(a._xp):
            return a._xp.arccosh(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * _math.rsqrt(_math.shifted(a * a, -1)),)


class Atanh(Op):
    node_name = "AtanhBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with _quiet(a._xp):
            return a._xp.arctanh(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad / _math.number_minus(1, a ** 2),)


class Sinc(Op):
    """``sin(pi x) / (pi x)``, 1 at 0."""

    node_name = "SincBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a._xp.sinc(_float(a))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        angle = a * math.pi
        zero = a == 0
        # (cos(pi x) - sinc(x)) / x, written so x == 0 never divides (its limit is 0)
        safe = _math.where(zero, 1.0, a)
        slope = ((_math.cos(angle) - _math.apply(Sinc, safe)) / safe)
        return (grad * _math.where(zero, 0.0, slope),)


class Deg2Rad(Op):
    node_name = "Deg2RadBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a):
        return _float(a) * (math.pi / 180.0)

    @staticmethod
    def backward(ctx, grad):
        return (grad * (math.pi / 180.0),)


class Rad2Deg(Op):
    node_name = "Rad2DegBackward0"
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, a):
        return _float(a) * (180.0 / math.pi)

    @staticmethod
    def backward(ctx, grad):
        return (grad * (180.0 / math.pi),)


# -- piecewise constant: zero gradient, as in torch -------------------------------------
class Sign(Op):
    node_name = "SignBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a):
        x = a._array
        if x.dtype.kind == "b":
            return x.copy()
        return a._xp.sign(x)

    @staticmethod
    def backward(ctx, grad):
        return (_zeros_like_grad(grad),)


class Sgn(Sign):
    """``sgn`` is ``sign`` for real tensors (they differ only on complex ones). Its node
    keeps the input and the output, as torch's (whose formula reads them for complex
    tensors), so an in-place change of either is refused in backward, as there."""

    node_name = "SgnBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("self", "result")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return Sign.forward(ctx, a)

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - the version checks of torch's saved self and result
        return (_zeros_like_grad(grad),)


class Round(Op):
    node_name = "RoundBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a):
        x = a._array
        return x.copy() if x.dtype.kind != "f" else a._xp.round(x)

    @staticmethod
    def backward(ctx, grad):
        return (_zeros_like_grad(grad),)


class RoundDecimals(Op):
    """``round(decimals=n)``: half to even at the n-th decimal, as torch (and NumPy) do."""

    node_name = "RoundBackward1"
    array_backward = True

    @staticmethod
    def forward(ctx, a, decimals):
        x = a._array
        if x.dtype.kind != "f":
            raise UnsupportedDTypeError(
                f"\"round_cpu\" not implemented for '{_torch_type_name(x.dtype)}' "
                f"({a._describe()}). Hint: round(decimals=) needs a floating point tensor; "
                "call .float() first.")
        return a._xp.round(x, decimals)

    @staticmethod
    def backward(ctx, grad):
        return (_zeros_like_grad(grad), None)


class Floor(Op):
    node_name = "FloorBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a):
        x = a._array
        return x.copy() if x.dtype.kind != "f" else a._xp.floor(x)

    @staticmethod
    def backward(ctx, grad):
        return (_zeros_like_grad(grad),)


class Ceil(Op):
    node_name = "CeilBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a):
        x = a._array
        return x.copy() if x.dtype.kind != "f" else a._xp.ceil(x)

    @staticmethod
    def backward(ctx, grad):
        return (_zeros_like_grad(grad),)


class Trunc(Op):
    node_name = "TruncBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a):
        x = a._array
        return x.copy() if x.dtype.kind != "f" else a._xp.trunc(x)

    @staticmethod
    def backward(ctx, grad):
        return (_zeros_like_grad(grad),)


class Frac(Op):
    node_name = "FracBackward0"
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, a):
        x = a._array
        if x.dtype.kind != "f":
            raise UnsupportedDTypeError(
                f"\"frac_cpu\" not implemented for '{_torch_type_name(x.dtype)}' "
                f"({a._describe()}). Hint: frac is only defined for floating point tensors.")
        return x - a._xp.trunc(x)

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


# -- special-valued ---------------------------------------------------------------------
class Logit(Op):
    """``log(p / (1 - p))``; with ``eps``, p is clamped to [eps, 1 - eps] first and the
    gradient is zero outside that range (torch's rule)."""

    node_name = "LogitBackward0"
    array_backward = True
    saved_names = ("self", "eps=eps")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, eps=None):
        ctx.save_for_backward(a)
        ctx.eps = eps
        xp = a._xp
        x = _float(a)
        if eps is not None:
            x = xp.clip(x, eps, 1 - eps)
        with _quiet(xp):
            return xp.log(x / (1 - x))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        # torch's logit_backward: NaN outside [0, 1] (0 outside [eps, 1 - eps] with eps)
        slope = grad / (a * _math.number_minus(1, a))
        eps = ctx.eps
        if eps is None:
            return (_math.where((a < 0) | (a > 1), float("nan"), slope), None)
        return (_math.where((a < eps) | (a > 1 - eps), 0.0, slope), None)


class NanToNum(Op):
    node_name = "NanToNumBackward0"
    array_backward = True
    saved_names = ("self",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, nan=0.0, posinf=None, neginf=None):
        x = a._array
        ctx.save_for_backward(a)
        if x.dtype.kind != "f":
            return x.copy()
        return a._xp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (_math.where(_math.isfinite(a), grad, 0.0), None, None, None)


def _torch_type_name(numpy_dtype) -> str:
    """torch's C++ scalar-type names, which its "not implemented for" messages use."""
    return _dtype.scalar_type_name(numpy_dtype)
