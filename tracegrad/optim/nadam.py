"""NAdam (Adam with Nesterov momentum and momentum decay), as torch.optim.NAdam."""

from __future__ import annotations

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


class NAdam(Optimizer):
    """``mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay))``; the step mixes the
    gradient and the first moment, each with its own Nesterov factor."""

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                      "weight_decay": weight_decay, "momentum_decay": momentum_decay,
                                      "decoupled_weight_decay": decoupled_weight_decay,
                                      "maximize": maximize, "foreach": foreach,
                                      "capturable": capturable, "differentiable": differentiable})

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        if not state:
            state["step"] = step_tensor()
            state["mu_product"] = step_tensor(1.0)
            state["exp_avg"] = zeros_state(param)
            state["exp_avg_sq"] = zeros_state(param)
        step = increment(state["step"])
        beta1, beta2 = group["betas"]
        lr, decay = float(group["lr"]), group["momentum_decay"]
        decay_weights(group, param)
        update = direction(group, param, grad)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
        product = state["mu_product"]
        product._array *= mu
        mu_product = float(product._array)
        exp_avg, exp_avg_sq = state["exp_avg"]._array, state["exp_avg_sq"]._array
        lerp_(exp_avg, update, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * (update * update)
        denominator = param._xp.sqrt(exp_avg_sq / (1 - beta2 ** step))
        denominator += group["eps"]
        apply_update(param, update / denominator, lr * (1.0 - mu) / (1.0 - mu_product))
        apply_update(param, exp_avg / denominator, lr * mu_next / (1.0 - mu_product * mu_next))
