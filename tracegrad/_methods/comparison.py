"""Comparisons and logic: they make bool tensors and record no gradient.

A mixin of Tensor (``class Tensor(..., ComparisonMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

import operator as _ops
from typing import TYPE_CHECKING

from .._layout import iterator_layout
from ..autograd import events as _events

if TYPE_CHECKING:
    from ..ops import _operands, bitwise  # noqa: TC004 - bound at runtime by _bind()
    from ..tensor import Tensor  # noqa: TC004 - bound at runtime by _bind()


_NUMBERS = (int, float)


def _compare(self, other, compare):
    x = self._array
    if other.__class__ in _NUMBERS and x.dtype.kind == "f":
        # A float tensor against a Python number (``input < 0`` in a ReLU's backward): what
        # operands() gives back for it unchanged, without its calls.
        result = Tensor._wrap(compare(x, other), False)
    elif other is None:
        return False
    else:
        x, y = _operands.operands(self, other)
        compared = compare(x, y)
        if compared.ndim > 1:  # laid out as torch's TensorIterator lays it out
            compared = iterator_layout(compared, x, y)
        result = Tensor._wrap(compared, False)
    listener = _events.listener  # one check when nobody listens
    if listener is not None:  # a bool mask: the gradient stops here (tracing/flows.py)
        listener.on_untracked_op(compare.__name__, (self, other), (result,), True)
    return result


class ComparisonMethods:
    __slots__ = ()

    def __eq__(self, other):
        return _compare(self, other, _ops.eq)

    def __ne__(self, other):
        return _compare(self, other, _ops.ne)

    def __lt__(self, other):
        return _compare(self, other, _ops.lt)

    def __le__(self, other):
        return _compare(self, other, _ops.le)

    def __gt__(self, other):
        return _compare(self, other, _ops.gt)

    def __ge__(self, other):
        return _compare(self, other, _ops.ge)

    def __and__(self, other):
        return bitwise.bitwise(self, other, "and")

    def __rand__(self, other):
        return bitwise.bitwise(other, self, "and")

    def __or__(self, other):
        return bitwise.bitwise(self, other, "or")

    def __ror__(self, other):
        return bitwise.bitwise(other, self, "or")

    def __xor__(self, other):
        return bitwise.bitwise(self, other, "xor")

    def __rxor__(self, other):
        return bitwise.bitwise(other, self, "xor")

    def __invert__(self):
        return bitwise.bitwise_not(self)

    def __iand__(self, other):
        return _write_values(self, "__iand__", bitwise.bitwise(self, other, "and"))

    def __ior__(self, other):
        return _write_values(self, "__ior__", bitwise.bitwise(self, other, "or"))

    def __ixor__(self, other):
        return _write_values(self, "__ixor__", bitwise.bitwise(self, other, "xor"))

    def __ilshift__(self, other):
        return _write_values(self, "__ilshift__", bitwise.shift(self, other, "left"))

    def __irshift__(self, other):
        return _write_values(self, "__irshift__", bitwise.shift(self, other, "right"))

    def bitwise_and(self, other):
        return bitwise.bitwise(self, other, "and")

    def bitwise_or(self, other):
        return bitwise.bitwise(self, other, "or")

    def bitwise_xor(self, other):
        return bitwise.bitwise(self, other, "xor")

    def bitwise_not(self):
        return bitwise.bitwise_not(self)

    def bitwise_left_shift(self, other):
        return bitwise.shift(self, other, "left")

    def bitwise_right_shift(self, other):
        return bitwise.shift(self, other, "right")

    def bitwise_and_(self, other):
        return _write_values(self, "bitwise_and_", bitwise.bitwise(self, other, "and"))

    def bitwise_or_(self, other):
        return _write_values(self, "bitwise_or_", bitwise.bitwise(self, other, "or"))

    def bitwise_xor_(self, other):
        return _write_values(self, "bitwise_xor_", bitwise.bitwise(self, other, "xor"))

    def bitwise_not_(self):
        return _write_values(self, "bitwise_not_", bitwise.bitwise_not(self))

    def logical_and(self, other):
        return bitwise.logical_and(self, other)

    def logical_or(self, other):
        return bitwise.logical_or(self, other)

    def logical_xor(self, other):
        return bitwise.logical_xor(self, other)

    def logical_not(self):
        return bitwise.logical_not(self)

    def logical_and_(self, other):
        return _write_values(self, "logical_and_", bitwise.logical_and(self, other))

    def logical_or_(self, other):
        return _write_values(self, "logical_or_", bitwise.logical_or(self, other))

    def logical_xor_(self, other):
        return _write_values(self, "logical_xor_", bitwise.logical_xor(self, other))

    def logical_not_(self):
        return _write_values(self, "logical_not_", bitwise.logical_not(self))

    def eq(self, other):
        return self.__eq__(other)

    def ne(self, other):
        return self.__ne__(other)

    def lt(self, other):
        return self.__lt__(other)

    def le(self, other):
        return self.__le__(other)

    def gt(self, other):
        return self.__gt__(other)

    def ge(self, other):
        return self.__ge__(other)

    greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne

    def eq_(self, other):
        return _write_values(self, "eq_", self.__eq__(other))

    def ne_(self, other):
        return _write_values(self, "ne_", self.__ne__(other))

    def lt_(self, other):
        return _write_values(self, "lt_", self.__lt__(other))

    def le_(self, other):
        return _write_values(self, "le_", self.__le__(other))

    def gt_(self, other):
        return _write_values(self, "gt_", self.__gt__(other))

    def ge_(self, other):
        return _write_values(self, "ge_", self.__ge__(other))

    def equal(self, other) -> bool:
        """Same shape and same values (as torch.equal)."""
        from .._functions import equal

        return equal(self, other)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
        from .._functions import allclose

        return allclose(self, other, rtol, atol, equal_nan)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        from .._functions import isclose

        return isclose(self, other, rtol, atol, equal_nan)

    def isneginf(self):
        return Tensor._wrap(self._xp.isneginf(self._array), False)

    def isposinf(self):
        return Tensor._wrap(self._xp.isposinf(self._array), False)

    def isreal(self):
        return Tensor._wrap(self._xp.ones(self._array.shape, dtype=bool), False)

    def signbit(self):
        return Tensor._wrap(self._xp.signbit(self._array), False)

    def isnan(self):
        return Tensor._wrap(self._xp.isnan(self._array), False)

    def isinf(self):
        return Tensor._wrap(self._xp.isinf(self._array), False)

    def isfinite(self):
        return Tensor._wrap(self._xp.isfinite(self._array), False)

    def any(self, dim=None, keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("any", aliases, dim, keepdim)
        return _truth_reduce(self, "any", dim, keepdim)

    def all(self, dim=None, keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("all", aliases, dim, keepdim)
        return _truth_reduce(self, "all", dim, keepdim)


def _truth_reduce(self, which: str, dim, keepdim: bool):
    """any/all: bool results (uint8 stays uint8, as in torch), dims as int or tuple."""
    from ..ops.reduce import normalize_dims

    x = self._array
    axes = normalize_dims(dim, x.ndim) if x.ndim else None
    result = getattr(x, which)(axis=axes, keepdims=keepdim)
    if keepdim and dim is None:
        result = self._xp.reshape(result, (1,) * x.ndim)
    result = self._xp.asarray(result)
    if x.dtype == "uint8":
        result = result.astype("uint8")
    return Tensor._wrap(result, False)


def numpy_aliases(op_name: str, aliases: dict, dim, keepdim):
    """torch also takes NumPy's names ``axis`` and ``keepdims`` for ``dim``/``keepdim``."""
    for name, value in aliases.items():
        if name == "axis":
            dim = value
        elif name == "keepdims":
            keepdim = value
        else:
            raise TypeError(f"{op_name}() got an unexpected keyword argument '{name}'")
    return dim, keepdim


def _write_values(self, op_name: str, result):
    """An in-place form of a function no gradient flows through: write, cast, bump."""
    from ..autograd.grad_mode import state

    if state.grad_enabled and self.requires_grad:
        self._check_inplace_allowed(op_name)
    array = result._array
    target = self._array
    if array.shape != target.shape:
        try:
            array = self._xp.broadcast_to(array, target.shape)
        except ValueError:
            from ..errors import ShapeError

            raise ShapeError(
                f"output with shape {list(target.shape)} doesn't match the broadcast shape "
                f"{list(array.shape)} ({op_name} on {self._describe()}). Hint: use the "
                "out-of-place form, which can grow the result.") from None
    target[...] = array
    self._after_inplace(op_name)
    return self


def _bind() -> None:
    """Tensor and the op helpers import this package, so they are bound once Tensor exists
    (``tracegrad._methods.bind_ops``)."""
    global Tensor, _operands, bitwise
    from ..ops import _operands, bitwise
    from ..tensor import Tensor
