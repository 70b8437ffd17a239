"""Reductions and scans: sum, mean, prod, max/min, amax/amin, argmax/argmin, var/std,
norm, median, mode, logsumexp, cumsum/cumprod/cummax/cummin, nansum/nanmean.

A mixin of Tensor (``class Tensor(..., ReductionMethods)``): the methods are defined here,
where a reader looks for them. Like torch, every ``dim``/``keepdim`` also answers to
NumPy's ``axis``/``keepdims`` (``**aliases``: an empty dict costs nothing when unused).
"""

from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING

from .comparison import numpy_aliases


class _AllDims:
    """``dim`` not given at all: torch's no-dim overload (``SumBackward0``), which differs
    from ``dim=None`` given explicitly (``SumBackward1``, honouring ``keepdim``)."""

    def __repr__(self) -> str:
        return "None"  # what help() and signatures show, as torch documents the default


ALL_DIMS = _AllDims()


class _NotGiven:
    """var/std's ``dim`` and ``correction`` not given: torch's node shows which overload a
    call took (``grad_fn._saved_correction`` is None for ``x.var()``, 1 for ``x.var(None)``
    and ``x.var(0)``, None again for ``x.var(0, correction=None)``)."""

    def __repr__(self) -> str:
        return "None"  # what help() and signatures show, as torch documents the default


NOT_GIVEN = _NotGiven()


def _refuse_keepdim_alone(name: str, keepdim) -> None:
    if keepdim:
        raise TypeError(
            f"{name}() received an invalid combination of arguments - got (keepdim=bool, ): "
            f"keepdim is taken only together with dim. Hint: {name}(dim=None, keepdim=True) "
            "reduces every dimension and keeps each as size 1.")

if TYPE_CHECKING:
    from ..ops import norms, reduce, scan, statistics, unary  # noqa: TC004 - bound at runtime by _bind()
    from ..tensor import Tensor  # noqa: TC004 - bound at runtime by _bind()


ValuesIndices = namedtuple("return_types", ["values", "indices"])
MinMax = namedtuple("aminmax", ["min", "max"])


