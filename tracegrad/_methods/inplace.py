"""In-place ops (``add_``, ``x += y``, ...): each bumps the version counter.

A mixin of Tensor (``class Tensor(..., InplaceMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ops import arith, indexing, unary
    from ..tensor import Tensor


class InplaceMethods:
    __slots__ = ()

    def add_(self, other, alpha=1):
        if alpha == 1:
            return self._inplace("add_", arith.Add, other)
        return self._inplace("add_", arith.Add, other, alpha=alpha)

    def sub_(self, other, alpha=1):
        if alpha == 1:
            return self._inplace("sub_", arith.Sub, other)
        return self._inplace("sub_", arith.Sub, other, alpha=alpha)

    def mul_(self, other):
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
        index = tuple(part._array if isinstance(part, Tensor) else part for part in indices)
        if not isinstance(values, Tensor):
            from ..ops.indexing import _value_tensor

            values = _value_tensor(values, self)
        if accumulate:  # repeated positions add up (ops/selection.py, ops-curriculum's)
            from ..ops.selection import IndexPutAccumulate

            return self._inplace("index_put_", IndexPutAccumulate, values, index=index)
        return self._inplace("index_put_", indexing.IndexPut, values, index=index)

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
    global Tensor, arith, indexing, unary
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
