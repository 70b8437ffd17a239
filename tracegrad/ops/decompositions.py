"""``torch.linalg`` on the array module's ``linalg``: inv, det, slogdet, solve, cholesky,
qr, svd, eigh, pinv, lstsq, cross. Every op works on batches (leading dims) and records
torch's node (LinalgInvExBackward0, LinalgSvdBackward0, ...).

The backward formulas are torch's (FunctionsManual.cpp), written with tensor ops so they
differentiate again. Where a formula needs a triangular solve it uses the inverse of the
triangular factor instead: the same value, and the factors here are small.
"""

from __future__ import annotations

import numpy as np

from .._layout import column_major, row_major
from ..autograd.function import Op
from ..autograd.grad_mode import state
from ..autograd.quiet import silenced
from ..backends import array_module
from ..errors import LinAlgError, ShapeError, UnsupportedDTypeError
from ..tensor import Tensor
from . import _math
from ._math import matmul  # Tensors (recorded, tracegrad.matmul) or arrays
from ._saved import as_torch_int, show_saved


def _mT(value):
    """The last two dimensions swapped: a Tensor (recorded) or an array view."""
    return value.swapaxes(-2, -1)


def _tril(value, diagonal: int = 0):
    """The lower triangle of each matrix: a Tensor (recorded) or an array."""
    if value.__class__ is Tensor:
        return value.tril(diagonal)
    return _math.xp(value).tril(value, diagonal)


def _float_only(op_name: str, a) -> None:
    if a._array.dtype.kind != "f":
        from .pointwise import _torch_type_name

        raise UnsupportedDTypeError(
            f"{op_name}: Expected a floating point or complex tensor as input. Got "
            f"{_torch_type_name(a._array.dtype)} ({a._describe()}). Hint: call .float() or "
            ".double() first.")


def _matrices(op_name: str, a, square: bool = True) -> None:
    x = a._array
    if x.ndim < 2:
        raise ShapeError(f"{op_name}: The input tensor A must have at least 2 dimensions. "
                         f"({a._describe()}) Hint: a matrix, or a batch of them, is needed; "
                         "unsqueeze a vector.")
    _float_only(op_name, a)
    if square and x.shape[-1] != x.shape[-2]:
        raise ShapeError(
            f"{op_name}: A must be batches of square matrices, but they are {x.shape[-2]} by "
            f"{x.shape[-1]} matrices ({a._describe()}). Hint: only square matrices have "
            "this; pinv or lstsq take rectangular ones.")


def _linalg(a):
    return a._xp.linalg


def _eye_like(value):
    n = value.shape[-1]
    return _math.constant(value, _math.xp(value).eye(n, dtype=_math.numpy_dtype(value)))


class Inv(Op):
    node_name = "LinalgInvExBackward0"
    array_backward = True
    saves_output = True

    @staticmethod
    def forward(ctx, a):
        _matrices("linalg.inv", a)
        try:
            return column_major(_linalg(a).inv(a._array))  # (LAPACK's layout, as torch's)
        except np.linalg.LinAlgError:
            raise LinAlgError(
                f"linalg.inv: The diagonal element is zero, the inversion could not be "
                f"completed because the input matrix is singular. ({a._describe()}) Hint: "
                "use linalg.pinv for a least-squares inverse, or add a small multiple of "
                "the identity.") from None

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        inverse_t = _mT(result)
        return (-matmul(matmul(inverse_t, grad), inverse_t),)


class Det(Op):
    node_name = "LinalgDetBackward0"
    array_backward = True
    saves_output = True

    @staticmethod
    @silenced
    def forward(ctx, a):
        _matrices("linalg.det", a)
        ctx.save_for_backward(a)
        return a._xp.asarray(_linalg(a).det(a._array))

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        scale = _math.unsqueeze(_math.unsqueeze(grad * result, -1), -1)
        if (_math.array_of(result) != 0).all():
            return (scale * _mT(_math.apply(Inv, a)),)
        # a singular matrix: the cofactor matrix from the SVD, det(U) det(V) U diag(prod of
        # the other singular values) V^T (no inverse needed)
        cofactors = _cofactors(_math.xp(a), _math.array_of(a))
        return (_math.constant(grad, cofactors)
                * _math.unsqueeze(_math.unsqueeze(grad, -1), -1),)


def _cofactors(xp, x):
    u, s, vh = xp.linalg.svd(x)
    n = s.shape[-1]
    others = xp.stack([xp.prod(xp.delete(s, i, axis=-1), axis=-1) for i in range(n)], axis=-1) \
        if n else s
    sign = xp.linalg.det(u) * xp.linalg.det(vh)
    return (u * others[..., None, :]) @ vh * sign[..., None, None]


