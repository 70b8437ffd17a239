"""Elementwise functions beyond the basic math (``log2``, ``erf``, ``floor``, ``atan2``,
``lerp``, ``addcmul``, ...) and the in-place ``_`` form of every elementwise op.

A mixin of Tensor (``class Tensor(..., PointwiseMethods)``): the methods are defined here,
where a reader looks for them. An in-place form runs the same op and writes the result
back (``Tensor._inplace``), so it records the same node as the out-of-place one, exactly
as torch's ``cos_`` records ``CosBackward0``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ops import arith, binary, pointwise, unary  # noqa: TC004 - bound at runtime by _bind()
    from ..tensor import Tensor  # noqa: TC004 - bound at runtime by _bind()


class PointwiseMethods:
    __slots__ = ()

    # -- logs and exponentials ---------------------------------------------------------
    def log2(self):
        return pointwise.Log2.apply(self)

    def log10(self):
        return pointwise.Log10.apply(self)

    def log1p(self):
        return pointwise.Log1p.apply(self)

    def expm1(self):
        return pointwise.Expm1.apply(self)

    def exp2(self):
        return pointwise.Exp2.apply(self)

    def rsqrt(self):
        return pointwise.Rsqrt.apply(self)

    def erf(self):
        return pointwise.Erf.apply(self)

    def erfc(self):
        return pointwise.Erfc.apply(self)

    def erfinv(self):
        return pointwise.Erfinv.apply(self)

    def logit(self, eps=None):
        return pointwise.Logit.apply(self, eps)

    def xlogy(self, other):
        if isinstance(other, Tensor):
            return binary.Xlogy.apply(self, other)
        return binary.XlogyScalarOther.apply(self, other)

    def logaddexp(self, other):
        binary.check_tensor_argument("logaddexp", "other", 2, other, self)
        return binary.Logaddexp.apply(self, other)

    def logaddexp2(self, other):
        binary.check_tensor_argument("logaddexp2", "other", 2, other, self)
        return binary.Logaddexp2.apply(self, other)

    # -- trigonometric and hyperbolic --------------------------------------------------
    def tan(self):
        return pointwise.Tan.apply(self)

    def sinh(self):
        return pointwise.Sinh.apply(self)

    def cosh(self):
        return pointwise.Cosh.apply(self)

    def asin(self):
        return pointwise.Asin.apply(self)

    def acos(self):
        return pointwise.Acos.apply(self)

    def atan(self):
        return pointwise.Atan.apply(self)

    def asinh(self):
        return pointwise.Asinh.apply(self)

    def acosh(self):
        return pointwise.Acosh.apply(self)

    def atanh(self):
        return pointwise.Atanh.apply(self)

    arcsin, arccos, arctan = asin, acos, atan
    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    def atan2(self, other):
        binary.check_tensor_argument("atan2", "other", 2, other, self)
        return binary.Atan2.apply(self, other)

    arctan2 = atan2

    def hypot(self, other):
        binary.check_tensor_argument("hypot", "other", 2, other, self)
        return binary.Hypot.apply(self, other)

    def sinc(self):
        return pointwise.Sinc.apply(self)

    def deg2rad(self):
        return pointwise.Deg2Rad.apply(self)

    def rad2deg(self):
        return pointwise.Rad2Deg.apply(self)

    # -- rounding and sign -------------------------------------------------------------
    def round(self, decimals=0):
        if decimals == 0:
            return pointwise.Round.apply(self)
        return pointwise.RoundDecimals.apply(self, decimals)

    def floor(self):
        return pointwise.Floor.apply(self)

    def ceil(self):
        return pointwise.Ceil.apply(self)

    def trunc(self):
        return pointwise.Trunc.apply(self)

    fix = trunc

    def frac(self):
        return pointwise.Frac.apply(self)

    def sgn(self):
        return pointwise.Sgn.apply(self)

    def copysign(self, other):
        if isinstance(other, Tensor):
            return binary.Copysign.apply(self, other)
        return binary.CopysignScalar.apply(self, other)

    def heaviside(self, values):
        binary.check_tensor_argument("heaviside", "values", 2, values, self)
        return binary.Heaviside.apply(self, values)

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        return pointwise.NanToNum.apply(self, nan, posinf, neginf)

    def positive(self):
        if self._array.dtype.kind == "b":
            raise _bool_error(self)
        return self

    # -- division family ---------------------------------------------------------------
    def fmod(self, other):
        if isinstance(other, Tensor):
            return binary.Fmod.apply(self, other)
        return binary.FmodScalar.apply(self, other)

    def remainder(self, other):
        if isinstance(other, Tensor):
            return binary.Remainder.apply(self, other)
        return binary.RemainderScalar.apply(self, other)

    def floor_divide(self, other):
        return binary.FloorDivide.apply(self, other)

    def true_divide(self, other):
        return arith.Div.apply(self, other)

    def divide(self, other, *, rounding_mode=None):
        return self.div(other, rounding_mode=rounding_mode)

    def multiply(self, other):
        return arith.Mul.apply(self, other)

    def subtract(self, other, *, alpha=1):
        return self.sub(other, alpha=alpha)

    def negative(self):
        return arith.Neg.apply(self)

    def absolute(self):
        return unary.Abs.apply(self)

    def float_power(self, exponent):
        """``pow`` computed in float64, as torch's float_power."""
        from .. import _dtype

        if isinstance(exponent, Tensor):
            return arith.Pow.apply(self.to(_dtype.float64), exponent.to(_dtype.float64))
        # the exponent a float, as torch's node shows it (2.0)
        return arith.PowScalar.apply(self.to(_dtype.float64), float(exponent)
                                     if isinstance(exponent, int) else exponent)

    # -- blends ------------------------------------------------------------------------
    def lerp(self, end, weight):
        if isinstance(weight, Tensor):
            return binary.LerpTensor.apply(self, end, weight)
        return binary.Lerp.apply(self, end, weight)

    def addcmul(self, tensor1, tensor2, *, value=1):
        return binary.Addcmul.apply(self, tensor1, tensor2, value=value)

    def addcdiv(self, tensor1, tensor2, *, value=1):
        return binary.Addcdiv.apply(self, tensor1, tensor2, value=value)

    def fmax(self, other):
        return binary.Fmax.apply(self, other)

    def fmin(self, other):
        return binary.Fmin.apply(self, other)

    # -- in-place forms ----------------------------------------------------------------
    def sin_(self):
        return self._inplace("sin_", unary.Sin)

    def cos_(self):
        return self._inplace("cos_", unary.Cos)

    def tan_(self):
        return self._inplace("tan_", pointwise.Tan)

    def sinh_(self):
        return self._inplace("sinh_", pointwise.Sinh)

    def cosh_(self):
        return self._inplace("cosh_", pointwise.Cosh)

    def asin_(self):
        return self._inplace("asin_", pointwise.Asin)

    def acos_(self):
        return self._inplace("acos_", pointwise.Acos)

    def atan_(self):
        return self._inplace("atan_", pointwise.Atan)

    def asinh_(self):
        return self._inplace("asinh_", pointwise.Asinh)

    def acosh_(self):
        return self._inplace("acosh_", pointwise.Acosh)

    def atanh_(self):
        return self._inplace("atanh_", pointwise.Atanh)

    arcsin_, arccos_, arctan_ = asin_, acos_, atan_
    arcsinh_, arccosh_, arctanh_ = asinh_, acosh_, atanh_

    def atan2_(self, other):
        binary.check_tensor_argument("atan2_", "other", 2, other, self)
        return self._inplace("atan2_", binary.Atan2, other)

    arctan2_ = atan2_

    def hypot_(self, other):
        binary.check_tensor_argument("hypot_", "other", 2, other, self)
        return self._inplace("hypot_", binary.Hypot, other)

    def log_(self):
        return self._inplace("log_", unary.Log)

    def log2_(self):
        return self._inplace("log2_", pointwise.Log2)

    def log10_(self):
        return self._inplace("log10_", pointwise.Log10)

    def log1p_(self):
        return self._inplace("log1p_", pointwise.Log1p)

    def expm1_(self):
        return self._inplace("expm1_", pointwise.Expm1)

    def exp2_(self):
        return self._inplace("exp2_", pointwise.Exp2)

    def sqrt_(self):
        return self._inplace("sqrt_", unary.Sqrt)

    def rsqrt_(self):
        return self._inplace("rsqrt_", pointwise.Rsqrt)

    def reciprocal_(self):
        return self._inplace("reciprocal_", pointwise.Reciprocal)

    def square_(self):
        return self._inplace("square_", arith.PowScalar, 2)

    def abs_(self):
        return self._inplace("abs_", unary.Abs)

    absolute_ = abs_

    def negative_(self):
        return self._inplace("negative_", arith.Neg)

    def erf_(self):
        return self._inplace("erf_", pointwise.Erf)

    def erfc_(self):
        return self._inplace("erfc_", pointwise.Erfc)

    def erfinv_(self):
        return self._inplace("erfinv_", pointwise.Erfinv)

    def logit_(self, eps=None):
        return self._inplace("logit_", pointwise.Logit, eps)

    def xlogy_(self, other):
        if isinstance(other, Tensor):
            return self._inplace("xlogy_", binary.Xlogy, other)
        return self._inplace("xlogy_", binary.XlogyScalarOther, other)

    def sign_(self):
        return self._inplace("sign_", pointwise.Sign)

    def sgn_(self):
        return self._inplace("sgn_", pointwise.Sgn)

    def round_(self, decimals=0):
        if decimals == 0:
            return self._inplace("round_", pointwise.Round)
        return self._inplace("round_", pointwise.RoundDecimals, decimals)

    def floor_(self):
        return self._inplace("floor_", pointwise.Floor)

    def ceil_(self):
        return self._inplace("ceil_", pointwise.Ceil)

    def trunc_(self):
        return self._inplace("trunc_", pointwise.Trunc)

    fix_ = trunc_

    def frac_(self):
        return self._inplace("frac_", pointwise.Frac)

    def sinc_(self):
        return self._inplace("sinc_", pointwise.Sinc)

    def deg2rad_(self):
        return self._inplace("deg2rad_", pointwise.Deg2Rad)

    def rad2deg_(self):
        return self._inplace("rad2deg_", pointwise.Rad2Deg)

    def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
        return self._inplace("nan_to_num_", pointwise.NanToNum, nan, posinf, neginf)

    def copysign_(self, other):
        if isinstance(other, Tensor):
            return self._inplace("copysign_", binary.Copysign, other)
        return self._inplace("copysign_", binary.CopysignScalar, other)

    def heaviside_(self, values):
        binary.check_tensor_argument("heaviside_", "values", 2, values, self)
        return self._inplace("heaviside_", binary.Heaviside, values)

    def fmod_(self, other):
        if isinstance(other, Tensor):
            return self._inplace("fmod_", binary.Fmod, other)
        return self._inplace("fmod_", binary.FmodScalar, other)

    def remainder_(self, other):
        if isinstance(other, Tensor):
            return self._inplace("remainder_", binary.Remainder, other)
        return self._inplace("remainder_", binary.RemainderScalar, other)

    def floor_divide_(self, other):
        return self._inplace("floor_divide_", binary.FloorDivide, other)

    def true_divide_(self, other):
        return self._inplace("true_divide_", arith.Div, other)

    def divide_(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return self._inplace("divide_", arith.Div, other)
        _check_rounding_mode(rounding_mode)
        return self._inplace("divide_", binary.DivRounding, other, rounding_mode)

    def multiply_(self, other):
        return self._inplace("multiply_", arith.Mul, other)

    def subtract_(self, other, *, alpha=1):
        return self.sub_(other, alpha=alpha)

    def float_power_(self, exponent):
        from .. import _dtype
        from ..errors import DTypeError

        if self._array.dtype != _dtype.float64.numpy:
            raise DTypeError(
                f"the base given to float_power_ has dtype {self.dtype.name} but the "
                "operation's result requires dtype Double. Hint: call .double() first.")
        if isinstance(exponent, Tensor):
            return self._inplace("float_power_", arith.Pow, exponent.to(_dtype.float64))
        return self._inplace("float_power_", arith.PowScalar, exponent)

    def lerp_(self, end, weight):
        if isinstance(weight, Tensor):
            return self._inplace("lerp_", binary.LerpTensor, end, weight)
        return self._inplace("lerp_", binary.Lerp, end, weight)

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return self._inplace("addcmul_", binary.Addcmul, tensor1, tensor2, value=value)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return self._inplace("addcdiv_", binary.Addcdiv, tensor1, tensor2, value=value)

    def clamp_min_(self, min):
        op = unary.ClampMinTensor if hasattr(min, "_array") else unary.ClampMin
        return self._inplace("clamp_min_", op, min)

    def clamp_max_(self, max):
        op = unary.ClampMaxTensor if hasattr(max, "_array") else unary.ClampMax
        return self._inplace("clamp_max_", op, max)

    __ifloordiv__ = floor_divide_
    __imod__ = remainder_

    def clip_(self, min=None, max=None):
        return self.clamp_(min, max)

    def clip(self, min=None, max=None):
        return self.clamp(min, max)


def _check_rounding_mode(rounding_mode) -> None:
    if rounding_mode not in ("trunc", "floor"):
        from ..errors import InvalidValueError

        raise InvalidValueError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'. Hint: rounding_mode=None is true division.")


def _bool_error(tensor):
    from ..errors import DTypeError

    return DTypeError(
        f"The `+` operator, on a bool tensor is not supported. ({tensor._describe()}) Hint: "
        "convert it with .long() or .float() first.")


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, arith, binary, pointwise, unary
    from ..ops import arith, binary, pointwise, unary
    from ..tensor import Tensor
