"""Tensor's operators and methods, each a thin call into an op in tracegrad.ops.

Kept apart from tensor.py so that the class body stays about autograd state; ``install``
puts these on Tensor once, at import.
"""

from __future__ import annotations

from collections import namedtuple

from .ops import arith, indexing, linalg, reduce, shape, unary
from .ops._operands import operands

ValuesIndices = namedtuple("return_types", ["values", "indices"])


def _tensor_class():
    from .tensor import Tensor

    return Tensor


# -- arithmetic -------------------------------------------------------------------------
def __add__(self, other):
    return arith.Add.apply(self, other)


def __radd__(self, other):
    return arith.Add.apply(other, self)


def __sub__(self, other):
    return arith.Sub.apply(self, other)


def __rsub__(self, other):
    return arith.RSub.apply(other, self)


def __mul__(self, other):
    return arith.Mul.apply(self, other)


def __rmul__(self, other):
    return arith.Mul.apply(other, self)


def __truediv__(self, other):
    return arith.Div.apply(self, other)


def __rtruediv__(self, other):
    return arith.Div.apply(other, self)


def __neg__(self):
    return arith.Neg.apply(self)


def __pos__(self):
    return self


def __pow__(self, exponent):
    if isinstance(exponent, _tensor_class()):
        return arith.Pow.apply(self, exponent)
    return arith.PowScalar.apply(self, exponent)


def __rpow__(self, base):
    return arith.Pow.apply(base, self)


def __matmul__(self, other):
    return linalg.matmul(self, other)


def __rmatmul__(self, other):
    return linalg.matmul(other, self)


def __abs__(self):
    return unary.Abs.apply(self)


def add(self, other, alpha=1):
    return arith.Add.apply(self, other if alpha == 1 else other * alpha)


def sub(self, other, alpha=1):
    return arith.Sub.apply(self, other if alpha == 1 else other * alpha)


# -- comparisons and logic (no gradient) ------------------------------------------------
def _compare(self, other, compare):
    if other is None:
        return False
    x, y = operands(self, other)
    return _tensor_class()._wrap(compare(x, y), False)


def __eq__(self, other):
    return _compare(self, other, _ops.eq)


def __ne__(self, other):
    return _compare(self, other, _ops.ne)


def __lt__(self, other):
    return _compare(self, other, _ops.lt)


def __le__(self, other):
    return _compare(self, other, _ops.le)


def __gt__(self, other):
    return _compare(self, other, _ops.gt)


def __ge__(self, other):
    return _compare(self, other, _ops.ge)


def __and__(self, other):
    return _compare(self, other, _ops.and_)


def __or__(self, other):
    return _compare(self, other, _ops.or_)


def __xor__(self, other):
    return _compare(self, other, _ops.xor)


def __invert__(self):
    return _tensor_class()._wrap(~self._array, False)


import operator as _ops


# -- in-place ---------------------------------------------------------------------------
def add_(self, other, alpha=1):
    return self._inplace("add_", arith.Add, other if alpha == 1 else other * alpha)


def sub_(self, other, alpha=1):
    return self._inplace("sub_", arith.Sub, other if alpha == 1 else other * alpha)


def mul_(self, other):
    return self._inplace("mul_", arith.Mul, other)


def div_(self, other):
    return self._inplace("div_", arith.Div, other)


def pow_(self, exponent):
    if isinstance(exponent, _tensor_class()):
        return self._inplace("pow_", arith.Pow, exponent)
    return self._inplace("pow_", arith.PowScalar, exponent)


def neg_(self):
    return self._inplace("neg_", arith.Neg)


def zero_(self):
    return self._inplace("zero_", arith.Zero, 0)


def fill_(self, value):
    if isinstance(value, _tensor_class()):
        value = value.item()
    return self._inplace("fill_", arith.Fill, value)


def copy_(self, src, non_blocking=False):
    if not isinstance(src, _tensor_class()):
        from .factories import tensor

        src = tensor(src)
    return self._inplace("copy_", arith.Copy, src)


def clamp_(self, min=None, max=None):
    if max is None:
        return self._inplace("clamp_", unary.ClampMin, min)
    if min is None:
        return self._inplace("clamp_", unary.ClampMax, max)
    return self._inplace("clamp_", unary.Clamp, min, max)


def relu_(self):
    return self._inplace("relu_", unary.Relu)


def exp_(self):
    return self._inplace("exp_", unary.Exp)


def sigmoid_(self):
    return self._inplace("sigmoid_", unary.Sigmoid)


def tanh_(self):
    return self._inplace("tanh_", unary.Tanh)


def masked_fill_(self, mask, value):
    return self._inplace("masked_fill_", indexing.MaskedFill, mask, value)