class Slogdet(Op):
    """(sign, log|det|); only log|det| carries a gradient."""

    node_name = "LinalgSlogdetBackward0"
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, a):
        _matrices("linalg.slogdet", a)
        ctx.save_for_backward(a)
        sign, logabsdet = _linalg(a).slogdet(a._array)
        xp = a._xp
        return xp.asarray(sign, dtype=a._array.dtype), xp.asarray(logabsdet)

    @staticmethod
    def backward(ctx, grad_sign, grad_logabsdet):
        (a,) = ctx.saved_tensors
        return (_math.unsqueeze(_math.unsqueeze(grad_logabsdet, -1), -1)
                * _mT(_math.apply(Inv, a)),)


def _vector_rhs(a, b) -> bool:
    """torch.linalg.solve's rule: B is a (batch of) vector(s) when it is 1-D, or when it has
    one dim fewer than A and matches A's shape without its last dim."""
    return b._array.ndim == 1 or (b._array.ndim == a._array.ndim - 1
                                  and b._array.shape == a._array.shape[:-1])


class Solve(Op):
    """``solve(A, B)``: X with A X = B."""

    node_name = "LinalgSolveExBackward0"
    array_backward = True
    saves_output = True

    @staticmethod
    def forward(ctx, a, b, left=True):
        _matrices("torch.linalg.solve", a)
        if not left:
            raise ShapeError("linalg.solve: left=False is not supported by tracegrad yet. Hint: "
                             "solve(A.mT, B.mT).mT solves X A = B.")
        if a._array.dtype != b._array.dtype:
            raise ShapeError(
                f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                f"{a.dtype.name} and B of type {b.dtype.name} instead ({a._describe()} and "
                f"{b._describe()})")
        ctx.save_for_backward(a)
        ctx.vector = _vector_rhs(a, b)
        y = b._array[..., None] if ctx.vector else b._array
        xp = a._xp
        try:
            batch = xp.broadcast_shapes(a._array.shape[:-2], y.shape[:-2])
            x = _linalg(a).solve(xp.broadcast_to(a._array, batch + a._array.shape[-2:]),
                                 xp.broadcast_to(y, batch + y.shape[-2:]))
        except np.linalg.LinAlgError:
            raise LinAlgError(
                f"torch.linalg.solve: The solver failed because the input matrix is singular. "
                f"({a._describe()}) Hint: linalg.lstsq finds a least-squares solution.") \
                from None
        except ValueError:
            raise ShapeError(
                f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                f"({list(a._array.shape)} and {list(b._array.shape)}) ({a._describe()} and "
                f"{b._describe()})") from None
        return x[..., 0] if ctx.vector else column_major(x)

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_b = _math.apply(Solve, _mT(a), grad)
        grad_a = None
        if needs[0]:
            if ctx.vector:
                grad_a = -_math.unsqueeze(grad_b, -1) * _math.unsqueeze(result, -2)
            else:
                grad_a = -matmul(grad_b, _mT(result))
        # (each as broadcast: the engine sums it to its input's shape)
        return grad_a, (grad_b if needs[1] else None), None


class Cholesky(Op):
    """Lower (or upper) triangular L with A = L L^T. Reads A's lower triangle."""

    node_name = "LinalgCholeskyExBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("L", "upper=upper")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, upper=False):
        _matrices("linalg.cholesky", a)
        ctx.upper = upper
        try:
            lower = _linalg(a).cholesky(a._array)
        except np.linalg.LinAlgError:
            raise LinAlgError(
                f"linalg.cholesky: The factorization could not be completed because the input "
                f"is not positive-definite. ({a._describe()}) Hint: a covariance estimate may "
                "need a small multiple of the identity added.") from None
        return column_major(_swap_last(a._xp, lower) if upper else lower)

    @staticmethod
    def backward(ctx, grad):
        (factor,) = ctx.saved_tensors
        lower = _mT(factor) if ctx.upper else factor
        grad_lower = _mT(grad) if ctx.upper else grad
        middle = _tril(matmul(_mT(lower), grad_lower))
        middle = (middle + _mT(_tril(middle, -1))) * 0.5
        inverse = _math.apply(Inv, lower)
        return (matmul(matmul(_mT(inverse), middle), inverse), None)


def _swap_last(xp, x):
    return xp.swapaxes(x, -1, -2).copy()


