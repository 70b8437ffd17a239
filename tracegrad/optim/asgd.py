"""ASGD (averaged stochastic gradient descent), as torch.optim.ASGD."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..tensor import Tensor
from .optimizer import Optimizer, direction, increment, step_tensor, zeros_state


class ASGD(Optimizer):
    """SGD with a decaying step ``eta = lr / (1 + lambd * lr * t) ** alpha`` and a running
    average ``ax`` of the parameters (started at step ``t0``)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize, "capturable": capturable,
                                  "differentiable": differentiable})

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        lr, lambd = float(group["lr"]), group["lambd"]
        if not state:
            state["step"] = step_tensor()
            state["eta"] = step_tensor(lr)  # torch keeps eta and mu as float32 scalars
            state["mu"] = step_tensor(1.0)
            state["ax"] = zeros_state(param)
        step = increment(state["step"])
        update = direction(group, param, grad)
        eta = float(state["eta"]._array)
        data = param._array
        data *= 1 - lambd * eta
        data -= eta * update
        param._after_inplace("add_")
        mu = float(state["mu"]._array)
        ax = state["ax"]._array
        if mu != 1:
            ax += (data - ax) * mu
        else:
            ax[...] = data
        state["eta"]._array[...] = lr / ((1 + lambd * lr * step) ** group["alpha"])
        state["mu"]._array[...] = 1 / max(1, step - group["t0"])