def scatter_(self, dim, index, src=None, value=None, reduce=None):
    source = src if src is not None else value
    return self._inplace("scatter_", indexing.Scatter, dim, index, source, reduce=reduce)


def scatter_add_(self, dim, index, src):
    return self._inplace("scatter_add_", indexing.ScatterAdd, dim, index, src)


def normal_(self, mean=0.0, std=1.0, generator=None):
    from .factories import _random_like

    return _fill_random(self, "normal_", _random_like(self, "normal", mean, std))


def uniform_(self, a=0.0, b=1.0, generator=None):
    from .factories import _random_like

    return _fill_random(self, "uniform_", _random_like(self, "uniform", a, b))


def _fill_random(self, op_name, array):
    from .autograd.grad_mode import state

    if state.grad_enabled and self.requires_grad:
        self._check_inplace_allowed(op_name)
    self._array[...] = array
    self._after_inplace(op_name)
    return self


# -- reductions ------------------------------------------------------------------------
def sum(self, dim=None, keepdim=False, dtype=None):
    if dim is None:
        return reduce.SumAll.apply(self, dtype=_np_dtype(dtype))
    return reduce.Sum.apply(self, dim=dim, keepdim=keepdim, dtype=_np_dtype(dtype))


def mean(self, dim=None, keepdim=False):
    if dim is None:
        return reduce.MeanAll.apply(self)
    return reduce.Mean.apply(self, dim=dim, keepdim=keepdim)


def max(self, dim=None, keepdim=False):
    if isinstance(dim, _tensor_class()):
        return unary.Maximum.apply(self, dim)
    if dim is None:
        return reduce.MaxAll.apply(self)
    return ValuesIndices(*reduce.MaxDim.apply(self, dim, keepdim=keepdim))


def min(self, dim=None, keepdim=False):
    if isinstance(dim, _tensor_class()):
        return unary.Minimum.apply(self, dim)
    if dim is None:
        return reduce.MinAll.apply(self)
    return ValuesIndices(*reduce.MinDim.apply(self, dim, keepdim=keepdim))


def argmax(self, dim=None, keepdim=False):
    return reduce.argmax(self, dim, keepdim)


def argmin(self, dim=None, keepdim=False):
    return reduce.argmin(self, dim, keepdim)


def var(self, dim=None, unbiased=None, keepdim=False, *, correction=1):
    return reduce.var(self, dim, keepdim, correction, unbiased)


def std(self, dim=None, unbiased=None, keepdim=False, *, correction=1):
    return reduce.std(self, dim, keepdim, correction, unbiased)


def norm(self, p=2, dim=None, keepdim=False):
    if p != 2:
        return (self.abs() ** p).sum(dim=dim, keepdim=keepdim) ** (1.0 / p)
    return (self * self).sum(dim=dim, keepdim=keepdim).sqrt()


def _np_dtype(dtype):
    if dtype is None:
        return None
    from . import _dtype

    return _dtype.to_numpy_dtype(dtype)


