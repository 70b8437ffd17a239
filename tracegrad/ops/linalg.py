"""Matrix products: mm, mv, dot and the general matmul."""

from __future__ import annotations

from ..autograd.function import Op
from ..errors import DTypeError, ShapeError
from ._operands import check_same_device
from .reduce import sum_to


def _check_dtypes(op_name: str, a, b) -> None:
    if a._array.dtype != b._array.dtype:
        raise DTypeError(
            f"{op_name}: expected both operands to have the same dtype, but got "
            f"{a.dtype.name} for input 0 ({a._describe()}) and {b.dtype.name} for input 1 "
            f"({b._describe()}). Hint: convert one with .to({a.dtype!r}) or .double().")


def _inner_mismatch(op_name: str, a, b, left: int, right: int) -> ShapeError:
    return ShapeError(
        f"{op_name}: cannot multiply {list(a.shape)} by {list(b.shape)}: inner dimensions "
        f"{left} and {right} differ\n  input 0: {a._describe()}\n  input 1: {b._describe()}"
        f"\nHint: the last dimension of input 0 must equal the first of input 1; transpose "
        f"with .t() or check which weight you meant.")


class Mm(Op):
    node_name = "MmBackward0"
    saved_names = ("self", "mat2")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, b):
        x, y = a._array, b._array
        if x.ndim != 2 or y.ndim != 2:
            which, tensor = (0, a) if x.ndim != 2 else (1, b)
            raise ShapeError(
                f"mm: expected 2-D tensors, but input {which} is {tensor._describe()}. "
                "Hint: use matmul (or @) for other ranks.")
        if x.shape[1] != y.shape[0]:
            raise _inner_mismatch("mm", a, b, x.shape[1], y.shape[0])
        if x.dtype is not y.dtype:
            _check_dtypes("mm", a, b)
        if type(x) is not type(y):
            check_same_device("mm", (a, b))
        ctx.save_for_backward(a, b)
        return x @ y

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        return (Mm.apply(grad, b.t()) if needs[0] else None,
                Mm.apply(a.t(), grad) if needs[1] else None)


class Matmul(Op):
    """matmul for every other rank combination, with NumPy's broadcasting of batch dims."""

    node_name = "MatmulBackward0"

    @staticmethod
    def forward(ctx, a, b):
        x, y = a._array, b._array
        if x.ndim == 0 or y.ndim == 0:
            raise ShapeError(
                f"matmul: both arguments need at least 1 dimension, got {a._describe()} and "
                f"{b._describe()}. Hint: use * for a product with a scalar.")
        left = x.shape[-1]
        right = y.shape[-2] if y.ndim > 1 else y.shape[0]
        if left != right:
            raise _inner_mismatch("matmul", a, b, left, right)
        if x.dtype is not y.dtype:
            _check_dtypes("matmul", a, b)
        ctx.save_for_backward(a, b)
        return x @ y

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        a2 = a.unsqueeze(0) if a.ndim == 1 else a
        b2 = b.unsqueeze(-1) if b.ndim == 1 else b
        g = grad
        if b.ndim == 1:  # first: for a dot product, grad is 0-d
            g = g.unsqueeze(-1)
        if a.ndim == 1:
            g = g.unsqueeze(-2)
        grad_a = grad_b = None
        if needs[0]:
            grad_a = sum_to(Matmul.apply(g, b2.transpose(-1, -2)), a2.shape)
            if a.ndim == 1:
                grad_a = grad_a.squeeze(0)
        if needs[1]:
            grad_b = sum_to(Matmul.apply(a2.transpose(-1, -2), g), b2.shape)
            if b.ndim == 1:
                grad_b = grad_b.squeeze(-1)
        return grad_a, grad_b


class Dot(Matmul):
    node_name = "DotBackward0"
    saved_names = ("self", "tensor")  # grad_fn._saved_<name>, as PyTorch names them


class Mv(Matmul):
    node_name = "MvBackward0"
    saved_names = ("self", "vec")  # grad_fn._saved_<name>, as PyTorch names them


def matmul(a, b):
    if a.ndim == 2 and b.ndim == 2:
        return Mm.apply(a, b)
    if a.ndim == 1 and b.ndim == 1:
        return Dot.apply(a, b)
    if a.ndim == 2 and b.ndim == 1:
        return Mv.apply(a, b)
    return Matmul.apply(a, b)


class Trace(Op):
    """``torch.trace(x)``: the sum of a matrix's main diagonal."""

    node_name = "TraceBackward0"

    @staticmethod
    def forward(ctx, a):
        x = a._array
        if x.ndim != 2:
            raise ShapeError(
                f"trace: expected a matrix, but got tensor with dim {x.ndim} "
                f"({a._describe()}). Hint: torch.trace is the matrix trace; tracegrad's "
                "recorder is tracegrad.record().")
        return a._xp.asarray(x.trace())

    @staticmethod
    def backward(ctx, grad):
        (shape, numpy_dtype), = ctx._input_meta
        identity = grad._wrap(grad._xp.eye(*shape, dtype=numpy_dtype), False)
        return (identity * grad,)
