"""Gradient clipping: by total norm (``clip_grad_norm_``) or by value
(``clip_grad_value_``), in place, as torch.nn.utils does."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

from ... import factories
from ...autograd.grad_mode import no_grad
from ...tensor import Tensor


def _grads(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _vector_norm(tensor: Tensor, norm_type: float):
    xp = tensor._xp
    values = xp.abs(tensor._array)
    if norm_type == math.inf:
        return values.max() if values.size else xp.asarray(0.0, dtype=values.dtype)
    if norm_type == 0:
        return (values != 0).sum().astype(values.dtype)
    return (values ** norm_type).sum() ** (1.0 / norm_type)


def get_total_norm(tensors: Iterable[Tensor] | Tensor, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The norm of the norms of ``tensors`` (as if they were one vector)."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return factories.tensor(0.0)
    xp = tensors[0]._xp
    norms = xp.stack([_vector_norm(t, norm_type) for t in tensors])
    stacked = Tensor._wrap(norms, False)
    total = Tensor._wrap(xp.asarray(_vector_norm(stacked, norm_type)), False)
    if error_if_nonfinite and not bool(xp.isfinite(total._array)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their total norm is at most
    ``max_norm``; returns the total norm before clipping."""
    grads = _grads(parameters)
    if not grads:
        return factories.tensor(0.0)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    coefficient = min(float(max_norm) / (float(total) + 1e-6), 1.0)
    with no_grad():
        for grad in grads:
            grad.mul_(coefficient)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient of ``parameters`` to [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for grad in _grads(parameters):
            grad.clamp_(min=-clip_value, max=clip_value)
