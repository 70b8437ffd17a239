"""More ``torch.*`` functions: statistics (quantile, cov, corrcoef, histc, bincount),
differences and integrals (diff, trapezoid, cumulative_trapezoid), integer math (gcd,
lcm), building matrices (block_diag, diagflat, vander, tril/triu_indices), signal windows,
the in-place function forms (``torch.relu_(x)``), and the runtime switches
programs set (threads, determinism, matmul precision) -- kept, with no effect on NumPy.

Plain definitions with torch's signatures, exported through ``__all__``; the ones with
gradients are built from ops (or call one, like ``addr``), so the graph has torch's nodes
where torch has a node of its own.
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from . import _dtype
from .errors import InvalidValueError, ShapeError
from .ops import _math
from .ops import binary as _binary
from .ops import matrices as _matrices
from .ops._checks import wrap_dim
from .tensor import Tensor, _scalar_type_name


def _wrap(array) -> Tensor:
    return Tensor._wrap(array, False)


# -- the in-place function forms (torch.relu_(x) is x.relu_()) ---------------------------
def abs_(input): return input.abs_()
def absolute_(input): return input.absolute_()
def acos_(input): return input.acos_()
def acosh_(input): return input.acosh_()
def arccos_(input): return input.arccos_()
def arccosh_(input): return input.arccosh_()
def arcsin_(input): return input.arcsin_()
def arcsinh_(input): return input.arcsinh_()
def arctan_(input): return input.arctan_()
def arctanh_(input): return input.arctanh_()
def asin_(input): return input.asin_()
def asinh_(input): return input.asinh_()
def atan_(input): return input.atan_()
def atanh_(input): return input.atanh_()
def ceil_(input): return input.ceil_()
def clamp_(input, min=None, max=None): return input.clamp_(min, max)
def clamp_max_(input, max): return input.clamp_max_(max)
def clamp_min_(input, min): return input.clamp_min_(min)
def clip_(input, min=None, max=None): return input.clip_(min, max)
def cos_(input): return input.cos_()
def cosh_(input): return input.cosh_()
def deg2rad_(input): return input.deg2rad_()
def erf_(input): return input.erf_()
def erfc_(input): return input.erfc_()
def exp_(input): return input.exp_()
def exp2_(input): return input.exp2_()
def expm1_(input): return input.expm1_()
def fill_(input, value): return input.fill_(value)
def fix_(input): return input.fix_()
def floor_(input): return input.floor_()
def frac_(input): return input.frac_()
def log_(input): return input.log_()
def log10_(input): return input.log10_()
def log1p_(input): return input.log1p_()
def log2_(input): return input.log2_()
def logit_(input, eps=None): return input.logit_(eps)
def nan_to_num_(input, nan=0.0, posinf=None, neginf=None):
    return input.nan_to_num_(nan, posinf, neginf)
def neg_(input): return input.neg_()
def negative_(input): return input.negative_()
def rad2deg_(input): return input.rad2deg_()
def reciprocal_(input): return input.reciprocal_()
def relu_(input): return input.relu_()
def round_(input, *, decimals=0): return input.round_(decimals)
def rsqrt_(input): return input.rsqrt_()
def sigmoid_(input): return input.sigmoid_()
def sin_(input): return input.sin_()
def sinc_(input): return input.sinc_()
def sinh_(input): return input.sinh_()
def sqrt_(input): return input.sqrt_()
def square_(input): return input.square_()
def tan_(input): return input.tan_()
def tanh_(input): return input.tanh_()
def trunc_(input): return input.trunc_()
def xlogy_(input, other): return input.xlogy_(other)
def zero_(input): return input.zero_()
def detach_(input): return input.detach_()


# -- predicates and identities on real tensors --------------------------------------------
def is_floating_point(input) -> bool:
    return input.is_floating_point()


def is_complex(input) -> bool:
    return False  # tracegrad has no complex dtypes


def is_signed(input) -> bool:
    return input.is_signed()


def is_nonzero(input) -> bool:
    return input.is_nonzero()


def is_same_size(input, other) -> bool:
    return input.is_same_size(other)


def is_conj(input) -> bool:
    return False


def is_neg(input) -> bool:
    return False


def real(input):
    """A real tensor is its own real part (torch returns the tensor itself)."""
    return input


def conj(input):
    return input


def resolve_conj(input):
    return input


def resolve_neg(input):
    return input


def conj_physical(input):
    return input.clone()


def typename(obj) -> str:
    if isinstance(obj, Tensor):
        from ._legacy import type_name

        return type_name(obj)
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in (None, "builtins") else f"{module}.{name}"


# -- statistics ----------------------------------------------------------------------------
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles along ``dim`` (of everything with dim=None), interpolated as
    torch: "linear", "lower", "higher", "midpoint" or "nearest" (half to even).

    >>> import tracegrad as torch
    >>> torch.quantile(torch.tensor([1.0, 2.0, 4.0, 8.0]), 0.5)
    tensor(3.)
    """
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan: bool):
    # torch's checks, in torch's order, with its words (a scalar q's range first)
    if not isinstance(q, Tensor) and not 0 <= q <= 1:
        raise InvalidValueError(f"quantile() q must be in the range [0, 1] but got {q:g}")
    if input._array.size == 0:
        raise InvalidValueError("quantile() input tensor must be non-empty")
    if isinstance(q, Tensor) and q._array.ndim > 1:
        raise InvalidValueError("quantile() q must be a scalar or 1D tensor")
    if input._array.dtype.kind != "f":
        raise InvalidValueError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, Tensor) and q._array.dtype != input._array.dtype:
        raise InvalidValueError("quantile() q tensor must be same dtype as the input tensor")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise InvalidValueError(
            "quantile() interpolation must be one of linear, lower, higher, midpoint or "
            f"nearest, but got {interpolation}")
    if dim is not None:
        wrap_dim(dim, max(input._array.ndim, 1), input)
    levels = np.asarray(q._array if isinstance(q, Tensor) else q, dtype=input._array.dtype)
    if ((levels < 0) | (levels > 1)).any():
        raise InvalidValueError("quantile() q values must be in the range [0, 1]")
    ndim = input._array.ndim
    axis = 0 if dim is None else (dim if dim >= 0 else dim + max(ndim, 1))
    # torch's steps, so the graph is torch's: the reduced dim last, sorted, viewed as
    # (..., the kept dims, length); ranks picked by gather (two and a lerp to interpolate);
    # then torch's in-place squeeze_ (or unsqueeze_, transpose_, squeeze_ for a q tensor)
    if dim is None:  # torch's flatten: a 1-d tensor is itself
        reduced = input if ndim == 1 else input.reshape(-1)
    elif axis == ndim - 1:
        reduced = input
    else:
        reduced = input.unsqueeze(-1).transpose(axis, -1)
    ordered = reduced.sort(dim=-1).values  # NaN sorts last
    if dim is not None and ndim > 0:
        kept = list(input.shape)
        if keepdim:
            kept[axis] = 1
        else:
            del kept[axis]
    else:
        kept = [1] * ndim if keepdim else []
    length = ordered.shape[-1]
    ordered = ordered.view(*kept, length)
    values = ordered._array
    if ignore_nan:  # ranks over the values that are not NaN (0 when all are)
        count = (~np.isnan(values)).sum(axis=-1, keepdims=True)
        ranks = levels * (count - 1).astype(levels.dtype)
        ranks = np.where(ranks < 0, 0, ranks).astype(levels.dtype)
    else:  # a row with a NaN picks its last value: the NaN
        has_nan = np.isnan(values).any(axis=-1, keepdims=True)
        ranks = np.where(has_nan, length - 1, levels * (length - 1)).astype(levels.dtype)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)  # half to even, as torch's round
    below = ranks.astype(np.int64)
    result = ordered.gather(-1, _wrap(below))
    if interpolation in ("linear", "midpoint"):
        weights = np.full_like(ranks, 0.5) if interpolation == "midpoint" else \
            (ranks - below).astype(ranks.dtype)
        above = ordered.gather(-1, _wrap(np.ceil(ranks).astype(np.int64)))
        result = result.lerp_(above, _wrap(weights))  # (in place, as torch: one version more)
    from .ops.shape import SqueezeInPlace, TransposeInPlace, UnsqueezeInPlace, in_place

    if levels.ndim == 0:
        return in_place(SqueezeInPlace, result, -1)
    return in_place(SqueezeInPlace, in_place(TransposeInPlace, in_place(
        UnsqueezeInPlace, result, 0), 0, -1), -1)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the rows of ``input`` (variables) over its columns.

    Built from the ops torch's cov is built from, in its order, so the graph is torch's
    (a weighted sum over the count, unsqueezed; ``mm``; a division by the degrees of
    freedom as a 0-d tensor; squeeze) and so are its quirks: a count of freedom <= 0
    warns and divides by 0, and one observation with exactly one kind of weights zeroes
    the input in place, as torch's does.
    """
    if input._array.ndim > 2:
        raise ShapeError(f"cov(): expected input to have two or fewer dimensions but got an "
                         f"input with {input._array.ndim} dimensions ({input._describe()})")
    if input._array.dtype.kind == "b":
        raise RuntimeError("cov(): bool dtype is not supported for input")
    observations = input if input._array.ndim == 2 else input.view(1, -1)
    count = observations._array.shape[1]
    weights = None
    if fweights is not None:
        _check_weights("fweights", fweights, count, "integral", "iu")
        weights = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, count, "floating point", "f")
        weights = aweights if weights is None else weights * aweights
    if weights is None:
        total = _count_tensor(observations, count)
    else:
        total = weights.sum()
        if not total.ne(0).item():
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    mean = (observations if weights is None else observations * weights).sum(1) / total
    if weights is None:
        freedom = _count_tensor(observations, count - correction)
    elif correction == 0:
        freedom = total
    elif aweights is None:
        freedom = total - correction
    elif fweights is None and count == 1 and correction == 1:
        freedom = _count_tensor(observations, 0)  # (torch's corner case: numpy's result)
    else:
        freedom = total - correction * (weights * aweights).sum() / total
    if freedom.le(0).item():
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=3)
        freedom.zero_()
    if count == 1 and (fweights is None) != (aweights is None):
        observations.zero_()  # (torch's: input minus its weighted mean is 0 here)
        if observations._array.dtype.kind in "iu":
            observations = observations.to(_dtype.float32)
    else:
        observations = observations - mean.unsqueeze(1)
    right = observations if weights is None else observations * weights
    return observations.mm(right.t()).true_divide(freedom).squeeze()


def _count_tensor(like, count: int):
    """A 0-d int64 tensor on ``like``'s device: torch's ``scalar_tensor(count, kLong)``."""
    return Tensor._wrap(like._xp.asarray(count, dtype=np.int64), False)


def _check_weights(name: str, weights, count: int, kind_name: str, kinds: str) -> None:
    """torch's checks of cov's ``fweights``/``aweights``, with its messages."""
    array = weights._array
    if array.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {array.ndim} dimensions")
    if array.dtype.kind not in kinds:
        raise RuntimeError(f"cov(): expected {name} to have {kind_name} dtype but got {name} "
                           f"with {_scalar_type_name(weights)} dtype")
    if array.size != count:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {array.size} != {count}")
    if count and (array < 0).any():
        raise RuntimeError(f"cov(): {name} cannot be negative")


def corrcoef(input):
    """Pearson correlation coefficients between the rows, clamped to [-1, 1] as torch."""
    covariance = cov(input)
    if covariance._array.ndim == 0:
        return covariance / covariance
    spread = covariance.diagonal().sqrt()
    normalised = covariance / spread.reshape(-1, 1) / spread.reshape(1, -1)
    return normalised.clamp(-1, 1)


def histc(input, bins=100, min=0, max=0):
    """Counts in ``bins`` equal bins over [min, max] (the data's range when both are 0);
    elements outside are ignored. Same dtype as the input, as torch."""
    values = np.asarray(input.detach().cpu()._array, dtype=np.float64).reshape(-1)
    low, high = float(min), float(max)
    if low == high == 0 and values.size:
        low, high = float(values.min()), float(values.max())
    if low == high:
        low, high = low - 1, high + 1
    if low > high:
        raise InvalidValueError(f"torch.histogram(): max must be larger than min "
                                f"({input._describe()})")
    inside = values[(values >= low) & (values <= high)]
    counts, _ = np.histogram(inside, bins=bins, range=(low, high))
    array = counts.astype(input._array.dtype)
    return Tensor._wrap(input._xp.asarray(array), False)


def bincount(input, weights=None, minlength=0):
    if input._array.ndim != 1 or input._array.dtype.kind not in "iu":
        raise InvalidValueError(f"bincount only supports 1-d non-negative integral inputs "
                                f"({input._describe()}). Hint: pass a 1-D int64 tensor.")
    values = input._array
    if values.size and values.min() < 0:
        raise InvalidValueError(f"bincount only supports 1-d non-negative integral inputs "
                                f"({input._describe()})")
    xp = input._xp
    if weights is None:
        return _wrap(xp.bincount(values, minlength=minlength).astype(np.int64))
    result = xp.bincount(values, weights=weights._array, minlength=minlength)
    dtype = weights._array.dtype if weights._array.dtype.kind == "f" else np.float64
    return _wrap(result.astype(dtype))


# -- differences and integrals --------------------------------------------------------------
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """``n``-th forward differences along ``dim`` (x[i+1] - x[i], a SubBackward0).

    >>> import tracegrad as torch
    >>> torch.diff(torch.tensor([1, 4, 9, 16]))
    tensor([3, 5, 7])
    """
    from ._functions import cat

    result = input
    if prepend is not None or append is not None:
        parts = [p for p in (prepend, input, append) if p is not None]
        result = cat(parts, dim)
    axis = dim if dim >= 0 else dim + result._array.ndim
    for _ in builtins.range(n):
        length = result._array.shape[axis]
        if result._array.dtype.kind == "b":
            result = result.narrow(axis, 1, length - 1) ^ result.narrow(axis, 0, length - 1)
        else:
            result = result.narrow(axis, 1, length - 1) - result.narrow(axis, 0, length - 1)
    return result


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along ``dim`` with spacing ``dx`` (1) or sample points ``x``."""
    axis = dim if dim >= 0 else dim + y._array.ndim
    length = y._array.shape[axis]
    if length == 0:
        return y.sum(dim=axis) * 0
    if x is None:  # torch's own steps (so its nodes: MulBackward1 for its mul.Scalar)
        ends = y.select(dim, 0) + y.select(dim, -1)
        return _math.scaled(y.sum(dim=dim) - _math.scaled(ends, 0.5),
                            1.0 if dx is None else dx)
    left, right = _left_and_right(y, axis)
    spacing = diff(x, dim=-1 if x._array.ndim == 1 else dim)
    if x._array.ndim == 1 and y._array.ndim > 1:
        shape = [1] * y._array.ndim
        shape[axis] = -1
        spacing = spacing.reshape(shape)
    return _math.divided(((left + right) * spacing).sum(dim=axis), 2.0)  # (div.Scalar)


trapz = trapezoid


def _left_and_right(y, axis: int) -> tuple:
    """``y`` less its last and less its first sample along ``axis``, sliced as torch's
    trapezoid slices them (SliceBackward0 showing end -1, then None)."""
    from .ops.indexing import Slice

    length = y._array.shape[axis]
    return (Slice.apply(y, axis, 0, length - 1, 1, (0, -1)),
            Slice.apply(y, axis, 1, length, 1, (1, None)))


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    axis = dim if dim >= 0 else dim + y._array.ndim
    left, right = _left_and_right(y, axis)
    if x is None:  # (torch's mul.Scalar: MulBackward1)
        return _math.scaled(left + right, (1.0 if dx is None else dx) / 2).cumsum(axis)
    spacing = diff(x, dim=-1 if x._array.ndim == 1 else dim)
    if x._array.ndim == 1 and y._array.ndim > 1:
        shape = [1] * y._array.ndim
        shape[axis] = -1
        spacing = spacing.reshape(shape)
    return _math.divided(((left + right) * spacing).cumsum(axis), 2.0)  # (div.Scalar)


# -- integers ---------------------------------------------------------------------------------
def _integer_pair(op_name: str, input, other):
    for tensor in (input, other):
        if isinstance(tensor, Tensor) and tensor._array.dtype.kind not in "iub":
            from .errors import UnsupportedDTypeError
            from .ops.pointwise import _torch_type_name

            raise UnsupportedDTypeError(
                f"\"{op_name}_cpu\" not implemented for "
                f"'{_torch_type_name(tensor._array.dtype)}' ({tensor._describe()}). Hint: "
                f"{op_name} is defined for integers.")
    from .ops._operands import operands

    return operands(input, other)


def gcd(input, other):
    x, y = _integer_pair("gcd", input, other)
    return _wrap(input._xp.gcd(x, y))


def lcm(input, other):
    x, y = _integer_pair("lcm", input, other)
    return _wrap(input._xp.lcm(x, y))


def ldexp(input, other):
    return _binary.Ldexp.apply(input, other)


# -- building matrices ----------------------------------------------------------------------
def block_diag(*tensors):
    return _matrices.BlockDiag.apply(*tensors)


def diagflat(input, offset=0):
    """The flattened input placed on a diagonal (a DiagEmbedBackward0, as torch)."""
    return input.reshape(-1).diag_embed(offset, 0, 1)


def vander(x, N=None, increasing=False):
    """Columns of powers of ``x``: x^(N-1) ... x^0 (or increasing)."""
    if x._array.ndim != 1:
        raise ShapeError(f"x must be a one-dimensional tensor. ({x._describe()})")
    count = x._array.shape[0] if N is None else N
    if count < 0:
        raise InvalidValueError("N must be non-negative.")
    from ._functions import stack

    source = x if x._array.dtype.kind == "f" else x.to(_dtype.int64)
    columns = [source ** power if power else source * 0 + 1 for power in builtins.range(count)]
    if not columns:
        return _wrap(x._xp.zeros((x._array.shape[0], 0), dtype=source._array.dtype))
    result = stack(columns, dim=1)
    return result if increasing else result.flip(1)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    rows, columns = np.tril_indices(row, offset, col)
    return _index_pair(rows, columns, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    rows, columns = np.triu_indices(row, offset, col)
    return _index_pair(rows, columns, dtype, device)


def _index_pair(rows, columns, dtype, device):
    from .factories import tensor

    array = np.stack([rows, columns]).astype(np.int64)
    return tensor(array, dtype=dtype or _dtype.int64, device=device)


def unravel_index(indices, shape):
    from .factories import tensor

    flat = indices if isinstance(indices, Tensor) else tensor(indices)
    size = int(np.prod(shape))
    values = flat._array
    if values.size and (values.min() < -size or values.max() >= size):
        raise InvalidValueError(f"index {int(values.max())} is out of bounds for shape "
                                f"{list(shape)}")
    parts = np.unravel_index(np.where(values < 0, values + size, values), tuple(shape))
    return tuple(_wrap(np.asarray(part, dtype=np.int64)) for part in parts)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    return _matrices.Addr.apply(input, vec1, vec2, beta, alpha)


def cholesky_solve(B, L, upper=False):
    return _matrices.CholeskySolve.apply(B, L, upper)


def cholesky_inverse(L, upper=False):
    return _matrices.CholeskyInverse.apply(L, upper)


def renorm(input, p, dim, maxnorm):
    return _matrices.Renorm.apply(input, p, dim, maxnorm)


# -- signal windows ---------------------------------------------------------------------------
def _window(values: np.ndarray, dtype, device, requires_grad):
    from .factories import tensor

    return tensor(values, dtype=dtype or _dtype.default_float, device=device,
                  requires_grad=requires_grad)


def _window_length(length: int, periodic: bool) -> int:
    if length < 0:
        raise InvalidValueError(f"window_length must be non-negative, got {length}")
    return length + 1 if periodic and length > 1 else length


def hann_window(window_length, periodic=True, *, dtype=None, device=None,
                requires_grad=False, layout=None):
    count = _window_length(window_length, periodic)
    values = np.hanning(count) if count > 1 else np.ones(count)
    return _window(values[:window_length], dtype, device, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   device=None, requires_grad=False, layout=None):
    count = _window_length(window_length, periodic)
    index = np.arange(count)
    values = alpha - beta * np.cos(2 * np.pi * index / max(count - 1, 1)) if count > 1 \
        else np.ones(count)
    return _window(values[:window_length], dtype, device, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None,
                    requires_grad=False, layout=None):
    count = _window_length(window_length, periodic)
    values = np.bartlett(count) if count > 1 else np.ones(count)
    return _window(values[:window_length], dtype, device, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, device=None,
                    requires_grad=False, layout=None):
    count = _window_length(window_length, periodic)
    values = np.blackman(count) if count > 1 else np.ones(count)
    return _window(values[:window_length], dtype, device, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None,
                  requires_grad=False, layout=None):
    count = _window_length(window_length, periodic)
    values = np.kaiser(count, beta) if count > 1 else np.ones(count)
    return _window(values[:window_length], dtype, device, requires_grad)


# -- runtime switches: kept, no effect on NumPy ------------------------------------------------
_switches = {"num_threads": 1, "interop_threads": 1, "deterministic": False,
             "warn_only": False, "matmul_precision": "highest"}


def get_num_threads() -> int:
    """How many threads torch would use; NumPy's BLAS picks its own (set it with the
    OMP_NUM_THREADS / OPENBLAS_NUM_THREADS environment variables)."""
    return _switches["num_threads"]


def set_num_threads(num: int) -> None:
    _switches["num_threads"] = int(num)


def get_num_interop_threads() -> int:
    return _switches["interop_threads"]


def set_num_interop_threads(num: int) -> None:
    _switches["interop_threads"] = int(num)


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted: every tracegrad op is deterministic on the CPU already."""
    _switches["deterministic"], _switches["warn_only"] = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _switches["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _switches["warn_only"]


def set_float32_matmul_precision(precision: str) -> None:
    if precision not in ("highest", "high", "medium"):
        raise InvalidValueError(f"Invalid precision {precision}: expected one of highest, "
                                "high, medium")
    _switches["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _switches["matmul_precision"]


def compile(model=None, **options):
    """``torch.compile``: tracegrad runs the model as it is (same results; compiling is a
    speed-up tracegrad does not do). Also usable as a decorator, with or without options."""
    if model is None:
        return lambda function: function
    return model


__all__ = [  # every public name defined above
    "abs_",
    "absolute_",
    "acos_",
    "acosh_",
    "addr",
    "arccos_",
    "arccosh_",
    "arcsin_",
    "arcsinh_",
    "arctan_",
    "arctanh_",
    "are_deterministic_algorithms_enabled",
    "asin_",
    "asinh_",
    "atan_",
    "atanh_",
    "bartlett_window",
    "bincount",
    "blackman_window",
    "block_diag",
    "ceil_",
    "cholesky_inverse",
    "cholesky_solve",
    "clamp_",
    "clamp_max_",
    "clamp_min_",
    "clip_",
    "compile",
    "conj",
    "conj_physical",
    "corrcoef",
    "cos_",
    "cosh_",
    "cov",
    "cumulative_trapezoid",
    "deg2rad_",
    "detach_",
    "diagflat",
    "diff",
    "erf_",
    "erfc_",
    "exp2_",
    "exp_",
    "expm1_",
    "fill_",
    "fix_",
    "floor_",
    "frac_",
    "gcd",
    "get_float32_matmul_precision",
    "get_num_interop_threads",
    "get_num_threads",
    "hamming_window",
    "hann_window",
    "histc",
    "is_complex",
    "is_conj",
    "is_deterministic_algorithms_warn_only_enabled",
    "is_floating_point",
    "is_neg",
    "is_nonzero",
    "is_same_size",
    "is_signed",
    "kaiser_window",
    "lcm",
    "ldexp",
    "log1p_",
    "log2_",
    "log10_",
    "log_",
    "logit_",
    "nan_to_num_",
    "nanquantile",
    "neg_",
    "negative_",
    "quantile",
    "rad2deg_",
    "real",
    "reciprocal_",
    "relu_",
    "renorm",
    "resolve_conj",
    "resolve_neg",
    "round_",
    "rsqrt_",
    "set_float32_matmul_precision",
    "set_num_interop_threads",
    "set_num_threads",
    "sigmoid_",
    "sin_",
    "sinc_",
    "sinh_",
    "sqrt_",
    "square_",
    "tan_",
    "tanh_",
    "trapezoid",
    "trapz",
    "tril_indices",
    "triu_indices",
    "trunc_",
    "typename",
    "unravel_index",
    "use_deterministic_algorithms",
    "vander",
    "xlogy_",
    "zero_",
]
