"""Adam (optionally AMSGrad), as torch.optim.Adam computes it."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import factories
from ..backends import kernels
from ..tensor import Tensor
from .optimizer import Optimizer, apply_update

_ndarray = np.ndarray


class Adam(Optimizer):
    """Adam, step for step as ``torch.optim.Adam``::

        g = grad + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g          (v_max = max(v_max, v) with amsgrad)
        p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    >>> import tracegrad as torch
    >>> w = torch.tensor([1.0], requires_grad=True)
    >>> opt = torch.optim.Adam([w], lr=0.1)
    >>> (w * 3).sum().backward(); opt.step()
    >>> w
    tensor([0.9000], requires_grad=True)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for index, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        if not state:
            state["step"] = 0
            state["exp_avg"] = factories.zeros_like(param)
            state["exp_avg_sq"] = factories.zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = factories.zeros_like(param)
        beta1, beta2 = group["betas"]
        state["step"] += 1
        step = state["step"]
        if param._array.__class__ is not _ndarray and kernels.enabled and not group["amsgrad"]:
            # CUDA: one fused kernel reads grad and writes param and both moments, where
            # the formulas below make about a dozen passes over memory
            kernels.adam_update(param._array, grad._array, state["exp_avg"]._array,
                                state["exp_avg_sq"]._array, lr=group["lr"], beta1=beta1,
                                beta2=beta2, eps=group["eps"],
                                weight_decay=group["weight_decay"],
                                maximize=group["maximize"], step=step)
            param._after_inplace("sub_")
            return
        xp = param._xp
        direction = -grad._array if group["maximize"] else grad._array
        if group["weight_decay"] != 0:
            direction = direction + group["weight_decay"] * param._array
        exp_avg, exp_avg_sq = state["exp_avg"]._array, state["exp_avg_sq"]._array
        exp_avg *= beta1
        exp_avg += (1 - beta1) * direction
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * (direction * direction)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = math.sqrt(1 - beta2 ** step)
        second_moment = exp_avg_sq
        if group["amsgrad"]:
            maximum = state["max_exp_avg_sq"]._array
            xp.maximum(maximum, exp_avg_sq, out=maximum)
            second_moment = maximum
        denominator = xp.sqrt(second_moment)
        denominator /= bias_correction2_sqrt
        denominator += group["eps"]
        apply_update(param, exp_avg / denominator, group["lr"] / bias_correction1)