class Qr(Op):
    """(Q, R) with A = QR; mode "reduced" (default), "complete" or "r"."""

    node_name = "LinalgQrBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, mode="reduced"):
        _matrices("linalg.qr", a, square=False)
        if mode not in ("reduced", "complete", "r"):
            raise ShapeError(f"qr received unrecognized mode '{mode}' but expected one of "
                             "'reduced' (default), 'r', or 'complete'")
        ctx.mode = mode
        q, r = _linalg(a).qr(a._array, mode="complete" if mode == "complete" else "reduced")
        ctx.save_for_backward(a)
        ctx.q, ctx.r = q, r
        if mode == "r":
            return a._xp.zeros((0,), dtype=a._array.dtype), column_major(r)
        return column_major(q), column_major(r)

    @staticmethod
    def backward(ctx, grad_q, grad_r):
        (a,) = ctx.saved_tensors
        m, n = a.shape[-2:]
        if ctx.mode == "r":
            from ..errors import AutogradError

            raise AutogradError(
                "The derivative of linalg.qr depends on Q, which is not computed when "
                "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                "differentiate through linalg.qr.")
        if ctx.mode == "complete" and m > n:
            from ..errors import AutogradError

            raise AutogradError(
                "The QR decomposition is not differentiable when mode='complete' and "
                "nrows > ncols.")
        if state.grad_enabled:  # create_graph: Q and R must carry A's graph
            q, r = Qr.apply(a, "reduced" if ctx.mode == "r" else ctx.mode)
        else:
            q, r = _math.constant(grad_q, ctx.q), _math.constant(grad_q, ctx.r)
        if m >= n:
            return (_qr_grad(q, r, grad_q, grad_r), None)
        # wide A = [X | Y] with X square: Q R_X = X, R = [R_X | Q^T Y]
        y = _math.narrow(a, a.ndim - 1, m, n)
        r_x = _math.narrow(r, r.ndim - 1, 0, m)
        grad_r_x = _math.narrow(grad_r, grad_r.ndim - 1, 0, m)
        grad_r_y = _math.narrow(grad_r, grad_r.ndim - 1, m, n)
        grad_y = matmul(q, grad_r_y)
        grad_x = _qr_grad(q, r_x, grad_q + matmul(y, _mT(grad_r_y)), grad_r_x)
        return (_math.cat((grad_x, grad_y), -1), None)


def _qr_grad(q, r, grad_q, grad_r):
    """A = QR, A tall or square: gA = (gQ + Q copyltu(M)) R^{-T}, M = R gR^T - gQ^T Q."""
    m = matmul(r, _mT(grad_r)) - matmul(_mT(grad_q), q)
    lower = _tril(m, -1)
    copied = lower + _mT(lower) + Diag(m)
    return matmul(grad_q + matmul(q, copied), _mT(_math.apply(Inv, r)))


def Diag(tensor):
    from .rearrange import DiagEmbed, DiagonalCopy

    return _math.apply(DiagEmbed, _math.apply(DiagonalCopy, tensor, 0, -2, -1), 0, -2, -1)


class Svd(Op):
    """(U, S, Vh) with A = U diag(S) Vh."""

    node_name = "LinalgSvdBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, full_matrices=True, compute_uv=True):
        _matrices("linalg.svd", a, square=False)
        u, s, vh = _linalg(a).svd(a._array, full_matrices=full_matrices)
        ctx.save_for_backward(a)
        ctx.u, ctx.s, ctx.vh = u, s, vh
        ctx.full_matrices = full_matrices
        if not compute_uv:
            return s
        return column_major(u), s, column_major(vh)

    @staticmethod
    def backward(ctx, *grads):
        if len(grads) == 1:
            grad_u, grad_s, grad_vh = None, grads[0], None
        else:
            grad_u, grad_s, grad_vh = grads
        k = ctx.s.shape[-1]
        if state.grad_enabled:  # create_graph: the factors must carry A's graph
            (a,) = ctx.saved_tensors
            u, s, vh = Svd.apply(a, False, True)
        else:
            u = _math.constant(grad_s, ctx.u[..., :k])
            vh = _math.constant(grad_s, ctx.vh[..., :k, :])
            s = _math.constant(grad_s, ctx.s)
        if grad_u is not None and grad_u.shape[-1] != k:
            grad_u = _math.narrow(grad_u, grad_u.ndim - 1, 0, k)
        if grad_vh is not None and grad_vh.shape[-2] != k:
            grad_vh = _math.narrow(grad_vh, grad_vh.ndim - 2, 0, k)
        return (_svd_grad(u, s, vh, grad_u, grad_s, grad_vh), None, None)


def _svd_grad(u, s, vh, grad_u, grad_s, grad_vh):
    """torch's svd_backward for real matrices (reduced U, S, Vh)."""
    m, n = u.shape[-2], vh.shape[-1]
    k = s.shape[-1]
    if _all_zero(grad_u) and _all_zero(grad_vh):
        return matmul(u * _math.unsqueeze(grad_s, -2), vh)
    v = _mT(vh)
    grad_v = _mT(grad_vh)
    s2 = s * s
    gap = _math.unsqueeze(s2, -2) - _math.unsqueeze(s2, -1)
    gap = gap + _eye_like(gap)  # 1 on the diagonal, where the skew parts are 0 anyway
    skew_u = matmul(_mT(u), grad_u)
    skew_u = skew_u - _mT(skew_u)
    skew_v = matmul(_mT(v), grad_v)
    skew_v = skew_v - _mT(skew_v)
    inner = (skew_u * _math.unsqueeze(s, -2) + _math.unsqueeze(s, -1) * skew_v) / gap
    from .rearrange import DiagEmbed

    inner = inner + _math.apply(DiagEmbed, grad_s, 0, -2, -1)
    if m > k:
        scaled = grad_u / _math.unsqueeze(s, -2)
        middle = matmul(u, inner) + scaled - matmul(u, matmul(_mT(u), scaled))
        return matmul(middle, vh)
    if n > k:
        scaled = grad_v / _math.unsqueeze(s, -2)
        middle = matmul(inner, vh) + _mT(scaled) - matmul(matmul(_mT(scaled), v), vh)
        return matmul(u, middle)
    return matmul(u, matmul(inner, vh))


def _all_zero(grad) -> bool:
    return grad is None or not _math.array_of(grad).any()


class Eigh(Op):
    """(eigenvalues ascending, eigenvectors) of a symmetric matrix (reads one triangle)."""

    node_name = "LinalgEighBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, UPLO="L", eigenvectors=True):
        _matrices("linalg.eigh", a)
        if UPLO not in ("L", "U"):
            raise ShapeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
        values, vectors = _linalg(a).eigh(a._array, UPLO=UPLO)
        ctx.values, ctx.vectors = values, vectors
        ctx.save_for_backward(a)
        ctx.uplo = UPLO
        if not eigenvectors:
            return values
        return values, column_major(vectors)

    @staticmethod
    def backward(ctx, *grads):
        grad_values = grads[0]
        grad_vectors = grads[1] if len(grads) > 1 else None
        if state.grad_enabled:  # create_graph: the eigenvectors must carry A's graph
            (a,) = ctx.saved_tensors
            values, vectors = Eigh.apply(a, ctx.uplo, True)
        else:
            vectors = _math.constant(grad_values, ctx.vectors)
            values = _math.constant(grad_values, ctx.values)
        from .rearrange import DiagEmbed

        if _all_zero(grad_vectors):
            inner = _math.apply(DiagEmbed, grad_values, 0, -2, -1)
        else:
            projected = matmul(_mT(vectors), grad_vectors)
            projected = (projected - _mT(projected)) * 0.5
            gap = _math.unsqueeze(values, -2) - _math.unsqueeze(values, -1)
            gap = gap + _eye_like(gap)
            inner = projected / gap + _math.apply(DiagEmbed, grad_values, 0, -2, -1)
        return (matmul(matmul(vectors, inner), _mT(vectors)), None, None)


class Pinv(Op):
    node_name = "LinalgPinvBackward0"
    array_backward = True
    saves_output = True

    @staticmethod
    def forward(ctx, a, rtol=None, hermitian=False):
        _matrices("linalg.pinv", a, square=False)
        ctx.save_for_backward(a)
        x = a._array
        if rtol is None:
            rtol = max(x.shape[-2:]) * np.finfo(x.dtype).eps
        return _linalg(a).pinv(x, rcond=rtol, hermitian=hermitian)

    @staticmethod
    def backward(ctx, grad):
        a, pinv = ctx.saved_tensors
        return (_pinv_grad(grad, pinv, a), None, None)


def _pinv_grad(grad, pinv, a):
    """torch's pinv_backward (real case)."""
    m, n = a.shape[-2:]
    pinv_t = _mT(pinv)
    grad_t = _mT(grad)
    if m <= n:
        k = matmul(grad_t, pinv)
        k_pinv_t = matmul(k, pinv_t)
        return (-_mT(matmul(pinv, k)) + k_pinv_t - matmul(matmul(a, pinv), k_pinv_t)
                + matmul(matmul(pinv_t, pinv), grad_t - matmul(k, a)))
    k = matmul(pinv, grad_t)
    pinv_t_k = matmul(pinv_t, k)
    return (-_mT(matmul(k, pinv)) + pinv_t_k - matmul(pinv_t_k, matmul(pinv, a))
            + matmul(matmul(grad_t - matmul(a, k), pinv), pinv_t))


def _gels_layout(solution, rows: int):
    """LAPACK's least-squares solvers write the solution over B, in a column-major buffer of
    max(m, n) rows: torch's solution is the top of it, strides (..., 1, max(m, n))."""
    count = solution.shape[-2]
    if rows == count:
        return column_major(solution)
    xp = array_module(solution)
    buffer = column_major(xp.zeros(solution.shape[:-2] + (rows, solution.shape[-1]),
                                   dtype=solution.dtype))
    buffer[..., :count, :] = solution
    return buffer[..., :count, :]


class Lstsq(Op):
    """(solution, residuals, rank, singular_values) of min ||A X - B||, computed as
    pinv(A) B (torch's CPU default driver 'gelsy': empty residuals and singular values)."""

    node_name = "LinalgLstsqBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, b, rcond=None, driver=None):
        _matrices("linalg.lstsq", a, square=False)
        xp = a._xp
        x = a._array
        if driver not in (None, "gelsy", "gelsd", "gelss", "gels"):
            raise ShapeError(f"torch.linalg.lstsq: parameter `driver` should be one of "
                             f"(gels, gelsy, gelsd, gelss), but got {driver}")
        vector = b._array.ndim == x.ndim - 1
        y = b._array[..., None] if vector else b._array
        if y.shape[-2] != x.shape[-2]:
            raise ShapeError(
                f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) "
                f"({a._describe()} and {b._describe()})")
        rtol = rcond if rcond is not None else max(x.shape[-2:]) * np.finfo(x.dtype).eps
        pinv = xp.linalg.pinv(x, rcond=rtol)
        solution = pinv @ y
        ctx.save_for_backward(a, b)
        ctx.pinv, ctx.vector, ctx.rtol = pinv, vector, rtol
        rank = xp.asarray(xp.linalg.matrix_rank(x, tol=None), dtype=np.int64)
        empty = xp.zeros((0,), dtype=x.dtype)
        return (solution[..., 0] if vector else _gels_layout(solution, max(x.shape[-2:]))), \
            empty, rank, empty.copy()

    @staticmethod
    def backward(ctx, grad_solution, _grad_residuals=None, _grad_rank=None, _grad_sv=None):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if state.grad_enabled:  # create_graph: pinv(A) must carry A's graph
            pinv = Pinv.apply(a, ctx.rtol, False)
        else:
            pinv = _math.constant(grad_solution, ctx.pinv)
        if ctx.vector:
            grad_solution = _math.unsqueeze(grad_solution, -1)
            b = _math.unsqueeze(b, -1)
        grad_a = _pinv_grad(matmul(grad_solution, _mT(b)), pinv, a) if needs[0] else None
        grad_b = None
        if needs[1]:
            grad_b = matmul(_mT(pinv), grad_solution)
            if ctx.vector:
                grad_b = grad_b.squeeze(-1)
        return grad_a, grad_b, None, None


