"""Elementwise math, activations and matrix products.

A mixin of Tensor (``class Tensor(..., MathMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..autograd.function import apply_binary  # noqa: TC004 - bound at runtime by _bind()
    from ..ops import decompositions, indexing, linalg, pointwise, unary  # noqa: TC004 - bound at runtime by _bind()


SvdResult = namedtuple("svd", ["U", "S", "V"])


class MathMethods:
    __slots__ = ()

    def exp(self):
        return unary.Exp.apply(self)

    def log(self):
        return unary.Log.apply(self)

    def sqrt(self):
        return unary.Sqrt.apply(self)

    def abs(self):
        return unary.Abs.apply(self)

    def sin(self):
        return unary.Sin.apply(self)

    def cos(self):
        return unary.Cos.apply(self)

    def tanh(self):
        return unary.Tanh.apply(self)

    def sigmoid(self):
        return unary.Sigmoid.apply(self)

    def relu(self):
        return unary.Relu.apply(self)

    def clamp(self, min=None, max=None):
        return unary.clamp(self, min, max)

    def clamp_min(self, min):
        op = unary.ClampMinTensor if hasattr(min, "_array") else unary.ClampMin
        return op.apply(self, min)

    def clamp_max(self, max):
        op = unary.ClampMaxTensor if hasattr(max, "_array") else unary.ClampMax
        return op.apply(self, max)

    def maximum(self, other):
        return unary.Maximum.apply(self, other)

    def minimum(self, other):
        return unary.Minimum.apply(self, other)

    def softmax(self, dim, dtype=None):
        return unary.softmax(self, dim, dtype)

    def log_softmax(self, dim, dtype=None):
        return unary.log_softmax(self, dim, dtype)

    def sign(self):
        return pointwise.Sign.apply(self)

    # -- matrix products ----------------------------------------------------------------
    def mm(self, mat2):
        return apply_binary(linalg.Mm, self, mat2)  # (see ArithmeticMethods.__add__)

    def matmul(self, other):
        return linalg.matmul(self, other)

    def dot(self, other):
        return linalg.Dot.apply(self, other)

    def vdot(self, other):
        return linalg.Vdot.apply(self, other)

    def mv(self, vec):
        return linalg.Mv.apply(self, vec)

    def bmm(self, mat2):
        return linalg.Bmm.apply(self, mat2)

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        return linalg.Addmm.apply(self, mat1, mat2, beta, alpha)

    def addmv(self, mat, vec, *, beta=1, alpha=1):
        return linalg.Addmv.apply(self, mat, vec, beta, alpha)

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return linalg.Baddbmm.apply(self, batch1, batch2, beta, alpha)

    def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return linalg.Addbmm.apply(self, batch1, batch2, beta, alpha)

    def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
        return self._inplace("addmm_", linalg.Addmm, mat1, mat2, beta, alpha)

    def addmv_(self, mat, vec, *, beta=1, alpha=1):
        return self._inplace("addmv_", linalg.Addmv, mat, vec, beta, alpha)

    def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
        return self._inplace("baddbmm_", linalg.Baddbmm, batch1, batch2, beta, alpha)

    def addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
        return self._inplace("addbmm_", linalg.Addbmm, batch1, batch2, beta, alpha)

    def outer(self, vec2):
        """The outer product, as torch records it: a broadcast multiplication."""
        for position, vector in enumerate((self, vec2)):
            if vector._array.ndim != 1:
                from ..errors import ShapeError

                name = "self" if position == 0 else "vec2"
                raise ShapeError(
                    f"outer: Expected 1-D argument {name}, but got {vector._array.ndim}-D "
                    f"({vector._describe()}). Hint: flatten it first, or use matmul.")
        return self.reshape(-1, 1) * vec2

    ger = outer

    def inner(self, other):
        """The sum over the last dims (a dot product for vectors)."""
        if self._array.ndim == 0 or other._array.ndim == 0:
            return self * other
        if self._array.ndim == 1 and other._array.ndim == 1:
            return linalg.Dot.apply(self, other)
        from .._functions import tensordot

        return tensordot(self, other, dims=([-1], [-1]))

    def cross(self, other, dim=None):
        from .._functions import cross

        return cross(self, other, dim)

    def kron(self, other):
        from .._functions import kron

        return kron(self, other)

    def matrix_power(self, n):
        from .. import linalg as linalg_module

        return linalg_module.matrix_power(self, n)

    def det(self):
        return decompositions.Det.apply(self)

    def logdet(self):
        """log(det): NaN for a negative determinant, as in torch."""
        sign, logabsdet = decompositions.Slogdet.apply(self)
        return indexing.Where.apply(sign < 0, float("nan"), logabsdet)

    def slogdet(self):
        from .. import linalg as linalg_module

        return linalg_module.slogdet(self)

    def inverse(self):
        return decompositions.Inv.apply(self)

    def pinverse(self, rcond=1e-15):
        return decompositions.Pinv.apply(self, rcond, False)

    def cholesky(self, upper=False):
        return decompositions.Cholesky.apply(self, upper)

    def qr(self, some=True):
        from .. import linalg as linalg_module

        return linalg_module.qr(self, "reduced" if some else "complete")

    def svd(self, some=True, compute_uv=True):
        """The old ``Tensor.svd``: (U, S, V) with V, not Vh (``linalg.svd`` gives Vh)."""
        from .. import linalg as linalg_module

        u, s, vh = linalg_module.svd(self, full_matrices=not some)
        return SvdResult(u, s, vh.transpose(-2, -1))

    def dist(self, other, p=2):
        from ..ops.norms import Dist

        return Dist.apply(self, other, p)

    def trace(self):
        return linalg.Trace.apply(self)

    @property
    def mH(self):
        """The conjugate transpose of the last two dims (the transpose, for real tensors)."""
        return self.transpose(-2, -1)

    @property
    def H(self):
        if self._array.ndim > 2:
            from ..errors import ShapeError

            raise ShapeError(
                f"tensor.H is only supported on matrices (2-D tensors). Got {self._array.ndim}"
                f"-D tensor ({self._describe()}). Hint: use .mH for batches of matrices.")
        return self.transpose(0, 1) if self._array.ndim == 2 else self

    def adjoint(self):
        return self.transpose(-2, -1)

    def addr(self, vec1, vec2, *, beta=1, alpha=1):
        from .._numerics import addr

        return addr(self, vec1, vec2, beta=beta, alpha=alpha)

    def renorm(self, p, dim, maxnorm):
        from .._numerics import renorm

        return renorm(self, p, dim, maxnorm)

    def ldexp(self, other):
        from .._numerics import ldexp

        return ldexp(self, other)

    def diff(self, n=1, dim=-1, prepend=None, append=None):
        from .._numerics import diff

        return diff(self, n, dim, prepend, append)

    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        from .._numerics import quantile

        return quantile(self, q, dim, keepdim, interpolation=interpolation)

    def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        from .._numerics import nanquantile

        return nanquantile(self, q, dim, keepdim, interpolation=interpolation)

    def cov(self, *, correction=1, fweights=None, aweights=None):
        from .._numerics import cov

        return cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self):
        from .._numerics import corrcoef

        return corrcoef(self)

    def histc(self, bins=100, min=0, max=0):
        from .._numerics import histc

        return histc(self, bins, min, max)

    def bincount(self, weights=None, minlength=0):
        from .._numerics import bincount

        return bincount(self, weights, minlength)

    def gcd(self, other):
        from .._numerics import gcd

        return gcd(self, other)

    def lcm(self, other):
        from .._numerics import lcm

        return lcm(self, other)

    def diagflat(self, offset=0):
        from .._numerics import diagflat

        return diagflat(self, offset)

    def cholesky_solve(self, input2, upper=False):
        from .._numerics import cholesky_solve

        return cholesky_solve(self, input2, upper)

    def cholesky_inverse(self, upper=False):
        from .._numerics import cholesky_inverse

        return cholesky_inverse(self, upper)

    # -- properties of real tensors --------------------------------------------------
    def is_complex(self) -> bool:
        return False  # tracegrad has no complex dtypes

    def is_signed(self) -> bool:
        return self._array.dtype.kind in "fi"

    def is_conj(self) -> bool:
        return False

    def is_neg(self) -> bool:
        return False

    def is_nonzero(self) -> bool:
        if self._array.size != 1:
            from ..errors import InvalidValueError

            raise InvalidValueError(
                f"Boolean value of Tensor with {'no values' if self._array.size == 0 else 'more than one value'} "
                f"is ambiguous ({self._describe()}). Hint: use .any() or .all().")
        return bool(self._array.reshape(()))

    def is_same_size(self, other) -> bool:
        return tuple(self.shape) == tuple(other.shape)

    @property
    def real(self):
        return self

    def conj(self):
        return self

    def resolve_conj(self):
        return self

    def resolve_neg(self):
        return self

    def ndimension(self) -> int:
        return self._array.ndim

    @property
    def nbytes(self) -> int:
        return int(self._array.nbytes)

    @property
    def itemsize(self) -> int:
        return int(self._array.itemsize)

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    def sum_to_size(self, *size):
        from ..ops.reduce import sum_to

        sizes = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) \
            else tuple(size)
        from ..ops.reduce import is_expandable_to

        if not is_expandable_to(sizes, tuple(self.shape)):
            from ..errors import ShapeError

            raise ShapeError(f"size {{{list(sizes)}}} is not expandable to size "
                             f"{{{list(self.shape)}}}. ({self._describe()}) Hint: the target "
                             "must broadcast to this tensor's shape.")
        return sum_to(self, sizes)


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, apply_binary, decompositions, indexing, linalg, pointwise, unary
    from ..autograd.function import apply_binary
    from ..ops import decompositions, indexing, linalg, pointwise, unary
    from ..tensor import Tensor
