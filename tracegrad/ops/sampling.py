"""Random draws parametrised by tensors: normal(mean, std), bernoulli(p), poisson(rate).

torch records a node for them when a parameter requires grad, and defines its gradient
as zero (the sample is not differentiated through; write ``mean + std * randn_like(std)``
for the reparameterised form). These ops do the same, so a graph through a sample has
torch's nodes and torch's (zero) gradients.
"""

from __future__ import annotations

import numpy as np

from .. import random as _random
from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..errors import InvalidValueError
from ..tensor import Tensor
from ._operands import broadcast_error


def _zero_grads(ctx, grad, count: int) -> tuple:
    grads = []
    slot = 0
    for position in range(count):
        if position in ctx._arg_slots:
            needed = ctx.needs_input_grad[position]
            grads.append(grad * 0 if needed else None)  # the engine sums it to shape
            slot += 1
        else:
            grads.append(None)
    return tuple(grads) + (None,)  # the generator


def _values(value):
    return value._array if isinstance(value, Tensor) else value


def _check_std(std) -> None:
    array = _values(std)
    if np.any(np.asarray(array < 0)):
        raise InvalidValueError(
            f"normal expects all elements of std >= 0.0 (got "
            f"{std._describe() if isinstance(std, Tensor) else std}). Hint: a standard "
            "deviation is never negative; take .abs() or exp() of it.")


class Normal(Op):
    """``normal(mean, std)`` with tensors for both (NormalBackward3)."""

    node_name = "NormalBackward3"
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, mean, std, generator=None):
        _check_std(std)
        tensor = mean if isinstance(mean, Tensor) else std
        xp = tensor._xp
        m, s = _values(mean), _values(std)
        try:
            shape = xp.broadcast_shapes(np.shape(m), np.shape(s))
        except ValueError:
            raise broadcast_error("normal", mean, std) from None
        dtype = tensor._array.dtype
        noise = _random.numpy_generator(generator).standard_normal(shape)
        return xp.asarray(m + s * xp.asarray(noise), dtype=dtype)

    @staticmethod
    def backward(ctx, grad):
        return _zero_grads(ctx, grad, 2)


class NormalTensorFloat(Normal):
    node_name = "NormalBackward1"


class NormalFloatTensor(Normal):
    node_name = "NormalBackward2"


class Bernoulli(Op):
    """``bernoulli(p)``: 1 with probability p, else 0, in p's dtype."""

    node_name = "BernoulliBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, p, generator=None):
        probabilities = p._array
        if probabilities.size and (probabilities.min() < 0 or probabilities.max() > 1):
            raise InvalidValueError(
                f"Expected p_in >= 0 && p_in <= 1 to be true, but got false. (bernoulli: "
                f"{p._describe()}) Hint: bernoulli takes probabilities; squash them with "
                "sigmoid() first.")
        draws = _random.numpy_generator(generator).random(probabilities.shape)
        return p._xp.asarray(draws < backends_host(probabilities)).astype(probabilities.dtype)

    @staticmethod
    def backward(ctx, grad):
        return (grad * 0, None)


class Poisson(Op):
    node_name = "PoissonBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, rates, generator=None):
        values = backends_host(rates._array)
        if values.size and values.min() < 0:
            raise InvalidValueError(f"invalid Poisson rate, expected rate to be non-negative "
                                    f"({rates._describe()})")
        draws = _random.numpy_generator(generator).poisson(values)
        return rates._xp.asarray(draws.astype(rates._array.dtype))

    @staticmethod
    def backward(ctx, grad):
        return (grad * 0, None)


def backends_host(array):
    from .. import backends

    return backends.to_host(array)
