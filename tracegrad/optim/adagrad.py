"""Adagrad, as torch.optim.Adagrad (its state exists from construction, as torch's)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..tensor import Tensor
from .optimizer import Optimizer, apply_update, direction, increment, step_tensor


class Adagrad(Optimizer):
    """``sum += g * g``; ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)``.

    >>> import tracegrad as torch
    >>> w = torch.tensor([1.0], requires_grad=True)
    >>> opt = torch.optim.Adagrad([w], lr=0.5)
    >>> (w * 3).sum().backward(); opt.step()
    >>> round(w.item(), 4)
    0.5
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        for name, value in (("learning rate", lr), ("lr_decay value", lr_decay),
                            ("weight_decay value", weight_decay),
                            ("initial_accumulator_value value", initial_accumulator_value),
                            ("epsilon value", eps)):
            if not 0.0 <= value:
                raise ValueError(f"Invalid {name}: {value}")
        super().__init__(params, {"lr": lr, "lr_decay": lr_decay, "eps": eps,
                                      "weight_decay": weight_decay,
                                      "initial_accumulator_value": initial_accumulator_value,
                                      "foreach": foreach, "maximize": maximize,
                                      "differentiable": differentiable, "fused": fused})
        for group in self.param_groups:
            for param in group["params"]:
                state = self.state[param]
                state["step"] = step_tensor()
                state["sum"] = Tensor._wrap(param._xp.full_like(
                    param._array, group["initial_accumulator_value"]), False)

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        step = increment(state["step"])
        update = direction(group, param, grad)
        clr = float(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
        total = state["sum"]._array
        total += update * update
        std = param._xp.sqrt(total)
        std += group["eps"]
        apply_update(param, update / std, clr)
