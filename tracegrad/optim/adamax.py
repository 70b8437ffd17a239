"""Adamax (Adam with an infinity norm), as torch.optim.Adamax."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..tensor import Tensor
from .optimizer import (
    Optimizer,
    apply_update,
    check_betas,
    direction,
    increment,
    lerp_,
    step_tensor,
    zeros_state,
)


class Adamax(Optimizer):
    """``m = lerp(m, g, 1 - beta1)``; ``u = max(beta2 * u, |g| + eps)``;
    ``p -= lr / (1 - beta1**t) * m / u``."""

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                      "weight_decay": weight_decay, "foreach": foreach,
                                      "maximize": maximize, "differentiable": differentiable,
                                      "capturable": capturable})

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        if not state:
            state["step"] = step_tensor()
            state["exp_avg"] = zeros_state(param)
            state["exp_inf"] = zeros_state(param)
        step = increment(state["step"])
        beta1, beta2 = group["betas"]
        update = direction(group, param, grad)
        exp_avg, exp_inf = state["exp_avg"]._array, state["exp_inf"]._array
        lerp_(exp_avg, update, 1 - beta1)
        exp_inf *= beta2
        param._xp.maximum(exp_inf, param._xp.abs(update) + group["eps"], out=exp_inf)
        apply_update(param, exp_avg / exp_inf, float(group["lr"]) / (1 - beta1 ** step))
