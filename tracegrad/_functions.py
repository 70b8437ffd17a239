"""The ``torch.*`` function forms of tensor ops (``torch.exp(x)``, ``torch.cat([...])``).

Each is a plain definition with torch's signature; most call the Tensor method of the same
name (defined in ``tracegrad/_methods/``).
"""

from __future__ import annotations

import builtins

from ._dtype import from_numpy_dtype as _from_numpy_dtype
from ._methods import ValuesIndices
from ._methods.comparison import numpy_aliases as _numpy_aliases
from ._methods.reduction import ALL_DIMS, NOT_GIVEN
from .ops import arith as _arith
from .ops import binary as _binary
from .ops import bitwise as _bitwise
from .ops import indexing, linalg, shape
from .tensor import Tensor


def add(input, other, *, alpha=1):
    if not isinstance(input, Tensor):  # torch.add(2, x): the number is wrapped, edge first
        return _arith.Add.apply(input, other, alpha=alpha)
    return input.add(other, alpha=alpha)

def sub(input, other, *, alpha=1):
    if not isinstance(input, Tensor):  # torch.sub(2, x) is SubBackward0, not Rsub
        return _arith.Sub.apply(input, other, alpha=alpha)
    return input.sub(other, alpha=alpha)

def mul(input, other):
    if not isinstance(input, Tensor):
        return _arith.Mul.apply(input, other)
    return input.mul(other)

def div(input, other, *, rounding_mode=None):
    if not isinstance(input, Tensor) and rounding_mode is None:
        return _arith.Div.apply(input, other)  # DivBackward0 with the number's edge first
    return input.div(other, rounding_mode=rounding_mode)

def neg(input):
    return input.neg()

def pow(input, exponent):
    """``input ** exponent``; ``input`` may be a number when ``exponent`` is a tensor."""
    if not isinstance(input, Tensor):
        return exponent.__rpow__(input)
    return input.pow(exponent)

def exp(input):
    return input.exp()

def log(input):
    return input.log()

def sqrt(input):
    return input.sqrt()

def abs(input):
    return input.abs()

def sin(input):
    return input.sin()

def cos(input):
    return input.cos()

def tanh(input):
    return input.tanh()

def sigmoid(input):
    return input.sigmoid()

def relu(input):
    return input.relu()

def square(input):
    return input.square()

def reciprocal(input):
    return input.reciprocal()

def sign(input):
    return input.sign()

def clamp(input, min=None, max=None):
    return input.clamp(min, max)

def clamp_min(input, min):
    return input.clamp_min(min)

def clamp_max(input, max):
    return input.clamp_max(max)

def maximum(input, other):
    return input.maximum(other)

def minimum(input, other):
    return input.minimum(other)

def sum(input, dim=ALL_DIMS, keepdim=False, *, dtype=None, **aliases):
    return input.sum(dim, keepdim, dtype=dtype, **aliases)

def mean(input, dim=ALL_DIMS, keepdim=False, *, dtype=None, **aliases):
    return input.mean(dim, keepdim, dtype=dtype, **aliases)

def nansum(input, dim=None, keepdim=False, *, dtype=None, **aliases):
    return input.nansum(dim, keepdim, dtype=dtype, **aliases)

def nanmean(input, dim=None, keepdim=False, *, dtype=None, **aliases):
    return input.nanmean(dim, keepdim, dtype=dtype, **aliases)

def prod(input, dim=None, keepdim=False, *, dtype=None, **aliases):
    return input.prod(dim, keepdim, dtype=dtype, **aliases)

def amax(input, dim=(), keepdim=False, **aliases):
    return input.amax(dim, keepdim, **aliases)

def amin(input, dim=(), keepdim=False, **aliases):
    return input.amin(dim, keepdim, **aliases)

def aminmax(input, *, dim=None, keepdim=False):
    return input.aminmax(dim=dim, keepdim=keepdim)

def argmax(input, dim=None, keepdim=False, **aliases):
    return input.argmax(dim, keepdim, **aliases)

def argmin(input, dim=None, keepdim=False, **aliases):
    return input.argmin(dim, keepdim, **aliases)

def var(input, dim=NOT_GIVEN, unbiased=None, keepdim=False, *, correction=NOT_GIVEN,
        **aliases):
    return input.var(dim, unbiased, keepdim, correction=correction, **aliases)

