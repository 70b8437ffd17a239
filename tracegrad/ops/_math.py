"""The operations a backward formula uses beyond Python's operators, each for both kinds of
value a formula runs on: Tensors (with create_graph, so the backward pass is recorded) and
backend arrays (without it: one NumPy/CuPy call per step, nothing recorded).

An op that sets ``array_backward = True`` writes its ``backward`` once, with ``+ - * /``,
``**``, comparisons, and the functions here; ``ctx.saved_tensors`` then gives Tensors or
arrays to match the gradient. Each function looks at what it was given (a Tensor or not),
so the formula never says which way it runs.

>>> import numpy as np
>>> sum_to(np.ones((2, 3), dtype=np.float32), (1, 3))
array([[2., 2., 2.]], dtype=float32)
"""

from __future__ import annotations

import numpy as np

from ..autograd import grad_mode as _grad_mode
from ..backends import array_module
from ..backends import kernels as _kernels
from ..tensor import Tensor
from . import reduce as _reduce

_ndarray = np.ndarray


def sum_to(grad, shape):
    """``grad`` summed down to ``shape``: the backward of broadcasting."""
    if grad.__class__ is Tensor:
        return _reduce.sum_to(grad, shape)
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + axis for axis, size in enumerate(shape)
        if size == 1 and grad.shape[lead + axis] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


def expand_reduced(grad, input_shape, dims, keepdim: bool):
    """The gradient of a reduction over ``dims`` broadcast back to the input's shape."""
    if grad.__class__ is Tensor:
        return _reduce.expand_reduced(grad, input_shape, dims, keepdim)
    if not keepdim and dims is not None and grad.ndim != len(input_shape):
        kept = list(input_shape)
        for axis in dims:
            kept[axis] = 1
        grad = grad.reshape(kept)
    elif dims is None and grad.ndim != len(input_shape):
        if grad.__class__ is _ndarray and grad.size == 1:
            # x.sum()'s gradient (every loss): the one value seen at every position, made
            # as np.broadcast_to makes it, without its Python layers (a third of its cost).
            shape = tuple(input_shape)
            view = _ndarray(shape, grad.dtype, grad, 0, (0,) * len(shape))
            view.flags.writeable = False
            return view
        grad = grad.reshape((1,) * len(input_shape))
    # A read-only broadcast view: the engine copies it before anything writes to it.
    return array_module(grad).broadcast_to(grad, tuple(input_shape))


def xp(value):
    """The array module (NumPy or CuPy) a Tensor's or an array's data lives in."""
    return value._xp if value.__class__ is Tensor else array_module(value)


def _same_name(name: str):
    """The math function ``name`` of a Tensor (recorded, for create_graph) or of an array
    (NumPy or CuPy): the Tensor method and the array module's function share the name."""
    def apply(value):
        if value.__class__ is Tensor:
            return getattr(value, name)()
        return getattr(array_module(value), name)(value)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"``{name}`` of a Tensor (recorded) or an array."
    return apply


isfinite = _same_name("isfinite")
isnan = _same_name("isnan")
trunc = _same_name("trunc")
floor = _same_name("floor")
exp2 = _same_name("exp2")
sin = _same_name("sin")
cos = _same_name("cos")
exp = _same_name("exp")
log = _same_name("log")
sinh = _same_name("sinh")
cosh = _same_name("cosh")
tanh = _same_name("tanh")
log1p = _same_name("log1p")


def sign(value):
    """The sign of each element (no gradient flows through it either way)."""
    if value.__class__ is Tensor:
        return Tensor._wrap(value._xp.sign(value._array), False)
    return array_module(value).sign(value)


def mm(left, right):
    """The matrix product of two Tensors (recorded) or two arrays."""
    if left.__class__ is Tensor:
        return left.mm(right)
    return left @ right


