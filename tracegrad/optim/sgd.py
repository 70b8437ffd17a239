"""SGD with momentum, dampening, Nesterov momentum and weight decay (torch.optim.SGD)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..tensor import Tensor
from .optimizer import Optimizer, apply_update, direction


class SGD(Optimizer):
    """Stochastic gradient descent, step for step as ``torch.optim.SGD``::

        g = grad + weight_decay * p
        buf = g (first step) or momentum * buf + (1 - dampening) * g
        g = g + momentum * buf if nesterov else buf
        p -= lr * g            (p += lr * g with maximize=True)

    >>> import tracegrad as torch
    >>> w = torch.tensor([1.0], requires_grad=True)
    >>> opt = torch.optim.SGD([w], lr=0.1)
    >>> (w * 3).sum().backward(); opt.step()
    >>> w
    tensor([0.7000], requires_grad=True)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                      "weight_decay": weight_decay, "nesterov": nesterov,
                                      "maximize": maximize, "foreach": foreach,
                                      "differentiable": differentiable, "fused": fused})

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        momentum = group["momentum"]
        update = direction(group, param, grad)
        if momentum != 0:
            buffer = state.get("momentum_buffer")
            if buffer is None:
                buffer = state["momentum_buffer"] = Tensor._wrap(update.copy(), False)
            else:
                buffer._array *= momentum
                dampening = group["dampening"]
                # (1 - 0) * update is update exactly: no temporary for the default
                buffer._array += (1 - dampening) * update if dampening else update
            if group["nesterov"]:
                update = update + momentum * buffer._array
            else:
                update = buffer._array
        apply_update(param, update, float(group["lr"]))
