"""``tracegrad.linalg``: torch.linalg's functions, with gradients.

>>> import tracegrad as torch
>>> a = torch.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
>>> torch.linalg.det(a)
tensor(5., grad_fn=<LinalgDetBackward0>)
>>> torch.linalg.solve(a, torch.tensor([3.0, 5.0]))
tensor([0.8000, 1.4000], grad_fn=<LinalgSolveExBackward0>)

Results with several parts are named tuples, as in torch (``eigh(a).eigenvalues``).
"""

from __future__ import annotations

import math
from collections import namedtuple

from ._memory_format import contiguous_format
from ._unsupported import missing_attribute
from .errors import ArgumentTypeError, InvalidValueError, LinAlgError, ShapeError
from .ops import decompositions as _decompositions
from .ops import linalg as _products
from .ops import norms as _norms
from .tensor import Tensor

SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
QrResult = namedtuple("linalg_qr", ["Q", "R"])
SvdResult = namedtuple("linalg_svd", ["U", "S", "Vh"])
EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def inv(A: Tensor) -> Tensor:
    return _decompositions.Inv.apply(A)


def det(A: Tensor) -> Tensor:
    return _decompositions.Det.apply(A)


def slogdet(A: Tensor) -> SlogdetResult:
    return SlogdetResult(*_decompositions.Slogdet.apply(A))


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    return _decompositions.Solve.apply(A, B, left)


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    return _decompositions.Cholesky.apply(A, upper)


def qr(A: Tensor, mode: str = "reduced") -> QrResult:
    return QrResult(*_decompositions.Qr.apply(A, mode))


def svd(A: Tensor, full_matrices: bool = True, *, driver=None) -> SvdResult:
    return SvdResult(*_decompositions.Svd.apply(A, full_matrices, True))


def svdvals(A: Tensor, *, driver=None) -> Tensor:
    return _decompositions.Svd.apply(A, False, False)


def eigh(A: Tensor, UPLO: str = "L") -> EighResult:
    return EighResult(*_decompositions.Eigh.apply(A, UPLO, True))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    return _decompositions.Eigh.apply(A, UPLO, False)


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    if atol is not None:
        raise InvalidValueError("linalg.pinv: atol= is not supported by tracegrad yet. Hint: "
                                "use rtol= (relative to the largest singular value).")
    return _decompositions.Pinv.apply(A, rtol, hermitian)


def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None) -> LstsqResult:
    return LstsqResult(*_decompositions.Lstsq.apply(A, B, rcond, driver))