def mv(matrix, vector):
    """Matrix times vector: Tensors (recorded, MvBackward0) or arrays."""
    if matrix.__class__ is Tensor:
        return _ops.linalg.Mv.apply(matrix, vector)
    return matrix @ vector


def outer(a, b):
    """The outer product of two vectors: Tensors (recorded, OuterBackward0) or arrays."""
    if a.__class__ is Tensor:
        return _ops.linalg.Outer.apply(a, b)
    return array_module(a).outer(a, b)


def t(value):
    """A 2-D Tensor (recorded) or array, transposed."""
    return value.t() if value.__class__ is Tensor else value.T


def fused_activation(name: str, grad, saved):
    """An activation's backward by a fused CUDA kernel, or None where none applies: on CPU,
    with create_graph (a kernel's result has no history), or when the dtypes differ."""
    if not _kernels.enabled:
        return None
    if grad.__class__ is Tensor:
        if grad._array.__class__ is _ndarray or _grad_mode.state.grad_enabled or \
                grad._array.dtype != saved._array.dtype:
            return None
        return Tensor._wrap(_kernels.activation_backward(name, grad._array, saved._array),
                            False)
    # (NumPy arrays, and NumPy scalars: what arithmetic on 0-d arrays gives)
    if grad.__class__ is _ndarray or isinstance(grad, np.generic) or \
            saved.__class__ is not grad.__class__ or grad.dtype != saved.dtype:
        return None
    return _kernels.activation_backward(name, grad, saved)


def transpose(value, dim0: int, dim1: int):
    """``value`` with two (non-negative) dimensions swapped: a Tensor (recorded) or array."""
    if value.__class__ is Tensor:
        return value.transpose(dim0, dim1)
    return array_module(value).swapaxes(value, dim0, dim1) if value.ndim > 1 else value


def permute(value, dims: tuple):
    """``value`` with its dimensions in the order ``dims``: a Tensor (recorded) or array."""
    if value.__class__ is Tensor:
        return value.permute(dims)
    return value.transpose(dims)


def bmm(left, right):
    """The batched matrix product of two 3-D Tensors (recorded) or arrays."""
    if left.__class__ is Tensor:
        return left.bmm(right)
    return left @ right


def sum_keepdim(value, dim: int):
    """``value`` summed over dimension ``dim``, kept as size 1: a Tensor (recorded) or array."""
    if value.__class__ is Tensor:
        return value.sum(dim=dim, keepdim=True)
    return value.sum(axis=dim, keepdims=True)


def sum_dims(value, dims: tuple):
    """``value`` summed over ``dims`` (gone from the shape): a Tensor (recorded) or an
    array."""
    if value.__class__ is Tensor:
        return value.sum(dim=dims)
    return value.sum(axis=dims)


def expand(value, shape: tuple):
    """``value`` broadcast to ``shape``: a Tensor (recorded, ExpandBackward0) or a read-only
    array view."""
    if value.__class__ is Tensor:
        return value.expand(shape)
    return array_module(value).broadcast_to(value, tuple(shape))


def sum_keepdims(value, dims: tuple):
    """``value`` summed over ``dims``, kept as size 1: a Tensor (recorded) or an array."""
    if value.__class__ is Tensor:
        return value.sum(dim=dims, keepdim=True)
    return value.sum(axis=dims, keepdims=True)


def mean_dims(value, dims: tuple):
    """The mean over ``dims``, kept as size 1: a Tensor (recorded) or an array."""
    if value.__class__ is Tensor:
        return value.mean(dim=dims, keepdim=True)
    return value.mean(axis=dims, keepdims=True)


def numel(value) -> int:
    """How many elements a Tensor or array holds."""
    return value.numel() if value.__class__ is Tensor else value.size


def constant(like, array):
    """A plain backend array the op kept (a mask, indices, statistics) as the same kind of
    value as ``like``: itself beside arrays, a Tensor that needs no gradient beside Tensors."""
    return Tensor._wrap(array, False) if like.__class__ is Tensor else array


