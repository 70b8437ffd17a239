"""Adam and AdamW (optionally AMSGrad), as torch.optim computes them."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..backends import kernels
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

_ndarray = np.ndarray


class Adam(Optimizer):
    """Adam, step for step as ``torch.optim.Adam``::

        g = grad + weight_decay * p     (AdamW: p *= 1 - lr * weight_decay instead)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)            (amsgrad)
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
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                      "weight_decay": weight_decay, "amsgrad": amsgrad,
                                      "maximize": maximize, "foreach": foreach,
                                      "capturable": capturable, "differentiable": differentiable,
                                      "fused": fused,
                                      "decoupled_weight_decay": decoupled_weight_decay})

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        if not state:
            state["step"] = step_tensor()
            state["exp_avg"] = zeros_state(param)
            state["exp_avg_sq"] = zeros_state(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_state(param)
        beta1, beta2 = group["betas"]
        lr = float(group["lr"])
        step = increment(state["step"])
        if (param._array.__class__ is not _ndarray and kernels.enabled
                and not group["amsgrad"] and not group["decoupled_weight_decay"]):
            # CUDA: one fused kernel reads grad and writes param and both moments, where
            # the formulas below make about a dozen passes over memory
            kernels.adam_update(param._array, grad._array, state["exp_avg"]._array,
                                state["exp_avg_sq"]._array, lr=lr, beta1=beta1,
                                beta2=beta2, eps=group["eps"],
                                weight_decay=group["weight_decay"],
                                maximize=group["maximize"], step=int(step))
            param._after_inplace("sub_")
            return
        decay_weights(group, param)
        update = direction(group, param, grad)
        exp_avg, exp_avg_sq = state["exp_avg"]._array, state["exp_avg_sq"]._array
        lerp_(exp_avg, update, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * (update * update)
        second_moment = exp_avg_sq
        if group["amsgrad"]:
            maximum = state["max_exp_avg_sq"]._array
            param._xp.maximum(maximum, exp_avg_sq, out=maximum)
            second_moment = maximum
        denominator = param._xp.sqrt(second_moment)
        denominator /= math.sqrt(1 - beta2 ** step)
        denominator += group["eps"]
        apply_update(param, exp_avg / denominator, lr / (1 - beta1 ** step))


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the Adam
    step), default ``weight_decay=1e-2``, as ``torch.optim.AdamW``."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