def std(input, dim=NOT_GIVEN, unbiased=None, keepdim=False, *, correction=NOT_GIVEN,
        **aliases):
    return input.std(dim, unbiased, keepdim, correction=correction, **aliases)

def var_mean(input, dim=NOT_GIVEN, unbiased=None, keepdim=False, *, correction=NOT_GIVEN,
        **aliases):
    """(variance, mean) from one VarMeanBackward0 node."""
    from .ops.statistics import VarMean, variance_arguments

    if aliases:
        dim, keepdim = _numpy_aliases("var_mean", aliases, dim, keepdim)
    dim, correction = variance_arguments(dim, unbiased, correction)
    return VarMean.apply(input, dim, correction, keepdim)

def std_mean(input, dim=NOT_GIVEN, unbiased=None, keepdim=False, *, correction=NOT_GIVEN,
        **aliases):
    """(standard deviation, mean) from one StdMeanBackward0 node."""
    from .ops.statistics import StdMean, variance_arguments

    if aliases:
        dim, keepdim = _numpy_aliases("std_mean", aliases, dim, keepdim)
    dim, correction = variance_arguments(dim, unbiased, correction)
    return StdMean.apply(input, dim, correction, keepdim)

def logsumexp(input, dim, keepdim=False, **aliases):
    return input.logsumexp(dim, keepdim, **aliases)

def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    return input.norm(p, dim, keepdim, dtype)

def median(input, dim=None, keepdim=False, **aliases):
    return input.median(dim, keepdim, **aliases)

def nanmedian(input, dim=None, keepdim=False, **aliases):
    return input.nanmedian(dim, keepdim, **aliases)

def mode(input, dim=-1, keepdim=False, **aliases):
    return input.mode(dim, keepdim, **aliases)

def count_nonzero(input, dim=None):
    return input.count_nonzero(dim)

def any(input, dim=None, keepdim=False, **aliases):
    return input.any(dim, keepdim, **aliases)

def all(input, dim=None, keepdim=False, **aliases):
    return input.all(dim, keepdim, **aliases)

def cumsum(input, dim, *, dtype=None, **aliases):
    return input.cumsum(dim, dtype=dtype, **aliases)

def cumprod(input, dim, *, dtype=None, **aliases):
    return input.cumprod(dim, dtype=dtype, **aliases)

def cummax(input, dim, **aliases):
    return input.cummax(dim, **aliases)

def cummin(input, dim, **aliases):
    return input.cummin(dim, **aliases)

def logcumsumexp(input, dim, **aliases):
    return input.logcumsumexp(dim, **aliases)

# -- sorting -----------------------------------------------------------------------------
def sort(input, dim=-1, descending=False, *, stable=None):
    return input.sort(dim, descending, stable=stable)

def argsort(input, dim=-1, descending=False, *, stable=False):
    return input.argsort(dim, descending, stable=stable)

def msort(input):
    return input.msort()

def topk(input, k, dim=-1, largest=True, sorted=True):
    return input.topk(k, dim, largest, sorted)

def kthvalue(input, k, dim=-1, keepdim=False):
    return input.kthvalue(k, dim, keepdim)

def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return input.unique(sorted, return_inverse, return_counts, dim)

def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    return input.unique_consecutive(return_inverse, return_counts, dim)

def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    from .ops.sorting import searchsorted as search

    return search(sorted_sequence, input, out_int32=out_int32, right=right, side=side,
                  sorter=sorter)

def bucketize(input, boundaries, *, out_int32=False, right=False):
    from .ops.sorting import bucketize as buckets

    return buckets(input, boundaries, out_int32=out_int32, right=right)

# -- selection ---------------------------------------------------------------------------
def index_select(input, dim, index):
    return input.index_select(dim, index)

def index_add(input, dim, index, source, *, alpha=1):
    return input.index_add(dim, index, source, alpha=alpha)

def index_copy(input, dim, index, source):
    return input.index_copy(dim, index, source)

def index_fill(input, dim, index, value):
    return input.index_fill(dim, index, value)

def index_put(input, indices, values, accumulate=False):
    return input.index_put(indices, values, accumulate)

def masked_select(input, mask):
    return input.masked_select(mask)

def masked_scatter(input, mask, source):
    return input.masked_scatter(mask, source)

def take(input, index):
    return input.take(index)

def take_along_dim(input, indices, dim=None):
    return input.take_along_dim(indices, dim)

def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    return input.scatter_reduce(dim, index, src, reduce, include_self=include_self)

