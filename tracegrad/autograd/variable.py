"""``Variable``: the pre-0.4 wrapper around a tensor, which torch still accepts.

Since torch 0.4 a Variable *is* a Tensor: ``Variable(t)`` returns a plain Tensor (a new
leaf sharing ``t``'s storage and version counter, detached from ``t``'s graph), and
``isinstance(x, Variable)`` is true for every tensor. ``volatile`` has no effect any more
and warns, as in torch.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype
from . import function as _function  # its Tensor is bound once tensor.py has loaded

__all__ = ["Variable", "VariableMeta"]


class VariableMeta(type):
    """Makes ``isinstance(tensor, Variable)`` true for every Tensor, as in torch."""

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, _function.Tensor)


class Variable(metaclass=VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)``: ``data`` as a new leaf.

    >>> import tracegrad as torch
    >>> from tracegrad.autograd import Variable
    >>> x = Variable(torch.ones(2), requires_grad=True)
    >>> x, isinstance(x, Variable), type(x).__name__
    (tensor([1., 1.], requires_grad=True), True, 'Tensor')
    """

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False,
                _grad_fn=None, name: str | None = None):
        Tensor = _function.Tensor
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use "
                          "`with torch.no_grad():` instead.", UserWarning, stacklevel=2)
        if _grad_fn is not None:
            raise TypeError(
                f"_grad_fn has to be a Function object or None, but got "
                f"{type(_grad_fn).__name__}. Hint: tracegrad makes grad_fn itself; build "
                "the tensor with the operation (or an autograd.Function) instead.")
        if data is None:
            data = Tensor._wrap(np.zeros(0, _dtype.default_float.numpy), False)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        # torch.Tensor's own class, not a subclass such as Parameter, as torch returns.
        tensor = Tensor._wrap(data._array, False)
        tensor._version_counter = data._version_counter
        if requires_grad:
            if not data.dtype.is_floating_point:
                from .._legacy import check_requires_grad_dtype  # the error path only

                check_requires_grad_dtype(data.dtype)
            tensor.requires_grad = True
        if name is not None:
            tensor.name = name
        return tensor
