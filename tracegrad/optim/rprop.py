"""Rprop (resilient backpropagation), as torch.optim.Rprop."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..tensor import Tensor
from .optimizer import Optimizer, increment, step_tensor, zeros_state


class Rprop(Optimizer):
    """Each weight's own step size grows by ``etas[1]`` while its gradient keeps its sign
    and shrinks by ``etas[0]`` when it flips (skipping that step); the update is
    ``-sign(grad) * step_size``."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, {"lr": lr, "etas": tuple(etas),
                                  "step_sizes": tuple(step_sizes), "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable})

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        xp = param._xp
        if not state:
            state["step"] = step_tensor()
            state["prev"] = zeros_state(param)
            state["step_size"] = Tensor._wrap(xp.full_like(grad._array, float(group["lr"])),
                                              False)
        increment(state["step"])
        shrink, grow = group["etas"]
        smallest, largest = group["step_sizes"]
        update = -grad._array if group["maximize"] else grad._array
        prev, step_size = state["prev"]._array, state["step_size"]._array
        trend = xp.sign(update * prev)
        factor = xp.where(trend > 0, grow, xp.where(trend < 0, shrink, 1.0)).astype(
            step_size.dtype)
        step_size *= factor
        xp.clip(step_size, smallest, largest, out=step_size)
        update = xp.where(trend < 0, 0, update).astype(update.dtype)
        param._array -= xp.sign(update) * step_size
        param._after_inplace("addcmul_")
        prev[...] = update