class Cross(Op):
    """The cross product along a dim of size 3."""

    node_name = "LinalgCrossBackward0"
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a, b, dim=-1):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        from ._checks import wrap_dim

        x, y = a._array, b._array
        if x.ndim != y.ndim:
            raise ShapeError(
                f"linalg.cross: inputs must have the same number of dimensions. "
                f"({a._describe()} and {b._describe()})")
        axis = wrap_dim(dim, x.ndim, a)
        if x.shape[axis] != 3 or y.shape[axis] != 3:
            raise ShapeError(
                f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                f"{x.shape[axis]} and {y.shape[axis]} ({a._describe()} and {b._describe()}). "
                "Hint: the cross product is defined for 3-vectors; pass dim= for the axis "
                "that has them.")
        ctx.save_for_backward(a, b)
        ctx.axis = axis
        xp = a._xp
        try:
            # (torch allocates the result contiguous; NumPy's cross moves the axis)
            return row_major(xp.cross(x, y, axis=axis))
        except ValueError:
            from ._operands import broadcast_error

            raise broadcast_error("linalg.cross", a, b) from None

    @staticmethod
    def backward(ctx, grad):
        # (each as broadcast: the engine sums it to its input's shape)
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        axis = ctx.axis
        return (_math.apply(Cross, b, grad, axis) if needs[0] else None,
                _math.apply(Cross, grad, a, axis) if needs[1] else None, None)

show_saved(Cross, "dim", lambda node: as_torch_int(node.given))