def nonzero(input, *, as_tuple=False):
    return input.nonzero(as_tuple=as_tuple)

def argwhere(input):
    return input.argwhere()

def isin(elements, test_elements, *, assume_unique=False, invert=False):
    from .ops.selection import isin as member

    return member(elements, test_elements, assume_unique=assume_unique, invert=invert)

def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    return input.diagonal_scatter(src, offset, dim1, dim2)

def reshape(input, shape):
    return input.reshape(shape)

def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)

def t(input):
    return input.t()

def transpose(input, dim0, dim1):
    return input.transpose(dim0, dim1)

def permute(input, dims):
    return input.permute(dims)

def unsqueeze(input, dim):
    return input.unsqueeze(dim)

def squeeze(input, dim=None):
    return input.squeeze(dim)

def split(tensor, split_size_or_sections, dim=0):
    return tensor.split(split_size_or_sections, dim)

def chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)

def unbind(input, dim=0):
    return input.unbind(dim)

def narrow(input, dim, start, length):
    return input.narrow(dim, start, length)

def split_with_sizes(input, split_sizes, dim=0):
    return input.split_with_sizes(split_sizes, dim)

def unsafe_split(input, split_size, dim=0):
    return input.unsafe_split(split_size, dim)

def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return input.unsafe_split_with_sizes(split_sizes, dim)

def unsafe_chunk(input, chunks, dim=0):
    return input.unsafe_chunk(chunks, dim)

def select(input, dim, index):
    return input.select(dim, index)

def diagonal(input, offset=0, dim1=0, dim2=1):
    return input.diagonal(offset, dim1, dim2)

def as_strided(input, size, stride, storage_offset=None):
    return input.as_strided(size, stride, storage_offset)

def clone(input, *, memory_format=None):
    return input.clone(memory_format=memory_format)

def mm(input, mat2):
    return input.mm(mat2)

def matmul(input, other):
    return input.matmul(other)

def dot(input, other):
    return input.dot(other)

def gather(input, dim, index):
    return input.gather(dim, index)

def scatter(input, dim, index, src=None, value=None, reduce=None):
    return input.scatter(dim, index, src, value, reduce)

def scatter_add(input, dim, index, src):
    return input.scatter_add(dim, index, src)

def masked_fill(input, mask, value):
    return input.masked_fill(mask, value)

def softmax(input, dim, dtype=None):
    return input.softmax(dim, dtype)

def log_softmax(input, dim, dtype=None):
    return input.log_softmax(dim, dtype)

def isnan(input):
    return input.isnan()

def isinf(input):
    return input.isinf()

def isfinite(input):
    return input.isfinite()

def eq(input, other):
    return input.eq(other)

def ne(input, other):
    return input.ne(other)

def lt(input, other):
    return input.lt(other)

def le(input, other):
    return input.le(other)

def gt(input, other):
    return input.gt(other)

def ge(input, other):
    return input.ge(other)

def numel(input):
    return input.numel()

def detach(input):
    return input.detach()

clip = clamp


def max(input, dim=None, keepdim=False, **aliases):
    """``torch.max(t)``, ``torch.max(t, dim, keepdim)`` -> (values, indices), or
    ``torch.max(a, b)`` elementwise."""
    return input.max(dim, keepdim, **aliases)


def min(input, dim=None, keepdim=False, **aliases):
    return input.min(dim, keepdim, **aliases)


def cat(tensors, dim=0, **aliases):
    if aliases:
        dim, _ = _numpy_aliases("cat", aliases, dim, False)
    return shape.Cat.apply(*tensors, dim=dim)


concat = concatenate = cat


def stack(tensors, dim=0, **aliases):
    if aliases:
        dim, _ = _numpy_aliases("stack", aliases, dim, False)
    return shape.Stack.apply(*tensors, dim=dim)


def where(condition, input=None, other=None):
    if input is None and other is None:
        return tuple(Tensor._wrap(index, False)
                     for index in condition._xp.nonzero(condition._array))
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # two numbers: the result has the dtype torch infers for them (float32 for floats)
        from ._dtype import array_dtype_for
        from .factories import scalar_tensor

        kinds = [array_dtype_for(value) for value in (input, other)]
        wider = kinds[0] if kinds[0].kind == "f" or kinds[1].kind != "f" else kinds[1]
        input = scalar_tensor(input, dtype=_from_numpy_dtype(wider))
    return indexing.Where.apply(condition, input, other)