def clamp_max(value, bound):
    """``value`` capped at the number ``bound``: a Tensor (recorded) or an array."""
    if value.__class__ is Tensor:
        return value.clamp(max=bound)
    return array_module(value).minimum(value, bound)


def clamp(value, low, high):
    """``value`` limited to ``[low, high]`` (either may be None): a Tensor (recorded) or an
    array."""
    if value.__class__ is Tensor:
        return value.clamp(low, high)
    return array_module(value).clip(value, low, high)


def logsigmoid(value):
    """``log(sigmoid(value))``, without overflow: a Tensor (recorded, LogSigmoidBackward0)
    or an array."""
    if value.__class__ is Tensor:
        return _ops.activation.LogSigmoid.apply(value)
    xp = array_module(value)
    return xp.minimum(value, 0) - xp.log1p(xp.exp(-xp.abs(value)))


def rsqrt(value):
    """``1 / sqrt(value)`` of a Tensor (recorded) or an array."""
    if value.__class__ is Tensor:
        return value.rsqrt()
    return 1 / array_module(value).sqrt(value)


def narrow(value, axis: int, start: int, end: int):
    """``value[start:end]`` along ``axis``: a Tensor (recorded, SliceBackward0) or an array
    view."""
    if value.__class__ is Tensor:
        return _ops.indexing.Slice.apply(value, axis, start, end, 1)
    return value[(slice(None),) * axis + (slice(start, end),)]


def select(value, axis: int, index: int):
    """Position ``index`` along ``axis``, that dimension gone: a Tensor (recorded,
    SelectBackward0) or an array view."""
    if value.__class__ is Tensor:
        return _ops.indexing.Select.apply(value, axis, index)
    return value[(slice(None),) * axis + (index, Ellipsis)]


def cat(values, axis: int):
    """Tensors (recorded, CatBackward0) or arrays joined along ``axis``."""
    if values[0].__class__ is Tensor:
        return _ops.shape.Cat.apply(*values, dim=axis)
    return array_module(values[0]).concatenate(values, axis=axis)


def stack(values, axis: int):
    """Tensors (recorded, StackBackward0) or arrays stacked along a new ``axis``."""
    if values[0].__class__ is Tensor:
        return _ops.shape.Stack.apply(*values, dim=axis)
    return array_module(values[0]).stack(values, axis=axis)


def unsqueeze(value, axis: int):
    """``value`` with a new dimension of size 1 at ``axis``: a Tensor (recorded) or an
    array view."""
    if value.__class__ is Tensor:
        return _ops.shape.Unsqueeze.apply(value, dim=axis)
    return array_module(value).expand_dims(value, axis)


def numpy_dtype(value):
    """The NumPy/CuPy dtype of a Tensor's or an array's elements."""
    return value._array.dtype if value.__class__ is Tensor else value.dtype


def reapply(op, value, *args, **attrs):
    """``op`` applied to ``value`` -- for an op whose backward is itself (flip, roll, tril,
    a dtype cast, a pad): beside Tensors recorded; beside arrays its forward on the array,
    recording nothing (a backward pass without create_graph runs without grad mode)."""
    if value.__class__ is Tensor:
        return op.apply(value, *args, **attrs)
    return op.apply(Tensor._wrap(value, False), *args, **attrs)._array


def apply(op, *args, **attrs):
    """``op`` applied to ``args`` as one step of a formula for both kinds of value: when a
    Tensor is among them, recorded (``op.apply``); otherwise -- a pass on arrays -- the op
    run on the arrays, recording nothing (such a pass runs without grad mode), and its
    array(s) returned. A plain array among Tensors (an index or mask the op kept) is made
    a Tensor that needs no gradient either way; keyword attributes are passed as given.

    >>> import numpy as np
    >>> from tracegrad.ops.rearrange import Flip
    >>> apply(Flip, np.array([1.0, 2.0]), dims=(0,))
    array([2., 1.])
    """
    on_tensors = False
    wrapped = []
    for arg in args:
        if arg.__class__ is Tensor:
            on_tensors = True
        elif _is_array(arg):
            arg = Tensor._wrap(arg, False)
        wrapped.append(arg)
    result = op.apply(*wrapped, **attrs)
    if on_tensors:
        return result
    if result.__class__ is tuple:
        return tuple(item._array for item in result)
    return result._array


