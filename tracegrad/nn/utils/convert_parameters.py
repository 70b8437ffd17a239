"""All parameters as one flat vector, and back."""

from __future__ import annotations

from collections.abc import Iterable

from ...autograd.grad_mode import no_grad
from ...ops.shape import Cat
from ...tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """One 1-d tensor of every parameter's values, in order (differentiable: a cat of
    views, as in torch).

    >>> import tracegrad as torch
    >>> torch.nn.utils.parameters_to_vector([torch.ones(2, 2), torch.zeros(1)])
    tensor([1., 1., 1., 1., 0.])
    """
    pieces = []
    device = None
    for param in parameters:
        if device is None:
            device = param.device
        elif param.device != device:
            raise TypeError("Found two parameters on different devices, this is currently "
                            "not supported.")
        pieces.append(param.reshape(-1))
    return Cat.apply(*pieces, dim=0)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into each parameter, in place."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    start = 0
    for param in parameters:
        count = param.numel()
        with no_grad():
            param.copy_(vec[start:start + count].view_as(param))
        start += count
