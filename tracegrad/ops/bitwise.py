"""Logical and bitwise functions: ``logical_and/or/xor/not``, ``bitwise_and/or/xor/not``,
shifts, and the operators ``& | ^ ~ << >>``.

None of them is differentiable, so they are plain functions on arrays that return tensors
which require no gradient (torch records nothing for them either). Bitwise functions take
integer and bool tensors only, with torch's NotImplementedError for floats.
"""

from __future__ import annotations

from ..errors import ArgumentTypeError, UnsupportedDTypeError
from ..tensor import Tensor
from ._operands import broadcast_error, operands


def _wrap(array) -> Tensor:
    return Tensor._wrap(array, False)


def _xp(a, b):
    return (a if isinstance(a, Tensor) else b)._xp


def _pair(op_name: str, a, b):
    x, y = operands(a, b)
    try:
        _xp(a, b).broadcast_shapes(getattr(x, "shape", ()), getattr(y, "shape", ()))
    except ValueError:
        raise broadcast_error(op_name, a, b) from None
    return x, y


def _require_tensor(op_name: str, name: str, position: int, value, tensor) -> None:
    if not isinstance(value, Tensor):
        raise ArgumentTypeError(
            f"{op_name}(): argument '{name}' (position {position}) must be Tensor, not "
            f"{type(value).__name__} (beside {tensor._describe()}). Hint: wrap it with "
            "tracegrad.tensor(...).")


# -- logical: any dtype, bool result -----------------------------------------------------
def logical_and(a, b) -> Tensor:
    _require_tensor("logical_and", "other", 2, b, a)
    x, y = _pair("logical_and", a, b)
    return _wrap(a._xp.logical_and(x, y))


def logical_or(a, b) -> Tensor:
    _require_tensor("logical_or", "other", 2, b, a)
    x, y = _pair("logical_or", a, b)
    return _wrap(a._xp.logical_or(x, y))


def logical_xor(a, b) -> Tensor:
    _require_tensor("logical_xor", "other", 2, b, a)
    x, y = _pair("logical_xor", a, b)
    return _wrap(a._xp.logical_xor(x, y))


def logical_not(a) -> Tensor:
    return _wrap(a._xp.logical_not(a._array))


# -- bitwise: integers and bools ---------------------------------------------------------
_KERNEL_NAMES = {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
                 "left": "lshift", "right": "rshift"}


def _check_integral(kernel: str, x, tensor) -> None:
    kind = getattr(x, "dtype", None)
    if kind is None:
        if isinstance(x, float):
            kind_name = "Float"
        else:
            return
    elif x.dtype.kind in "iub":
        return
    else:
        from .pointwise import _torch_type_name

        kind_name = _torch_type_name(x.dtype)
    raise UnsupportedDTypeError(
        f"\"{kernel}_cpu\" not implemented for '{kind_name}' ({tensor._describe()}). Hint: "
        "bitwise operators take integer or bool tensors; for masks use comparisons and "
        "logical_and/logical_or.")


def bitwise(a, b, which: str) -> Tensor:
    """``a & b`` (which="and"), ``a | b`` ("or"), ``a ^ b`` ("xor")."""
    kernel = _KERNEL_NAMES[which]
    tensor = a if isinstance(a, Tensor) else b
    x, y = _pair(kernel, a, b)
    _check_integral(kernel, x, tensor)
    _check_integral(kernel, y, tensor)
    xp = tensor._xp
    function = {"and": xp.bitwise_and, "or": xp.bitwise_or, "xor": xp.bitwise_xor}[which]
    return _wrap(xp.asarray(function(x, y)))


def bitwise_not(a) -> Tensor:
    x = a._array
    if x.dtype.kind not in "iub":
        raise ArgumentTypeError(
            f"~ (operator.invert) is only implemented on integer and Boolean-type tensors "
            f"({a._describe()}). Hint: for a float mask use (x == 0) or logical_not(x).")
    return _wrap(a._xp.invert(x))


def shift(a, b, direction: str) -> Tensor:
    """``a << b`` (direction="left") or ``a >> b`` ("right")."""
    kernel = _KERNEL_NAMES[direction]
    tensor = a if isinstance(a, Tensor) else b
    x, y = _pair(kernel, a, b)
    _check_integral(kernel, x, tensor)
    _check_integral(kernel, y, tensor)
    xp = tensor._xp
    function = xp.left_shift if direction == "left" else xp.right_shift
    return _wrap(xp.asarray(function(x, y)))
