"""More matrix ops with torch's nodes: addr (outer-product update), block_diag,
cholesky_solve, cholesky_inverse, renorm.
"""

from __future__ import annotations

from .._layout import column_major
from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..errors import ShapeError
from . import _math
from ._checks import wrap_dim
from ._math import (
    matmul,  # Tensors (recorded, tracegrad.matmul) or arrays
)
from ._saved import as_torch_int, show_saved
from .linalg import Mv, _combine, _input_grad, _scaled


def _mT(value):
    """The last two dimensions swapped: a Tensor (recorded) or an array view."""
    return value.swapaxes(-2, -1)


class Addr(Op):
    """``beta * input + alpha * outer(vec1, vec2)``."""

    node_name = "AddrBackward0"
    array_backward = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("vec1", "vec2", "alpha=alpha", "beta=beta")

    @staticmethod
    @silenced
    def forward(ctx, a, vec1, vec2, beta=1, alpha=1):
        for name, vector in (("vec1", vec1), ("vec2", vec2)):
            if vector._array.ndim != 1:
                raise ShapeError(
                    f"addr: Expected 1-D argument {name}, but got {vector._array.ndim}-D "
                    f"({vector._describe()}). Hint: addr adds the outer product of two "
                    "vectors.")
        ctx.save_for_backward(vec1, vec2)
        ctx.beta, ctx.alpha = beta, alpha
        product = vec1._array[:, None] * vec2._array[None, :]
        return _combine(a._xp, a._array, product, beta, alpha, "addr", a)

    @staticmethod
    def backward(ctx, grad):
        vec1, vec2 = ctx.saved_tensors
        needs = ctx.needs_input_grad
        alpha = ctx.alpha
        return (_input_grad(grad, ctx.beta, ctx._input_meta[0][0]) if needs[0] else None,
                _scaled(_math.apply(Mv, grad, vec2), alpha) if needs[1] else None,
                _scaled(_math.apply(Mv, _math.t(grad), vec1), alpha) if needs[2] else None,
                None, None)


class BlockDiag(Op):
    """The tensors (each 0-, 1- or 2-D) placed along the diagonal of a zero matrix."""

    node_name = "BlockDiagBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, *tensors):
        shapes = []
        for position, tensor in enumerate(tensors):
            x = tensor._array
            if x.ndim > 2:
                raise ShapeError(
                    f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input "
                    f"{position} has {x.ndim} dimensions ({tensor._describe()}). Hint: "
                    "reshape batches into matrices first.")
            shapes.append((1, 1) if x.ndim == 0 else (1, x.shape[0]) if x.ndim == 1
                          else x.shape)
        if not tensors:
            from .. import _dtype

            return _zeros_default((0, 0), _dtype.default_float.numpy)
        from .. import _dtype

        dtype = tensors[0]._array.dtype
        for tensor in tensors[1:]:
            dtype = _dtype.promote(dtype, tensor._array.dtype)
        rows = sum(shape[0] for shape in shapes)
        columns = sum(shape[1] for shape in shapes)
        xp = tensors[0]._xp
        out = xp.zeros((rows, columns), dtype=dtype)
        row = column = 0
        for tensor, (height, width) in zip(tensors, shapes):
            out[row:row + height, column:column + width] = tensor._array.reshape(height, width)
            row, column = row + height, column + width
        ctx.shapes = shapes
        return out

    @staticmethod
    def backward(ctx, grad):
        grads, row, column = [], 0, 0
        for (height, width), needed, (shape, _dtype) in zip(ctx.shapes, ctx.needs_input_grad,
                                                            ctx._input_meta):
            if needed:
                grads.append(grad[row:row + height, column:column + width].reshape(shape))
            else:
                grads.append(None)
            row, column = row + height, column + width
        return tuple(grads)


def _zeros_default(shape, dtype):
    import numpy as np

    return np.zeros(shape, dtype=dtype)


def _check_factor(op_name: str, factor) -> None:
    x = factor._array
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"{op_name}: A must be batches of square matrices, but got "
                         f"{factor._describe()}. Hint: pass the Cholesky factor from "
                         "linalg.cholesky.")