def trace(input):
    """The sum of the main diagonal of a matrix, as ``torch.trace`` (tracegrad's recorder
    is ``tracegrad.record()``)."""
    return linalg.Trace.apply(input)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> builtins.bool:
    """Whether every element is close: |input - other| <= atol + rtol * |other|."""
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    from .ops._operands import broadcast_error
    from .ops.pointwise import _torch_type_name

    if input._array.dtype != other._array.dtype:
        from .errors import DTypeError

        raise DTypeError(
            f"{_torch_type_name(input._array.dtype)} did not match "
            f"{_torch_type_name(other._array.dtype)} ({input._describe()} and "
            f"{other._describe()}). Hint: convert one with .to() so both have one dtype.")
    xp = input._xp
    try:
        xp.broadcast_shapes(input._array.shape, other._array.shape)
    except ValueError:
        raise broadcast_error("isclose", input, other) from None
    return Tensor._wrap(xp.asarray(xp.isclose(input._array, other._array, rtol=rtol,
                                              atol=atol, equal_nan=equal_nan)), False)


def equal(input, other) -> builtins.bool:
    return input.shape == other.shape and builtins.bool((input._array == other._array).all())


def is_tensor(obj) -> builtins.bool:
    return isinstance(obj, Tensor)


# -- elementwise: logs, exponentials, special functions -----------------------------------
def log2(input):
    return input.log2()

def log10(input):
    return input.log10()

def log1p(input):
    return input.log1p()

def expm1(input):
    return input.expm1()

def exp2(input):
    return input.exp2()

def rsqrt(input):
    return input.rsqrt()

def erf(input):
    return input.erf()

def erfc(input):
    return input.erfc()

def erfinv(input):
    return input.erfinv()

def logit(input, eps=None):
    return input.logit(eps)

def xlogy(input, other):
    """``input * log(other)``, 0 where input is 0; either argument may be a number."""
    if not isinstance(input, Tensor):
        return _binary.XlogyScalarSelf.apply(input, other)
    return input.xlogy(other)

def logaddexp(input, other):
    return input.logaddexp(other)

def logaddexp2(input, other):
    return input.logaddexp2(other)

# -- trigonometric and hyperbolic --------------------------------------------------------
def tan(input):
    return input.tan()

def sinh(input):
    return input.sinh()

def cosh(input):
    return input.cosh()

def asin(input):
    return input.asin()

def acos(input):
    return input.acos()

def atan(input):
    return input.atan()

def asinh(input):
    return input.asinh()

def acosh(input):
    return input.acosh()

def atanh(input):
    return input.atanh()

arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh

def atan2(input, other):
    return input.atan2(other)

arctan2 = atan2

def hypot(input, other):
    return input.hypot(other)

def sinc(input):
    return input.sinc()

def deg2rad(input):
    return input.deg2rad()

def rad2deg(input):
    return input.rad2deg()

# -- rounding, sign, division ------------------------------------------------------------
def round(input, *, decimals=0):
    return input.round(decimals=decimals)

def floor(input):
    return input.floor()

def ceil(input):
    return input.ceil()

def trunc(input):
    return input.trunc()

fix = trunc

def frac(input):
    return input.frac()

def sgn(input):
    return input.sgn()

def copysign(input, other):
    return input.copysign(other)

def heaviside(input, values):
    return input.heaviside(values)

def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    return input.nan_to_num(nan, posinf, neginf)

def positive(input):
    return input.positive()

def negative(input):
    return input.negative()

def absolute(input):
    return input.absolute()

def fmod(input, other):
    return input.fmod(other)

def remainder(input, other):
    """Python's ``%``: the result has the divisor's sign. ``input`` may be a number."""
    if not isinstance(input, Tensor):
        return _binary.RemainderScalarSelf.apply(input, other)
    return input.remainder(other)

def floor_divide(input, other):
    return _binary.FloorDivide.apply(input, other)

def true_divide(dividend, divisor):
    if not isinstance(dividend, Tensor):  # torch.true_divide(2, x): as torch.div(2, x)
        return _arith.Div.apply(dividend, divisor)
    return dividend.true_divide(divisor)

def divide(input, other, *, rounding_mode=None):
    return input.div(other, rounding_mode=rounding_mode)

def multiply(input, other):
    return input.mul(other)

def subtract(input, other, *, alpha=1):
    return input.sub(other, alpha=alpha)

