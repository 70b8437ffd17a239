"""Adadelta, as torch.optim.Adadelta."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..tensor import Tensor
from .optimizer import Optimizer, apply_update, direction, increment, step_tensor, zeros_state


class Adadelta(Optimizer):
    """``v = rho * v + (1 - rho) * g * g``; ``delta = sqrt(u + eps) / sqrt(v + eps) * g``;
    ``u = rho * u + (1 - rho) * delta * delta``; ``p -= lr * delta``."""

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                                      "maximize": maximize, "capturable": capturable,
                                      "foreach": foreach, "differentiable": differentiable})

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        if not state:
            state["step"] = step_tensor()
            state["square_avg"] = zeros_state(param)
            state["acc_delta"] = zeros_state(param)
        increment(state["step"])
        xp = param._xp
        rho, eps = group["rho"], group["eps"]
        update = direction(group, param, grad)
        square_avg, acc_delta = state["square_avg"]._array, state["acc_delta"]._array
        square_avg *= rho
        square_avg += (1 - rho) * (update * update)
        delta = xp.sqrt(acc_delta + eps)
        delta /= xp.sqrt(square_avg + eps)
        delta *= update
        acc_delta *= rho
        acc_delta += (1 - rho) * (delta * delta)
        apply_update(param, delta, float(group["lr"]))
