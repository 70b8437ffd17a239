"""RMSprop (optionally centered, with momentum), as torch.optim.RMSprop."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..tensor import Tensor
from .optimizer import (
    Optimizer,
    apply_update,
    direction,
    increment,
    lerp_,
    step_tensor,
    zeros_state,
)


class RMSprop(Optimizer):
    """``v = alpha * v + (1 - alpha) * g * g``; ``p -= lr * g / (sqrt(v - mean(g)**2 if
    centered) + eps)``, through a momentum buffer when ``momentum > 0``.

    >>> import tracegrad as torch
    >>> w = torch.tensor([1.0], requires_grad=True)
    >>> opt = torch.optim.RMSprop([w], lr=0.01)
    >>> (w * 3).sum().backward(); opt.step()
    >>> round(w.item(), 4)
    0.9
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        for name, value in (("learning rate", lr), ("epsilon value", eps),
                            ("momentum value", momentum), ("weight_decay value", weight_decay),
                            ("alpha value", alpha)):
            if not 0.0 <= value:
                raise ValueError(f"Invalid {name}: {value}")
        super().__init__(params, {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                                      "centered": centered, "weight_decay": weight_decay,
                                      "capturable": capturable, "foreach": foreach,
                                      "maximize": maximize, "differentiable": differentiable})

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        if not state:
            state["step"] = step_tensor()
            state["square_avg"] = zeros_state(param)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_state(param)
            if group["centered"]:
                state["grad_avg"] = zeros_state(param)
        increment(state["step"])
        xp = param._xp
        alpha = group["alpha"]
        update = direction(group, param, grad)
        square_avg = state["square_avg"]._array
        square_avg *= alpha
        square_avg += (1 - alpha) * (update * update)
        if group["centered"]:
            grad_avg = state["grad_avg"]._array
            lerp_(grad_avg, update, 1 - alpha)
            average = xp.sqrt(square_avg - grad_avg * grad_avg)
        else:
            average = xp.sqrt(square_avg)
        average += group["eps"]
        if group["momentum"] > 0:
            buffer = state["momentum_buffer"]._array
            buffer *= group["momentum"]
            buffer += update / average
            apply_update(param, buffer, float(group["lr"]))
        else:
            apply_update(param, update / average, float(group["lr"]))
