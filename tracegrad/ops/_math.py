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

from ..backends import array_module
from ..tensor import Tensor
from . import reduce as _reduce


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
        grad = grad.reshape((1,) * len(input_shape))
    # A read-only broadcast view: the engine copies it before anything writes to it.
    return array_module(grad).broadcast_to(grad, tuple(input_shape))
