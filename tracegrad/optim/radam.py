"""RAdam (rectified Adam), as torch.optim.RAdam."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ..tensor import Tensor
from .optimizer import (
    Optimizer,
    apply_update,
    check_betas,
    decay_weights,
    direction,
    increment,
    lerp_,
    step_tensor,
    zeros_state,
)


class RAdam(Optimizer):
    """Adam whose adaptive step is switched on (and rectified) once the variance estimate
    is reliable (``rho_t > 5``); before that, momentum SGD on the bias-corrected mean."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                      "weight_decay": weight_decay, "maximize": maximize,
                                      "foreach": foreach, "capturable": capturable,
                                      "decoupled_weight_decay": decoupled_weight_decay,
                                      "differentiable": differentiable})

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        if not state:
            state["step"] = step_tensor()
            state["exp_avg"] = zeros_state(param)
            state["exp_avg_sq"] = zeros_state(param)
        step = increment(state["step"])
        beta1, beta2 = group["betas"]
        lr = float(group["lr"])
        decay_weights(group, param)
        update = direction(group, param, grad)
        exp_avg, exp_avg_sq = state["exp_avg"]._array, state["exp_avg_sq"]._array
        lerp_(exp_avg, update, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * (update * update)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        corrected = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                             / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            root = param._xp.sqrt(exp_avg_sq)
            root += group["eps"]
            adaptive = (bias_correction2 ** 0.5) / root
            apply_update(param, corrected * lr * adaptive * rect, 1.0)
        else:
            apply_update(param, corrected * lr, 1.0)