class ReductionMethods:
    __slots__ = ()

    def sum(self, dim=ALL_DIMS, keepdim=False, dtype=None, **aliases):
        """``x.sum()`` (SumBackward0) or ``x.sum(dim, keepdim)`` (SumBackward1), where
        ``dim=None`` given explicitly reduces every dimension but honours ``keepdim``."""
        if aliases:
            dim, keepdim = numpy_aliases("sum", aliases, dim, keepdim)
        if dim is ALL_DIMS:
            _refuse_keepdim_alone("sum", keepdim)
            return reduce.SumAll.apply(self, dtype=_np_dtype(dtype))
        return reduce.Sum.apply(self, dim=dim, keepdim=keepdim, dtype=_np_dtype(dtype))

    def mean(self, dim=ALL_DIMS, keepdim=False, dtype=None, **aliases):
        """``x.mean()`` (MeanBackward0) or ``x.mean(dim, keepdim)`` (MeanBackward1), as
        ``sum``."""
        if aliases:
            dim, keepdim = numpy_aliases("mean", aliases, dim, keepdim)
        source = self if dtype is None else self.to(dtype)
        if dim is ALL_DIMS:
            _refuse_keepdim_alone("mean", keepdim)
            return reduce.MeanAll.apply(source)
        return reduce.Mean.apply(source, dim=dim, keepdim=keepdim)

    def nansum(self, dim=None, keepdim=False, dtype=None, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("nansum", aliases, dim, keepdim)
        return reduce.Nansum.apply(self, dim, keepdim, _np_dtype(dtype))

    def nanmean(self, dim=None, keepdim=False, dtype=None, **aliases):
        """The mean of the non-NaN elements: nansum / their count (a DivBackward0 node,
        as in torch)."""
        if aliases:
            dim, keepdim = numpy_aliases("nanmean", aliases, dim, keepdim)
        if self._array.dtype.kind != "f":
            from ..errors import DTypeError

            raise DTypeError(
                f"nanmean(): expected input to have floating point or complex dtype but got "
                f"{self.dtype.name} ({self._describe()}). Hint: call .float() first.")
        source = self if dtype is None else self.to(dtype)
        count = (~source.isnan()).sum(dim, keepdim)
        return source.nansum(dim, keepdim) / count

    def prod(self, dim=None, keepdim=False, dtype=None, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("prod", aliases, dim, keepdim)
        if dim is None:
            return reduce.ProdAll.apply(self, _np_dtype(dtype))
        _require_int_dim("prod", dim, self)
        return reduce.Prod.apply(self, dim, keepdim, _np_dtype(dtype))

    def max(self, dim=None, keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("max", aliases, dim, keepdim)
        if isinstance(dim, Tensor):
            return unary.Maximum.apply(self, dim)
        if dim is None:
            return reduce.MaxAll.apply(self)
        return ValuesIndices(*reduce.MaxDim.apply(self, dim, keepdim=keepdim))

    def min(self, dim=None, keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("min", aliases, dim, keepdim)
        if isinstance(dim, Tensor):
            return unary.Minimum.apply(self, dim)
        if dim is None:
            return reduce.MinAll.apply(self)
        return ValuesIndices(*reduce.MinDim.apply(self, dim, keepdim=keepdim))

    def amax(self, dim=(), keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("amax", aliases, dim, keepdim)
        return reduce.Amax.apply(self, dim, keepdim)

    def amin(self, dim=(), keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("amin", aliases, dim, keepdim)
        return reduce.Amin.apply(self, dim, keepdim)

    def aminmax(self, *, dim=None, keepdim=False):
        return MinMax(*reduce.Aminmax.apply(self, dim, keepdim))

    def argmax(self, dim=None, keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("argmax", aliases, dim, keepdim)
        return reduce.argmax(self, dim, keepdim)

    def argmin(self, dim=None, keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("argmin", aliases, dim, keepdim)
        return reduce.argmin(self, dim, keepdim)

    def var(self, dim=NOT_GIVEN, unbiased=None, keepdim=False, *, correction=NOT_GIVEN,
            **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("var", aliases, dim, keepdim)
        dim, correction = statistics.variance_arguments(dim, unbiased, correction)
        return statistics.Var.apply(self, dim, correction, keepdim)

    def std(self, dim=NOT_GIVEN, unbiased=None, keepdim=False, *, correction=NOT_GIVEN,
            **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("std", aliases, dim, keepdim)
        dim, correction = statistics.variance_arguments(dim, unbiased, correction)
        return statistics.Std.apply(self, dim, correction, keepdim)

    def logsumexp(self, dim, keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("logsumexp", aliases, dim, keepdim)
        return statistics.Logsumexp.apply(self, dim, keepdim)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """torch's ``Tensor.norm``: a vector p-norm over ``dim`` (all elements by default);
        ``"fro"`` is the 2-norm, ``"nuc"`` the nuclear norm of matrices."""
        if p == "nuc":
            from .. import linalg

            return linalg.matrix_norm(self, "nuc", dim if dim is not None else (-2, -1),
                                      keepdim, dtype=dtype)
        order = 2 if p == "fro" or p is None else p
        return norms.VectorNorm.apply(self, order, dim, keepdim, dtype)

    def median(self, dim=None, keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("median", aliases, dim, keepdim)
        if dim is None:
            return statistics.MedianAll.apply(self)
        return ValuesIndices(*statistics.MedianDim.apply(self, dim, keepdim=keepdim))

    def nanmedian(self, dim=None, keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("nanmedian", aliases, dim, keepdim)
        if dim is None:
            return statistics.NanmedianAll.apply(self)
        return ValuesIndices(*statistics.NanmedianDim.apply(self, dim, keepdim=keepdim))

    def mode(self, dim=-1, keepdim=False, **aliases):
        if aliases:
            dim, keepdim = numpy_aliases("mode", aliases, dim, keepdim)
        return ValuesIndices(*statistics.Mode.apply(self, dim, keepdim))

    def count_nonzero(self, dim=None):
        return reduce.count_nonzero(self, dim)

    # -- scans -------------------------------------------------------------------------
    def cumsum(self, dim, *, dtype=None, **aliases):
        if aliases:
            dim, _ = numpy_aliases("cumsum", aliases, dim, False)
        return scan.Cumsum.apply(self, dim, _np_dtype(dtype))

    def cumprod(self, dim, *, dtype=None, **aliases):
        if aliases:
            dim, _ = numpy_aliases("cumprod", aliases, dim, False)
        return scan.Cumprod.apply(self, dim, _np_dtype(dtype))

    def cummax(self, dim, **aliases):
        if aliases:
            dim, _ = numpy_aliases("cummax", aliases, dim, False)
        return ValuesIndices(*scan.Cummax.apply(self, dim))

    def cummin(self, dim, **aliases):
        if aliases:
            dim, _ = numpy_aliases("cummin", aliases, dim, False)
        return ValuesIndices(*scan.Cummin.apply(self, dim))

    def logcumsumexp(self, dim, **aliases):
        if aliases:
            dim, _ = numpy_aliases("logcumsumexp", aliases, dim, False)
        return scan.Logcumsumexp.apply(self, dim)

    def cumsum_(self, dim, *, dtype=None):
        return self._inplace("cumsum_", scan.Cumsum, dim, _np_dtype(dtype))

    def cumprod_(self, dim, *, dtype=None):
        return self._inplace("cumprod_", scan.Cumprod, dim, _np_dtype(dtype))


def _require_int_dim(op_name: str, dim, tensor) -> None:
    if not isinstance(dim, int):
        from ..errors import ArgumentTypeError

        raise ArgumentTypeError(
            f"{op_name}() received an invalid combination of arguments - got dim="
            f"{dim!r}, but expected one of: (*, dtype), (int dim, bool keepdim, *, dtype) "
            f"({tensor._describe()}). "
            "Hint: prod reduces one dim at a time; call it once per dim.")


def _np_dtype(dtype):
    if dtype is None:
        return None
    from .. import _dtype

    return _dtype.to_numpy_dtype(dtype)


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, norms, reduce, scan, statistics, unary
    from ..ops import norms, reduce, scan, statistics, unary
    from ..tensor import Tensor