# -- shape -------------------------------------------------------------------------------
def _sizes(sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        return tuple(sizes[0])
    return tuple(sizes)


def view(self, *sizes):
    if len(sizes) == 1 and not isinstance(sizes[0], (int, tuple, list)):
        return self.to(sizes[0])  # view(dtype)
    return shape.View.apply(self, shape=shape.infer_shape(sizes, self._array.size, self))


def view_as(self, other):
    return self.view(other.shape)


def reshape(self, *sizes):
    return shape.Reshape.apply(self, shape=shape.infer_shape(sizes, self._array.size, self))


def reshape_as(self, other):
    return self.reshape(other.shape)


def flatten(self, start_dim=0, end_dim=-1):
    ndim = self._array.ndim
    if ndim == 0:
        return self.reshape(1)
    start, end = shape.wrap_dim(start_dim, ndim), shape.wrap_dim(end_dim, ndim)
    if start > end:
        raise ValueError("flatten() has invalid args: start_dim cannot come after end_dim")
    sizes = self._array.shape
    middle = 1
    for size in sizes[start:end + 1]:
        middle *= size
    return shape.Reshape.apply(self, shape=sizes[:start] + (middle,) + sizes[end + 1:])


def t(self):
    return shape.T.apply(self)


def _T(self):
    if self._array.ndim <= 2:
        return shape.T.apply(self)
    return shape.Permute.apply(self, dims=tuple(reversed(range(self._array.ndim))))


def _mT(self):
    return shape.Transpose.apply(self, -2, -1)


def transpose(self, dim0, dim1):
    return shape.Transpose.apply(self, dim0, dim1)


def permute(self, *dims):
    return shape.Permute.apply(self, dims=_sizes(dims))


def unsqueeze(self, dim):
    return shape.Unsqueeze.apply(self, dim=dim)


def squeeze(self, dim=None):
    if dim is None:
        return shape.SqueezeAll.apply(self)
    return shape.Squeeze.apply(self, dim=dim)


def expand(self, *sizes):
    return shape.Expand.apply(self, shape=_sizes(sizes))


def expand_as(self, other):
    return shape.Expand.apply(self, shape=tuple(other.shape))


def repeat(self, *sizes):
    return shape.Repeat.apply(self, repeats=_sizes(sizes))


def split(self, split_size, dim=0):
    return shape.split(self, split_size, dim)


def chunk(self, chunks, dim=0):
    return shape.chunk(self, chunks, dim)


def unbind(self, dim=0):
    return shape.unbind(self, dim)


def narrow(self, dim, start, length):
    return shape.narrow(self, dim, start, length)


def contiguous(self, memory_format=None):
    data = self._array
    if data.flags.c_contiguous:
        return self
    return shape.Clone.apply(self)


def is_contiguous(self, memory_format=None):
    return bool(self._array.flags.c_contiguous)


def clone(self, memory_format=None):
    return shape.Clone.apply(self)


def __getitem__(self, index):
    return indexing.getitem(self, index)


# -- math -----------------------------------------------------------------------------
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
    return unary.ClampMin.apply(self, min)


def clamp_max(self, max):
    return unary.ClampMax.apply(self, max)


def maximum(self, other):
    return unary.Maximum.apply(self, other)


def minimum(self, other):
    return unary.Minimum.apply(self, other)


def softmax(self, dim, dtype=None):
    return unary.softmax(self, dim, dtype)


def log_softmax(self, dim, dtype=None):
    return unary.log_softmax(self, dim, dtype)


def pow(self, exponent):
    return __pow__(self, exponent)


def square(self):
    return arith.PowScalar.apply(self, 2)


def mul(self, other):
    return arith.Mul.apply(self, other)


def div(self, other):
    return arith.Div.apply(self, other)


def neg(self):
    return arith.Neg.apply(self)


def reciprocal(self):
    return arith.Div.apply(1.0, self)


def mm(self, other):
    return linalg.Mm.apply(self, other)


def matmul(self, other):
    return linalg.matmul(self, other)


def dot(self, other):
    return linalg.Dot.apply(self, other)


def gather(self, dim, index):
    return indexing.Gather.apply(self, dim, index)


def scatter(self, dim, index, src=None, value=None, reduce=None):
    source = src if src is not None else value
    return indexing.Scatter.apply(self, dim, index, source, reduce=reduce)


def scatter_add(self, dim, index, src):
    return indexing.ScatterAdd.apply(self, dim, index, src)


def masked_fill(self, mask, value):
    return indexing.MaskedFill.apply(self, mask, value)


def where(self, condition, other):
    return indexing.Where.apply(condition, self, other)


def sign(self):
    return unary.sign(self)


def eq(self, other):
    return __eq__(self, other)


def ne(self, other):
    return __ne__(self, other)


def lt(self, other):
    return __lt__(self, other)


def le(self, other):
    return __le__(self, other)


def gt(self, other):
    return __gt__(self, other)


def ge(self, other):
    return __ge__(self, other)


def isnan(self):
    return _tensor_class()._wrap(self._xp.isnan(self._array), False)


def isinf(self):
    return _tensor_class()._wrap(self._xp.isinf(self._array), False)


def isfinite(self):
    return _tensor_class()._wrap(self._xp.isfinite(self._array), False)


def any(self, dim=None, keepdim=False):
    return _tensor_class()._wrap(self._xp.asarray(self._array.any(axis=dim, keepdims=keepdim)),
                                 False)


def all(self, dim=None, keepdim=False):
    return _tensor_class()._wrap(self._xp.asarray(self._array.all(axis=dim, keepdims=keepdim)),
                                 False)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    from .factories import zeros

    return zeros(*size, dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    from .factories import ones

    return ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    from .factories import full

    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    from .factories import tensor

    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


_IN_PLACE_OPERATORS = {"__iadd__": add_, "__isub__": sub_, "__imul__": mul_,
                       "__itruediv__": div_, "__ipow__": pow_}


def install(cls) -> None:
    namespace = globals()
    skip = {"install", "annotations", "namedtuple", "operands", "ValuesIndices"}
    for name, value in list(namespace.items()):
        if name in skip or not callable(value) or getattr(value, "__module__", "") != __name__:
            continue
        if name.startswith("_") and not name.startswith("__"):
            continue
        setattr(cls, name, value)
    for name, method in _IN_PLACE_OPERATORS.items():
        setattr(cls, name, method)
    cls.T = property(_T)
    cls.mT = property(_mT)
    cls.__hash__ = object.__hash__