def rsub(input, other, alpha=1):
    """``other - alpha * input``: one node with alpha in it, as torch's (RsubBackward0 when
    ``other`` is a tensor, RsubBackward1 when a number)."""
    if isinstance(other, Tensor):
        return _arith.RSubTensor.apply(input, other, alpha=alpha)
    return _arith.RSub.apply(other, input, alpha=alpha)

def float_power(input, exponent):
    if not isinstance(input, Tensor):
        from ._dtype import float64

        return _arith.RPow.apply(float(input), exponent.to(float64))
    return input.float_power(exponent)

def fmax(input, other):
    return input.fmax(other)

def fmin(input, other):
    return input.fmin(other)

# -- blends ------------------------------------------------------------------------------
def lerp(input, end, weight):
    return input.lerp(end, weight)

def addcmul(input, tensor1, tensor2, *, value=1):
    return input.addcmul(tensor1, tensor2, value=value)

def addcdiv(input, tensor1, tensor2, *, value=1):
    return input.addcdiv(tensor1, tensor2, value=value)

# -- comparisons, logic, bits ------------------------------------------------------------
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne

def isneginf(input):
    return input.isneginf()

def isposinf(input):
    return input.isposinf()

def isreal(input):
    return input.isreal()

def signbit(input):
    return input.signbit()

def logical_and(input, other):
    return _bitwise.logical_and(input, other)

def logical_or(input, other):
    return _bitwise.logical_or(input, other)

def logical_xor(input, other):
    return _bitwise.logical_xor(input, other)

def logical_not(input):
    return _bitwise.logical_not(input)

def bitwise_and(input, other):
    return _bitwise.bitwise(input, other, "and")

def bitwise_or(input, other):
    return _bitwise.bitwise(input, other, "or")

def bitwise_xor(input, other):
    return _bitwise.bitwise(input, other, "xor")

def bitwise_not(input):
    return _bitwise.bitwise_not(input)

def bitwise_left_shift(input, other):
    return _bitwise.shift(input, other, "left")

def bitwise_right_shift(input, other):
    return _bitwise.shift(input, other, "right")



# -- shape family --------------------------------------------------------------------------
def flip(input, dims):
    return input.flip(dims)

def fliplr(input):
    return input.fliplr()

def flipud(input):
    return input.flipud()

def roll(input, shifts, dims=None):
    return input.roll(shifts, dims)

def rot90(input, k=1, dims=(0, 1)):
    return input.rot90(k, dims)

def tril(input, diagonal=0):
    return input.tril(diagonal)

def triu(input, diagonal=0):
    return input.triu(diagonal)

def diag(input, diagonal=0):
    return input.diag(diagonal)

def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    return input.diag_embed(offset, dim1, dim2)

def movedim(input, source, destination):
    return input.movedim(source, destination)

moveaxis = movedim

def swapaxes(input, axis0, axis1):
    return input.swapaxes(axis0, axis1)

swapdims = swapaxes

def unflatten(input, dim, sizes):
    return input.unflatten(dim, sizes)

def ravel(input):
    return input.ravel()

def tile(input, dims):
    return input.tile(dims)

def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    if repeats is None:  # torch.repeat_interleave(repeats): each index repeated
        counts = input
        positions = counts._xp.repeat(counts._xp.arange(counts._array.size),
                                      counts._array.reshape(-1))
        return Tensor._wrap(positions.astype("int64"), False)
    return input.repeat_interleave(repeats, dim, output_size=output_size)

def broadcast_to(input, size):
    return input.broadcast_to(size)

