"""The ``torch.*`` function forms of tensor ops (``torch.exp(x)``, ``torch.cat([...])``).

Each is a plain definition with torch's signature; most call the Tensor method of the same
name (defined in ``tracegrad/_methods/``).
"""

from __future__ import annotations

import builtins

from ._methods import ValuesIndices
from .ops import indexing, linalg, shape
from .tensor import Tensor


def add(input, other, *, alpha=1):
    return input.add(other, alpha=alpha)

def sub(input, other, *, alpha=1):
    return input.sub(other, alpha=alpha)

def mul(input, other):
    return input.mul(other)

def div(input, other):
    return input.div(other)

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

def sum(input, dim=None, keepdim=False, *, dtype=None):
    return input.sum(dim, keepdim, dtype=dtype)

def mean(input, dim=None, keepdim=False):
    return input.mean(dim, keepdim)

def argmax(input, dim=None, keepdim=False):
    return input.argmax(dim, keepdim)

def argmin(input, dim=None, keepdim=False):
    return input.argmin(dim, keepdim)

def var(input, dim=None, unbiased=None, keepdim=False, *, correction=1):
    return input.var(dim, unbiased, keepdim, correction=correction)

def std(input, dim=None, unbiased=None, keepdim=False, *, correction=1):
    return input.std(dim, unbiased, keepdim, correction=correction)

def norm(input, p="fro", dim=None, keepdim=False):
    return input.norm(2 if p == "fro" else p, dim, keepdim)

def any(input, dim=None, keepdim=False):
    return input.any(dim, keepdim)

def all(input, dim=None, keepdim=False):
    return input.all(dim, keepdim)

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
    return input.clone()

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


def max(input, dim=None, keepdim=False):
    """``torch.max(t)``, ``torch.max(t, dim, keepdim)`` -> (values, indices), or
    ``torch.max(a, b)`` elementwise."""
    return input.max(dim, keepdim)


def min(input, dim=None, keepdim=False):
    return input.min(dim, keepdim)


def cat(tensors, dim=0):
    return shape.Cat.apply(*tensors, dim=dim)


concat = concatenate = cat


def stack(tensors, dim=0):
    return shape.Stack.apply(*tensors, dim=dim)


def where(condition, input=None, other=None):
    if input is None and other is None:
        return tuple(Tensor._wrap(index, False)
                     for index in condition._xp.nonzero(condition._array))
    return indexing.Where.apply(condition, input, other)


def trace(input):
    """The sum of the main diagonal of a matrix, as ``torch.trace`` (tracegrad's recorder
    is ``tracegrad.record()``)."""
    return linalg.Trace.apply(input)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> builtins.bool:
    return builtins.bool(input._xp.allclose(input._array, other._array, rtol=rtol, atol=atol,
                                            equal_nan=equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return Tensor._wrap(input._xp.isclose(input._array, other._array, rtol=rtol, atol=atol,
                                          equal_nan=equal_nan), False)


def equal(input, other) -> builtins.bool:
    return input.shape == other.shape and builtins.bool((input._array == other._array).all())


def is_tensor(obj) -> builtins.bool:
    return isinstance(obj, Tensor)


__all__ = [
    "ValuesIndices",
    "abs",
    "add",
    "all",
    "allclose",
    "any",
    "argmax",
    "argmin",
    "as_strided",
    "cat",
    "chunk",
    "clamp",
    "clamp_max",
    "clamp_min",
    "clip",
    "clone",
    "concat",
    "concatenate",
    "cos",
    "detach",
    "diagonal",
    "div",
    "dot",
    "eq",
    "equal",
    "exp",
    "flatten",
    "gather",
    "ge",
    "gt",
    "is_tensor",
    "isclose",
    "isfinite",
    "isinf",
    "isnan",
    "le",
    "log",
    "log_softmax",
    "lt",
    "masked_fill",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mm",
    "mul",
    "narrow",
    "ne",
    "neg",
    "norm",
    "numel",
    "permute",
    "pow",
    "reciprocal",
    "relu",
    "reshape",
    "scatter",
    "scatter_add",
    "select",
    "sigmoid",
    "sign",
    "sin",
    "softmax",
    "split",
    "split_with_sizes",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "sub",
    "sum",
    "t",
    "tanh",
    "trace",
    "transpose",
    "unbind",
    "unsafe_chunk",
    "unsafe_split",
    "unsafe_split_with_sizes",
    "unsqueeze",
    "var",
    "where",
]