def matrix_rank(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The number of singular values above the tolerance (an int64 tensor, no gradient)."""
    _decompositions._matrices("linalg.matrix_rank", A, square=False)
    xp = A._xp
    singular = xp.linalg.svd(A._array, compute_uv=False)
    largest = singular.max(axis=-1, keepdims=True) if singular.shape[-1] else singular
    if atol is None and rtol is None:
        rtol = max(A._array.shape[-2:]) * xp.finfo(A._array.dtype).eps
    tolerance = max(atol or 0.0, 0.0)
    if rtol is not None:
        tolerance = xp.maximum(tolerance, rtol * largest)
    return Tensor._wrap(xp.asarray((singular > tolerance).sum(axis=-1), dtype="int64"), False)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    return _decompositions.Cross.apply(input, other, dim)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return _products.matmul(input, other)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    return (x * y).sum(dim=dim)


def multi_dot(tensors) -> Tensor:
    """The product of a chain of matrices, multiplied in the cheapest order (the first and
    last may be vectors)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise InvalidValueError(
            f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_vector = tensors[0]._array.ndim == 1
    last_vector = tensors[-1]._array.ndim == 1
    if first_vector:
        tensors[0] = tensors[0].unsqueeze(0)
    if last_vector:
        tensors[-1] = tensors[-1].unsqueeze(-1)
    for position, tensor in enumerate(tensors):
        if tensor._array.ndim != 2:
            raise ShapeError(f"multi_dot(): tensor {position} must be 2D but got "
                             f"{tensor._array.ndim}D ({tensor._describe()})")
    result = _chain(tensors, _chain_order([t._array.shape for t in tensors]), 0,
                    len(tensors) - 1)
    shape = tuple(size for size, drop in
                  zip(result._array.shape, (first_vector, last_vector)) if not drop)
    from .ops.shape import Reshape

    return Reshape.apply(result, shape=shape)


def _chain_order(shapes) -> list:
    """The classic matrix-chain dynamic programme: split[i][j] is where to split i..j."""
    count = len(shapes)
    dims = [shapes[0][0]] + [shape[1] for shape in shapes]
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                total = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if total < cost[i][j]:
                    cost[i][j], split[i][j] = total, k
    return split


def _chain(tensors, split, i: int, j: int):
    if i == j:
        return tensors[i]
    k = split[i][j]
    return _products.Mm.apply(_chain(tensors, split, i, k), _chain(tensors, split, k + 1, j))


# -- norms -------------------------------------------------------------------------------
def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    return _norms.VectorNorm.apply(x, ord, dim, keepdim, dtype)


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,
                dtype=None) -> Tensor:
    if dtype is not None:
        A = A.to(dtype)
    if A._array.ndim < 2:
        raise ShapeError(f"linalg.matrix_norm: The input tensor A must have at least 2 "
                         f"dimensions. ({A._describe()})")
    dims = tuple(dim)
    if len(dims) != 2:
        raise ShapeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    if ord == "fro":  # torch's node shows the dims wrapped (0, 1), not (-2, -1)
        from .ops.shape import wrap_dim

        dims = tuple(wrap_dim(d, A._array.ndim) for d in dims)
        return _norms.VectorNorm.apply(A, 2, dims, keepdim, None)
    if ord == "nuc" or ord in (2, -2):
        # torch's steps: the two dims permuted to the end (always: PermuteBackward0 even
        # for (-2, -1)), svdvals, a reduction over them, and with keepdim the reduced dims
        # put back by one unsqueeze and the inverse permutation
        from .ops.shape import wrap_dim

        row, column = (wrap_dim(d, A._array.ndim) for d in dims)
        order = [d for d in range(A._array.ndim) if d not in (row, column)] + [row, column]
        singular = _decompositions.Svd.apply(A.permute(*order), False, False)
        reduce = singular.sum if ord == "nuc" else \
            singular.amax if ord == 2 else singular.amin
        result = reduce(dim=-1, keepdim=keepdim)
        if keepdim:
            inverse = sorted(range(len(order)), key=order.__getitem__)
            result = result.unsqueeze(-1).permute(*inverse)
        return result
    if ord in (1, -1, math.inf, -math.inf):
        from .ops.shape import wrap_dim

        row, column = (wrap_dim(d, A._array.ndim) for d in dims)
        summed_dim, reduced_dim = (row, column) if ord in (1, -1) else (column, row)
        # torch's: vector_norm(A, 1.0) along one dim (LinalgVectorNormBackward0), then amax
        sums = _norms.VectorNorm.apply(A, 1.0, (summed_dim,), keepdim, None)
        if not keepdim and reduced_dim > summed_dim:
            reduced_dim -= 1
        pick = sums.amax if ord > 0 else sums.amin
        return pick(dim=reduced_dim, keepdim=keepdim)
    raise InvalidValueError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``linalg.norm``: a vector norm, or a matrix norm when ``ord`` is given for a 2-D
    input (or ``dim`` is a 2-tuple)."""
    if dim is not None and not isinstance(dim, int):
        dim = tuple(dim)
    if ord is None:  # the 2-norm of the flattened input, or Frobenius over a 2-tuple dim
        # (ord 2.0, a float, as torch's node shows it)
        return vector_norm(A, 2.0, dim, keepdim, dtype=dtype)
    matrix_dims = dim if isinstance(dim, tuple) and len(dim) == 2 else (
        (-2, -1) if dim is None and A._array.ndim == 2 else None)
    if isinstance(ord, str) or matrix_dims is not None:
        if matrix_dims is None:
            raise ShapeError(
                f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                f"Got {A._array.ndim}D. ({A._describe()})")
        return matrix_norm(A, ord, matrix_dims, keepdim, dtype=dtype)
    if dim is None and A._array.ndim != 1:
        raise ShapeError(
            f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
            f"Got {A._array.ndim}D. ({A._describe()})")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def matrix_power(A: Tensor, n: int) -> Tensor:
    if not isinstance(n, int):
        raise ArgumentTypeError(f"matrix_power(): argument 'n' must be int, not "
                                f"{type(n).__name__}")
    _decompositions._matrices("linalg.matrix_power", A)
    # torch's steps, so the graph is torch's: n = 0 and 1 copy A (the identity is copied
    # into A's clone, so the result stays in A's graph: CopyBackwards), -1 inverts, 2 and 3
    # are fast paths, and larger powers square and multiply from the lowest bit.
    if n == 0:
        identity = Tensor._wrap(A._xp.eye(A._array.shape[-1], dtype=A._array.dtype), False)
        return A.clone(memory_format=contiguous_format).copy_(identity)
    if n == 1:
        return A.clone(memory_format=contiguous_format)
    if n == -1:
        return inv(A)
    base = inv(A) if n < 0 else A
    remaining = abs(n)
    if remaining == 2:
        return _products.matmul(base, base)
    if remaining == 3:
        return _products.matmul(_products.matmul(base, base), base)
    result = power = None
    while remaining:
        bit = remaining & 1
        remaining >>= 1
        power = base if power is None else _products.matmul(power, power)
        if bit:
            result = power if result is None else _products.matmul(result, power)
    return result


def __getattr__(name: str):
    raise missing_attribute("torch.linalg", name, "module 'tracegrad.linalg'")


__all__ = [
    "EighResult", "LinAlgError", "LstsqResult", "QrResult", "SlogdetResult", "SvdResult",
    "cholesky", "cross", "det", "eigh", "eigvalsh", "inv", "lstsq", "matmul", "matrix_norm",
    "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
    "svd", "svdvals", "vecdot", "vector_norm",
]