def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (a torch.Size)."""
    from .tensor import Size

    normalized = [(shape,) if isinstance(shape, int) else tuple(shape) for shape in shapes]
    try:
        import numpy as np

        return Size(np.broadcast_shapes(*normalized))
    except ValueError:
        from .errors import InvalidValueError

        raise InvalidValueError(
            f"Shape mismatch: objects cannot be broadcast to a single shape: "
            f"{[list(shape) for shape in normalized]}") from None

def broadcast_tensors(*tensors):
    """Each tensor expanded to the common shape (a tensor already of that shape is
    returned as it is, as torch does)."""
    common = tuple(broadcast_shapes(*(t.shape for t in tensors)))
    return tuple(t if tuple(t.shape) == common else t.expand(*common) for t in tensors)

def atleast_1d(*tensors):
    result = tuple(t.reshape(1) if t._array.ndim == 0 else t for t in _flat(tensors))
    return result[0] if len(result) == 1 else result

def atleast_2d(*tensors):
    def lift(t):
        if t._array.ndim == 0:
            return t.reshape(1, 1)
        return t.unsqueeze(0) if t._array.ndim == 1 else t
    result = tuple(lift(t) for t in _flat(tensors))
    return result[0] if len(result) == 1 else result

def atleast_3d(*tensors):
    def lift(t):
        ndim = t._array.ndim
        if ndim == 0:
            return t.reshape(1, 1, 1)
        if ndim == 1:
            return t.unsqueeze(0).unsqueeze(-1)
        return t.unsqueeze(-1) if ndim == 2 else t
    result = tuple(lift(t) for t in _flat(tensors))
    return result[0] if len(result) == 1 else result

def _flat(tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(tensors[0])
    return tensors

def hstack(tensors):
    lifted = [atleast_1d(t) for t in tensors]
    return cat(lifted, 0 if lifted[0]._array.ndim == 1 else 1)

def vstack(tensors):
    return cat([atleast_2d(t) for t in tensors], 0)

row_stack = vstack

def dstack(tensors):
    return cat([atleast_3d(t) for t in tensors], 2)

def column_stack(tensors):
    columns = [t.reshape(-1, 1) if t._array.ndim <= 1 else t for t in tensors]
    return cat(columns, 1)

def tensor_split(input, indices_or_sections, dim=0):
    return input.tensor_split(indices_or_sections, dim)

def hsplit(input, sections):
    return input.hsplit(sections)

def vsplit(input, sections):
    return input.vsplit(sections)

def dsplit(input, sections):
    return input.dsplit(sections)

def meshgrid(*tensors, indexing=None):
    """Coordinate grids; ``indexing`` "ij" (torch's default, with its warning when not
    given) or "xy"."""
    tensors = _flat(tensors)
    if indexing is None:
        import warnings

        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        from .errors import ArgumentValueError

        raise ArgumentValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", "
                                 f"but received: {indexing}")
    for tensor in tensors:
        if tensor._array.ndim > 1:
            from .errors import ShapeError

            raise ShapeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                             f"got: {tensor._describe()}")
    # "xy" swaps the roles of the first two inputs: their sizes, and where each varies
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        axes[0], axes[1] = 1, 0
    sizes = [0] * len(tensors)
    for tensor, axis in zip(tensors, axes):
        sizes[axis] = tensor.numel()
    grids = []
    for tensor, axis in zip(tensors, axes):
        view = [1] * len(tensors)
        view[axis] = -1
        grids.append(tensor.reshape(view).expand(*sizes))
    return tuple(grids)

def cartesian_prod(*tensors):
    tensors = _flat(tensors)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], dim=1)

def combinations(input, r=2, with_replacement=False):
    """Every r-element combination of a 1-D tensor's elements, one per row -- built as
    torch builds it, so the graph is torch's: an "ij" meshgrid of r copies of the input
    (ViewBackward0, ExpandBackward0), each masked to the grid's increasing (with
    replacement: non-decreasing) index tuples (MaskedSelectBackward0), stacked as columns."""
    from .errors import InvalidValueError, ShapeError

    if input._array.ndim != 1:
        raise ShapeError(f"Expect a 1D vector, but got shape {list(input.shape)} "
                         f"({input._describe()})")
    if r < 0:
        raise InvalidValueError(f"Expect a non-negative number, but got {r}")
    xp = input._xp
    if r == 0:
        return Tensor._wrap(xp.zeros((0,), dtype=input._array.dtype), False)
    length = input._array.shape[0]
    # torch's _triu_mask: True where i < j < k ... (or i <= j <= k ... with replacement)
    indices = xp.meshgrid(*([xp.arange(length)] * r), indexing="ij")
    mask = xp.ones((length,) * r, dtype=bool)
    for before, after in zip(indices, indices[1:]):
        mask &= (before <= after) if with_replacement else (before < after)
    mask = Tensor._wrap(mask, False)
    return stack([grid.masked_select(mask)
                  for grid in meshgrid(*([input] * r), indexing="ij")], dim=1)

# -- linear algebra ----------------------------------------------------------------------
def mv(input, vec):
    return input.mv(vec)

def bmm(input, mat2):
    return input.bmm(mat2)

def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    return input.addmm(mat1, mat2, beta=beta, alpha=alpha)

def addmv(input, mat, vec, *, beta=1, alpha=1):
    return input.addmv(mat, vec, beta=beta, alpha=alpha)

def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return input.baddbmm(batch1, batch2, beta=beta, alpha=alpha)

def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return input.addbmm(batch1, batch2, beta=beta, alpha=alpha)

def outer(input, vec2):
    return input.outer(vec2)

ger = outer

def inner(input, other):
    return input.inner(other)

def vdot(input, other):
    return input.vdot(other)

def cross(input, other, dim=None):
    """``torch.cross``: without ``dim``, the first dim of size 3 (torch's deprecated
    default, with its warning)."""
    from .ops.decompositions import Cross

    if dim is None:
        import warnings

        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease either "
            "pass the dim explicitly or simply use torch.linalg.cross.\nThe default value of "
            "dim will change to agree with that of linalg.cross in a future release.",
            UserWarning, stacklevel=2)
        sizes = input._array.shape
        dim = next((axis for axis, size in enumerate(sizes) if size == 3), -1)
    return Cross.apply(input, other, dim)

def tensordot(a, b, dims=2):
    """Contract the last ``dims`` dims of a with the first of b (or the listed pairs)."""
    from .ops.linalg import Mm
    from .ops.shape import wrap_dim

    if isinstance(dims, int):
        if dims < 0:
            from .errors import InvalidValueError

            raise InvalidValueError(f"tensordot expects dims >= 0, but got dims={dims}")
        given_a, given_b = list(range(-dims, 0)), list(range(dims))  # as torch passes them
    else:
        given_a, given_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    dims_a = [wrap_dim(d, a._array.ndim) for d in given_a]
    dims_b = [wrap_dim(d, b._array.ndim) for d in given_b]
    for left, right in zip(dims_a, dims_b):
        if a._array.shape[left] != b._array.shape[right]:
            from .errors import ShapeError

            raise ShapeError(
                f"contracted dimensions need to match, but first has size "
                f"{a._array.shape[left]} in dim {left} and second has size "
                f"{b._array.shape[right]} in dim {right} ({a._describe()} and "
                f"{b._describe()}). Hint: dims=n contracts the last n dims of a with the "
                "first n of b; pass dims=([...], [...]) to pick them.")
    free_a = [d for d in range(a._array.ndim) if d not in dims_a]
    free_b = [d for d in range(b._array.ndim) if d not in dims_b]
    size_free_a = _product(a._array.shape[d] for d in free_a)
    size_free_b = _product(b._array.shape[d] for d in free_b)
    size_contracted = _product(a._array.shape[d] for d in dims_a)
    # the contracted dims as given (torch's PermuteBackward0 shows them so)
    left = a.permute(*(free_a + given_a)).reshape(size_free_a, size_contracted)
    right = b.permute(*(given_b + free_b)).reshape(size_contracted, size_free_b)
    shape_out = [a._array.shape[d] for d in free_a] + [b._array.shape[d] for d in free_b]
    return Mm.apply(left, right).reshape(shape_out)

def _product(values):
    result = 1
    for value in values:
        result *= value
    return result

def kron(input, other):
    """The Kronecker product (an UnsafeViewBackward0 node at the end, as in torch)."""
    from .ops.shape import UnsafeView

    ndim = builtins.max(input._array.ndim, other._array.ndim)
    a_shape = (1,) * (ndim - input._array.ndim) + tuple(input.shape)
    b_shape = (1,) * (ndim - other._array.ndim) + tuple(other.shape)
    # each operand spread over interleaved dims by one _unsafe_view, as torch's kron does
    a_spread = UnsafeView.apply(input, shape=tuple(s for size in a_shape for s in (size, 1)))
    b_spread = UnsafeView.apply(other, shape=tuple(s for size in b_shape for s in (1, size)))
    product = a_spread * b_spread
    return UnsafeView.apply(product, shape=tuple(x * y for x, y in zip(a_shape, b_shape)))

def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    from .ops.distance import Cdist

    return Cdist.apply(x1, x2, p)

def dist(input, other, p=2):
    return input.dist(other, p)

def chain_matmul(*matrices):
    from . import linalg as _linalg

    return _linalg.multi_dot(_flat(matrices))

def matrix_power(input, n):
    return input.matrix_power(n)

def det(input):
    return input.det()

def logdet(input):
    return input.logdet()

def slogdet(input):
    return input.slogdet()

def inverse(input):
    return input.inverse()

def pinverse(input, rcond=1e-15):
    return input.pinverse(rcond)

def cholesky(input, upper=False):
    return input.cholesky(upper)

def einsum(equation, *operands):
    from .ops.einsum import einsum as contract

    return contract(equation, *_flat(operands))

__all__ = [  # every public name defined above
    "ValuesIndices",
    "abs",
    "absolute",
    "acos",
    "acosh",
    "add",
    "addbmm",
    "addcdiv",
    "addcmul",
    "addmm",
    "addmv",
    "all",
    "allclose",
    "amax",
    "amin",
    "aminmax",
    "any",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "argmax",
    "argmin",
    "argsort",
    "argwhere",
    "as_strided",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "baddbmm",
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "bmm",
    "broadcast_shapes",
    "broadcast_tensors",
    "broadcast_to",
    "bucketize",
    "cartesian_prod",
    "cat",
    "cdist",
    "ceil",
    "chain_matmul",
    "cholesky",
    "chunk",
    "clamp",
    "clamp_max",
    "clamp_min",
    "clip",
    "clone",
    "column_stack",
    "combinations",
    "concat",
    "concatenate",
    "copysign",
    "cos",
    "cosh",
    "count_nonzero",
    "cross",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "deg2rad",
    "det",
    "detach",
    "diag",
    "diag_embed",
    "diagonal",
    "diagonal_scatter",
    "dist",
    "div",
    "divide",
    "dot",
    "dsplit",
    "dstack",
    "einsum",
    "eq",
    "equal",
    "erf",
    "erfc",
    "erfinv",
    "exp",
    "exp2",
    "expm1",
    "fix",
    "flatten",
    "flip",
    "fliplr",
    "flipud",
    "float_power",
    "floor",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "frac",
    "gather",
    "ge",
    "ger",
    "greater",
    "greater_equal",
    "gt",
    "heaviside",
    "hsplit",
    "hstack",
    "hypot",
    "index_add",
    "index_copy",
    "index_fill",
    "index_put",
    "index_select",
    "inner",
    "inverse",
    "is_tensor",
    "isclose",
    "isfinite",
    "isin",
    "isinf",
    "isnan",
    "isneginf",
    "isposinf",
    "isreal",
    "kron",
    "kthvalue",
    "le",
    "lerp",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "log_softmax",
    "logaddexp",
    "logaddexp2",
    "logcumsumexp",
    "logdet",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logit",
    "logsumexp",
    "lt",
    "masked_fill",
    "masked_scatter",
    "masked_select",
    "matmul",
    "matrix_power",
    "max",
    "maximum",
    "mean",
    "median",
    "meshgrid",
    "min",
    "minimum",
    "mm",
    "mode",
    "moveaxis",
    "movedim",
    "msort",
    "mul",
    "multiply",
    "mv",
    "nan_to_num",
    "nanmean",
    "nanmedian",
    "nansum",
    "narrow",
    "ne",
    "neg",
    "negative",
    "nonzero",
    "norm",
    "not_equal",
    "numel",
    "outer",
    "permute",
    "pinverse",
    "positive",
    "pow",
    "prod",
    "rad2deg",
    "ravel",
    "reciprocal",
    "relu",
    "remainder",
    "repeat_interleave",
    "reshape",
    "roll",
    "rot90",
    "round",
    "row_stack",
    "rsqrt",
    "rsub",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "searchsorted",
    "select",
    "sgn",
    "sigmoid",
    "sign",
    "signbit",
    "sin",
    "sinc",
    "sinh",
    "slogdet",
    "softmax",
    "sort",
    "split",
    "split_with_sizes",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "std_mean",
    "sub",
    "subtract",
    "sum",
    "swapaxes",
    "swapdims",
    "t",
    "take",
    "take_along_dim",
    "tan",
    "tanh",
    "tensor_split",
    "tensordot",
    "tile",
    "topk",
    "trace",
    "transpose",
    "tril",
    "triu",
    "true_divide",
    "trunc",
    "unbind",
    "unflatten",
    "unique",
    "unique_consecutive",
    "unsafe_chunk",
    "unsafe_split",
    "unsafe_split_with_sizes",
    "unsqueeze",
    "var",
    "var_mean",
    "vdot",
    "vsplit",
    "vstack",
    "where",
    "xlogy",
]