class CholeskySolve(Op):
    """X with A X = B, given A's Cholesky factor L (A = L L^T, or U^T U with upper)."""

    node_name = "CholeskySolveBackward0"
    array_backward = True
    saves_output = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "input2", "result", "upper=upper")

    @staticmethod
    def forward(ctx, b, factor, upper=False):
        _check_factor("cholesky_solve", factor)
        xp = b._xp
        lower = xp.swapaxes(factor._array, -1, -2) if upper else factor._array
        ctx.save_for_backward(b, factor)
        ctx.upper = upper
        inner = xp.linalg.solve(lower, b._array)
        return column_major(xp.linalg.solve(xp.swapaxes(lower, -1, -2), inner))

    @staticmethod
    def backward(ctx, grad):
        b, factor, result = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_b = _math.apply(CholeskySolve, grad, factor, ctx.upper)
        grad_factor = None
        if needs[1]:
            common = matmul(grad_b, _mT(result))
            common = common + _mT(common)
            grad_factor = -matmul(factor, common) if ctx.upper else -matmul(common, factor)
        # (grad_b as broadcast: the engine sums it to b's shape)
        return (grad_b if needs[0] else None), grad_factor, None


class CholeskyInverse(Op):
    """(L L^T)^-1 from the Cholesky factor L (or U^T U with upper)."""

    node_name = "CholeskyInverseBackward0"
    array_backward = True
    saves_output = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "result", "upper=upper")

    @staticmethod
    @silenced
    def forward(ctx, factor, upper=False):
        _check_factor("cholesky_inverse", factor)
        xp = factor._xp
        x = factor._array
        matrix = xp.swapaxes(x, -1, -2) @ x if upper else x @ xp.swapaxes(x, -1, -2)
        ctx.save_for_backward(factor)
        ctx.upper = upper
        return column_major(xp.linalg.inv(matrix))  # (LAPACK potri's layout, as torch's)

    @staticmethod
    def backward(ctx, grad):
        factor, inverse = ctx.saved_tensors
        common = grad + _mT(grad)
        common = matmul(matmul(inverse, common), inverse)
        if ctx.upper:
            return (-matmul(factor, common), None)
        return (-matmul(common, factor), None)


class Renorm(Op):
    """Each slice along ``dim`` whose p-norm exceeds ``maxnorm`` scaled down to it (torch
    divides by norm + 1e-7)."""

    node_name = "RenormBackward0"
    array_backward = True
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "maxnorm=maxnorm", "p=given_p")

    @staticmethod
    @silenced
    def forward(ctx, a, p, dim, maxnorm):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        from .norms import VectorNorm

        x = a._array
        axis = wrap_dim(dim, x.ndim, a)
        if p <= 0:
            raise ShapeError(f"renorm: non-positive-norm not supported (p={p}, "
                             f"{a._describe()})")
        others = tuple(d for d in range(x.ndim) if d != axis)
        norms = VectorNorm.forward(VectorNorm._scratch, a, p, others, True, None)
        VectorNorm._scratch._to_save = ()
        xp = a._xp
        scale = xp.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0).astype(x.dtype)
        ctx.save_for_backward(a)
        ctx.p, ctx.others, ctx.maxnorm = float(p), others, maxnorm
        ctx.given_p = p  # as written: grad_fn._saved_p shows it
        return x * scale

    @staticmethod
    def backward(ctx, grad):
        from .norms import VectorNorm

        (a,) = ctx.saved_tensors
        norm = _math.apply(VectorNorm, a, ctx.p, ctx.others, True, None)
        over = norm > ctx.maxnorm
        denominator = norm + 1e-7
        scale = ctx.maxnorm / denominator
        # d(x * c / (n + eps)) = c/(n+eps) dx - c x/(n+eps)^2 dn, dn/dx = x|x|^(p-2)/n^(p-1)
        inner = _math.sum_keepdims(grad * a, ctx.others)
        slope = a * abs(a) ** (ctx.p - 2) / norm ** (ctx.p - 1) if ctx.p != 2 else a / norm
        scaled = grad * scale - slope * inner * ctx.maxnorm / (denominator * denominator)
        return (_math.where(over, scaled, grad), None, None, None)

show_saved(Renorm, "dim", lambda node: as_torch_int(node.given))