def _is_array(value) -> bool:
    return value.__class__ is _ndarray or (
        value.__class__.__module__.startswith("cupy") and hasattr(value, "shape"))


def array_of(value):
    """The backend array of a Tensor, or the array itself: for what a formula computes
    from a value's numbers alone (a mask, a count), which nothing differentiates."""
    return value._array if value.__class__ is Tensor else value


def like_dtype(value, like):
    """``value`` (a mask, a count) cast to ``like``'s dtype: Tensors (recorded) or arrays."""
    if value.__class__ is Tensor:
        return value.to(like.dtype)
    return value.astype(like.dtype, copy=False)


def matmul(a, b):
    """``a @ b``: Tensors (recorded, as ``tracegrad.matmul``) or arrays."""
    if a.__class__ is Tensor:
        return _ops.linalg.matmul(a, b)
    return a @ b


def mT(value):
    """The last two dimensions swapped: a Tensor (recorded) or an array view."""
    return value.swapaxes(-2, -1)


def scaled(value, number):
    """``value * number`` as torch's C++ writes it (mul.Scalar): beside Tensors recorded as
    MulBackward1 (what a backward formula under create_graph shows), beside arrays the
    product."""
    if value.__class__ is Tensor:
        return _ops.arith.MulScalar.apply(value, number)
    return value * number


def divided(value, number):
    """``value / number`` as torch's C++ writes it (div.Scalar): DivBackward1 beside
    Tensors, the quotient beside arrays."""
    if value.__class__ is Tensor:
        return _ops.arith.DivScalar.apply(value, number)
    return value / number


def shifted(value, number):
    """``value + number`` as torch's C++ writes it (add.Scalar, AddBackward1; sub.Scalar,
    SubBackward1 for a negative ``number``, as ``tensor - 1`` is written) beside Tensors;
    the sum beside arrays."""
    if value.__class__ is Tensor:
        if number < 0:
            return _ops.arith.SubScalar.apply(value, -number)
        return _ops.arith.AddScalar.apply(value, number)
    return value + number


def number_minus(number, value):
    """``number - value`` as torch's C++ writes it (the number wrapped as a tensor:
    SubBackward0, with no edge for it) beside Tensors; the difference beside arrays."""
    if value.__class__ is Tensor:
        return _ops.arith.Sub.apply(number, value)
    return number - value


def number_over(number, value):
    """``number / value`` as torch's C++ writes it (the number wrapped as a tensor:
    DivBackward0, with no edge for it; Python's ``2 / t`` is a reciprocal times 2) beside
    Tensors; the quotient beside arrays."""
    if value.__class__ is Tensor:
        return _ops.arith.Div.apply(number, value)
    return number / value


def where(condition, a, b):
    """``a`` where ``condition`` holds, else ``b`` (either may be a number): Tensors
    (recorded, WhereBackward0) or arrays, by what ``condition`` is."""
    if condition.__class__ is Tensor:
        return _ops.indexing.Where.apply(condition, a, b)
    return array_module(condition).where(condition, a, b)


def sigmoid(value):
    """The logistic function of a Tensor (recorded) or an array (overflow-free)."""
    if value.__class__ is Tensor:
        return value.sigmoid()
    return _ops.unary._stable_sigmoid(array_module(value), value)


# The package, not its op modules: they import this one, and are all loaded before any
# backward runs (tensor.py binds them), so where() and sigmoid() read them at call time.
from .. import ops as _ops
