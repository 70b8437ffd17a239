"""The ``torch.*`` function forms of tensor ops (``torch.exp(x)``, ``torch.cat([...])``)."""

from __future__ import annotations

from ._methods import ValuesIndices
from .ops import indexing, linalg, reduce, shape, unary
from .tensor import Tensor


def _method_function(name: str):
    """``torch.<name>(input, *args)`` == ``input.<name>(*args)``, with a real name."""

    def function(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``tracegrad.{name}(input, ...)`` is ``input.{name}(...)``."
    return function


_METHOD_FORMS = (  # noqa: SIM905 - a word list reads better than 64 quoted strings
    "add sub mul div neg pow exp log sqrt abs sin cos tanh sigmoid relu clamp clip "
    "clamp_min clamp_max sum mean argmax argmin norm reshape flatten t transpose "
    "permute unsqueeze squeeze mm matmul dot gather scatter scatter_add masked_fill "
    "square reciprocal isnan isinf isfinite sign eq ne lt le gt ge maximum minimum "
    "softmax log_softmax clone numel any all split chunk unbind narrow var std").split()

for _name in _METHOD_FORMS:
    globals()[_name] = _method_function(_name) if _name != "clip" else None
clip = _method_function("clamp")


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
        return tuple(Tensor._wrap(index, False) for index in condition._xp.nonzero(condition._array))
    return indexing.Where.apply(condition, input, other)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(input._xp.allclose(input._array, other._array, rtol=rtol, atol=atol,
                                   equal_nan=equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return Tensor._wrap(input._xp.isclose(input._array, other._array, rtol=rtol, atol=atol,
                                          equal_nan=equal_nan), False)


def equal(input, other) -> bool:
    return input.shape == other.shape and bool((input._array == other._array).all())


def numel(input) -> int:
    return input.numel()


def is_tensor(value) -> bool:
    return isinstance(value, Tensor)


def detach(input):
    return input.detach()


__all__ = [  # noqa: PLE0604 - the method forms are generated above
    *_METHOD_FORMS, "max", "min", "cat", "concat", "concatenate", "stack", "where",
    "allclose", "isclose", "equal", "is_tensor", "detach", "ValuesIndices", "linalg",
    "reduce", "unary"]
