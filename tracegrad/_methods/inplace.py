"""In-place ops (``add_``, ``x += y``, ...): each bumps the version counter.

A mixin of Tensor (``class Tensor(..., InplaceMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

from ctypes import memset as _memset
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..autograd import events, views
    from ..autograd.grad_mode import anomaly_flags, state
    from ..ops import arith, indexing, unary
    from ..tensor import Tensor


class InplaceMethods:
    __slots__ = ()

    def add_(self, other, alpha=1):
        if alpha == 1:
            value = _plain_operand(self, other)
            if value is not _SLOW:
                array = self._array
                array += value  # (see _plain_operand)
                views.after_inplace(self, "add_")
                return self
            return self._inplace("add_", arith.Add, other)
        return self._inplace("add_", arith.Add, other, alpha=alpha)

    def sub_(self, other, alpha=1):
        if alpha == 1:
            value = _plain_operand(self, other)
            if value is not _SLOW:
                array = self._array
                array -= value  # (see _plain_operand)
                views.after_inplace(self, "sub_")
                return self
            return self._inplace("sub_", arith.Sub, other)
        return self._inplace("sub_", arith.Sub, other, alpha=alpha)

    def mul_(self, other):
        value = _plain_operand(self, other)
        if value is not _SLOW:
            array = self._array
            array *= value  # (see _plain_operand)
            views.after_inplace(self, "mul_")
            return self
        return self._inplace("mul_", arith.Mul, other)

    def div_(self, other):
        return self._inplace("div_", arith.Div, other)

    def pow_(self, exponent):
        if isinstance(exponent, Tensor):
            return self._inplace("pow_", arith.Pow, exponent)
        return self._inplace("pow_", arith.PowScalar, exponent)

    def neg_(self):
        return self._inplace("neg_", arith.Neg)

    def zero_(self):
        if not (state.grad_enabled and self._requires_grad) and _unwatched() and \
                0 not in self._array.strides:
            # Nothing is recorded: zero the storage where it lies (the op would build a
            # zero array and copy it in: two passes over a gradient per optimizer step).
            _zero_storage(self._array)
            views.after_inplace(self, "zero_")
            return self
        return self._inplace("zero_", arith.Zero, 0)

    def fill_(self, value):
        if isinstance(value, Tensor):
            if value._array.ndim:
                raise RuntimeError(
                    f"fill_ only supports 0-dimension value tensor but got tensor with "
                    f"{value._array.ndim} dimensions.")
            return self._inplace("fill_", arith.FillTensor, value)
        return self._inplace("fill_", arith.Fill, value)

    def copy_(self, src, non_blocking=False):
        """Write ``src`` (broadcast to this shape, cast to this dtype) into this tensor."""
        if not isinstance(src, Tensor):
            raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not "
                            f"{type(src).__name__}")
        _check_broadcasts_into(self, src, "copy_")
        return self._inplace("copy_", arith.Copy, src)

    def index_put_(self, indices, values, accumulate=False):
        """``self[indices] = values`` (or ``+=`` with ``accumulate``), indices a tuple of
        index tensors."""
        op, values, index = indexing.index_put_arguments(self, indices, values, accumulate)
        return self._inplace("index_put_", op, values, index=index)

    def clamp_(self, min=None, max=None):
        # what clamp records (ClampBackward1 for numbers, even one), not clamp_min's node
        if min is None and max is None:
            unary.clamp(self, min, max)  # raises torch's "at least one" error
        return self._inplace("clamp_", unary.clamp_op(min, max), min, max)

    def relu_(self):
        return self._inplace("relu_", unary.Relu)

    def exp_(self):
        return self._inplace("exp_", unary.Exp)

    def sigmoid_(self):
        return self._inplace("sigmoid_", unary.Sigmoid)

    def tanh_(self):
        return self._inplace("tanh_", unary.Tanh)

    def masked_fill_(self, mask, value):
        op = indexing.MaskedFillTensor if isinstance(value, Tensor) else indexing.MaskedFill
        return self._inplace("masked_fill_", op, mask, value)

    def scatter_(self, dim, index, src=None, value=None, reduce=None):
        source = src if src is not None else value
        op = indexing.Scatter if isinstance(source, Tensor) else indexing.ScatterValue
        return self._inplace("scatter_", op, dim, index, source, reduce=reduce)

    def scatter_add_(self, dim, index, src):
        return self._inplace("scatter_add_", indexing.ScatterAdd, dim, index, src)

    def normal_(self, mean=0.0, std=1.0, generator=None):
        from ..factories import _random_like

        values = _random_like(self, "normal", mean, std, generator)
        return self._inplace("normal_", _RandomFill.Normal, values)

    def uniform_(self, a=0.0, b=1.0, generator=None):
        from ..factories import _random_like

        values = _random_like(self, "uniform", a, b, generator)
        return self._inplace("uniform_", _RandomFill.Uniform, values)

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_
    __ipow__ = pow_


_ndarray = np.ndarray
try:  # the C function np.may_share_memory dispatches to (__array_function__ is for
    # array-likes; both operands here are ndarrays): half its cost per optimizer update
    from numpy._core._multiarray_umath import may_share_memory as _may_share_memory
except ImportError:  # pragma: no cover - NumPy 1.x
    _may_share_memory = np.may_share_memory
_SLOW = object()  # _plain_operand's "take the op's path"
_PLAIN_NUMBERS = (int, float)


# From this size on, a contiguous array is zeroed by memset: ndarray.fill copies the value
# element by element, twice memset's time for a [1000, 100] float32 gradient
# (bench/bench_two_layer.py: w.grad.zero_() every step); below it, fill's one call is
# cheaper than finding the array's address.
_MEMSET_BYTES = 1 << 16


def _zero_storage(array) -> None:
    """Write zeros into every element of ``array`` (no gaps in its storage: no stride is
    0). All-zero bytes are 0 in every dtype a tensor has (+0.0 for floats), as fill(0)."""
    if array.nbytes >= _MEMSET_BYTES and array.__class__ is _ndarray:
        flags = array.flags
        if (flags.c_contiguous or flags.f_contiguous) and flags.writeable:
            _memset(array.ctypes.data, 0, array.nbytes)
            return
    array.fill(0)  # (a read-only array raises NumPy's error here)


def _unwatched() -> bool:
    """No listener told of untracked ops and no anomaly mode: an unrecorded in-place op
    then owes nobody the op's out-of-place result (``on_untracked_op``'s output) or a
    source line, only the version bump (``views.after_inplace``, which tells a listener
    of the change)."""
    return not events.untracked and not anomaly_flags.enabled


def _plain_operand(tensor, other):
    """What ``tensor``'s array can be updated with in place by one NumPy/CuPy operator
    (``array -= value``), or ``_SLOW`` when the op's own path must run.

    The fast case is an optimizer-style update (``w -= lr * w.grad`` under no_grad, ``+=``,
    ``*=``): nothing recorded, nobody watching, a floating-point tensor whose storage each
    element owns, and a Python number or a tensor of its exact dtype, array type and shape
    (or 0-d). There the op's path computes a new array and copies it in; the operator
    writes the result in place (a third of the memory traffic, bench/bench_two_layer.py),
    with the same values, the same version bump and the same ``on_inplace`` event.
    Anything else -- promotion, broadcast, a recorded op, a listener told of the op's
    out-of-place result (``on_untracked_op``) -- takes the op's path and its checks.
    """
    if state.grad_enabled and (tensor._requires_grad or (
            other.__class__ is Tensor and other._requires_grad)):
        return _SLOW
    if events.untracked or anomaly_flags.enabled:
        return _SLOW
    array = tensor._array
    if array.dtype.kind != "f" or 0 in array.strides:
        return _SLOW
    if other.__class__ in _PLAIN_NUMBERS:
        return other
    if other.__class__ is Tensor:
        value = other._array
        # NumPy only: its ufuncs buffer an operand that overlaps the output in memory
        # (x += x.flip(0)); CuPy's kernels do not, so a CuPy tensor operand takes the op's
        # path, which computes the result into a new array first.
        if value.__class__ is _ndarray and array.__class__ is _ndarray and \
                value.dtype is array.dtype and (value.shape == array.shape or not value.ndim):
            # a view of the same storage (x[1:] += x[:-1]): the op's path checks overlap
            return _SLOW if _may_share_memory(value, array) else value
    return _SLOW


def _check_broadcasts_into(tensor, src, op_name: str) -> None:
    """``src`` must broadcast to exactly ``tensor``'s shape (PyTorch's two messages)."""
    target, shape = tensor._array.shape, src._array.shape
    if shape == target:
        return
    import numpy as np

    try:
        broadcast = np.broadcast_shapes(target, shape)
    except ValueError:
        from ..ops._operands import broadcast_error

        raise broadcast_error(op_name, tensor, src) from None
    if broadcast != target:
        from ..errors import ShapeError

        raise ShapeError(
            f"output with shape {list(target)} doesn't match the broadcast shape "
            f"{list(broadcast)} ({op_name} into {tensor._describe()}). Hint: an in-place op "
            "keeps the tensor's shape.")


class _RandomFill:
    """The nodes ``uniform_``/``normal_`` record (their gradient is zero), made by _bind."""

    Uniform: type
    Normal: type


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, anomaly_flags, arith, events, indexing, state, unary, views
    from ..autograd import events, views
    from ..autograd.grad_mode import anomaly_flags, state
    from ..ops import arith, indexing, unary
    from ..tensor import Tensor

    class Uniform(arith.Fill):
        node_name = "UniformBackward0"

        @staticmethod
        def forward(ctx, a, values):
            return values  # drawn by the caller from tracegrad's generator

    class Normal(Uniform):
        node_name = "NormalBackward0"

    _RandomFill.Uniform, _RandomFill.Normal = Uniform, Normal
