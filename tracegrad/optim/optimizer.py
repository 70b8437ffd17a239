"""Optimizer: parameter groups, per-parameter state, zero_grad, state dicts, step hooks --
torch.optim's base, with torch's state-dict layout.

Updates work on the parameters' arrays in place (what hand-written NumPy would do) and
then bump the parameter's version and tell the tracer, as an in-place tensor op would.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

import numpy as np

from .. import _dtype
from ..autograd.grad_mode import enable_grad, no_grad
from ..nn.hooks import RemovableHandle, add_hook
from ..tensor import Tensor


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


def step_tensor(value: float = 0.0) -> Tensor:
    """The 0-d float tensor torch keeps as ``state["step"]`` (float32, or float64 when that
    is the default dtype)."""
    dtype = np.float64 if _dtype.default_float.numpy == np.float64 else np.float32
    return Tensor._wrap(np.asarray(value, dtype=dtype), False)


def increment(step: Tensor) -> float:
    """``step += 1`` in place; the new count as a float."""
    step._array += 1
    return float(step._array)


class Optimizer:
    """Base class: holds ``param_groups`` (dicts with "params" and the hyperparameters) and
    ``state`` (per-parameter buffers, keyed by the parameter).

    Subclasses implement ``_update(group, param, grad, state)``, which runs under no_grad
    for every parameter that has a gradient (or override ``step``).
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        self._step_pre_hooks: OrderedDict = OrderedDict()
        self._step_post_hooks: OrderedDict = OrderedDict()
        if self.defaults.get("differentiable"):
            raise NotImplementedError(
                f"tracegrad does not implement {type(self).__name__}(differentiable=True): its "
                "steps run outside the graph.")
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {_typename(params)} ({params._describe()}). Hint: pass "
                "model.parameters() or [tensor].")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(dict(group))

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (the defaults fill in
        what it does not set)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list "
                "instead.")
        else:
            param_group["params"] = list(params)
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p
                                 for p in param_group["params"]]
        if names:
            if len(names) != len(param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params "
                                f"is {type(param).__module__}.{type(param).__name__}")
            if not (param.is_leaf or param.retains_grad):
                raise ValueError(
                    f"can't optimize a non-leaf Tensor ({param._describe()}). Hint: optimize "
                    "the leaf it was computed from, or pass tensor.detach().requires_grad_().")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for "
                "more information", stacklevel=3)
        existing = {param for group in self.param_groups for param in group["params"]}
        if not existing.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every optimized parameter: to None (default), or to zero
        in place."""
        for group in self.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    grad.requires_grad = False
                    grad.zero_()  # as torch: an in-place op, so .grad's version moves on

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a ``.grad``; ``closure`` (re)computes
        the loss first when given, and its value is returned."""
        for hook in list(self._step_pre_hooks.values()):
            result = hook(self, (), {})
            if result is not None:
                raise RuntimeError("optimizer step pre-hooks that change the arguments are "
                                   "not supported by tracegrad")
        self._opt_called = True  # lr schedulers warn when they step before the optimizer
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    self._update(group, param, grad, self.state[param])
        for hook in list(self._step_post_hooks.values()):
            hook(self, (), {})
        return loss

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        raise NotImplementedError

    # -- hooks -------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` before every ``step``."""
        return add_hook(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after every ``step``."""
        return add_hook(self._step_post_hooks, hook)

    # -- state dict --------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: per-parameter state}, "param_groups": [...]}`` with every
        parameter replaced by its index (in group order), as torch lays it out.

        >>> import tracegrad as torch
        >>> w = torch.ones(2, requires_grad=True)
        >>> opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> w.sum().backward(); opt.step()
        >>> sorted(opt.state_dict()["state"][0]), opt.state_dict()["param_groups"][0]["params"]
        (['momentum_buffer'], [0])
        """
        positions: dict[Tensor, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != "params"}
            for param in group["params"]:
                positions.setdefault(param, len(positions))
            packed["params"] = [positions[param] for param in group["params"]]
            groups.append(packed)
        # a parameter the rule keeps nothing for (SGD without momentum) has no entry, as
        # in torch
        state = {positions[param]: values for param, values in self.state.items()
                 if param in positions and values}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore state and hyperparameters saved by ``state_dict`` (tensors are copied,
        in the parameters' dtype and device; "step" keeps its own)."""
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(own["params"]) != len(saved["params"])
               for own, saved in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        by_index = {}
        for own, saved in zip(groups, saved_groups):
            for param, index in zip(own["params"], saved["params"]):
                by_index[index] = param
        state: defaultdict = defaultdict(dict)
        for index, values in state_dict["state"].items():
            if index in by_index:
                param = by_index[index]
                state[param] = {key: _cast(param, value, key) for key, value in values.items()}
            else:
                state[index] = deepcopy(values)
        for own, saved in zip(groups, saved_groups):
            saved["params"] = own["params"]
        self.state = state
        self.param_groups = saved_groups

    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for index, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {index}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


def _cast(param: Tensor, value: Any, key: Any = None) -> Any:
    if isinstance(value, Tensor):
        copied = value.detach().clone()
        if key == "step":
            return copied
        if param.is_floating_point():
            return copied.to(dtype=param.dtype, device=param.device)
        return copied.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v) for v in value)
    return value


def _typename(tensor: Tensor) -> str:
    from .._legacy import type_name  # (torch.typename's answer for a tensor)

    return type_name(tensor)


def apply_update(param: Tensor, direction, scale: float) -> None:
    """``param -= scale * direction`` (``direction`` an array), written into the parameter's
    storage in place.

    Working on the arrays costs what hand-written NumPy costs (one temporary, two passes),
    where ``param.sub_(d, alpha=lr)`` would add a temporary and a copy; the version bump
    and the ``on_inplace`` event are the same as an in-place tensor op's, so traces still
    show each optimizer step as an in-place ``sub_`` on the parameter.
    """
    data = param._array
    data -= direction * scale if scale != 1 else direction
    param._after_inplace("sub_")


def direction(group: dict[str, Any], param: Tensor, grad: Tensor):
    """The gradient as the update rules start from it: negated with ``maximize``, plus
    ``weight_decay * param`` (coupled weight decay)."""
    array = -grad._array if group.get("maximize") else grad._array
    weight_decay = group.get("weight_decay", 0)
    if weight_decay != 0 and not group.get("decoupled_weight_decay"):
        array = array + weight_decay * param._array
    return array


def decay_weights(group: dict[str, Any], param: Tensor) -> None:
    """Decoupled weight decay (AdamW): ``param *= 1 - lr * weight_decay``."""
    if group.get("decoupled_weight_decay") and group["weight_decay"] != 0:
        param._array *= 1 - float(group["lr"]) * group["weight_decay"]


def lerp_(target, end, weight: float) -> None:
    """``target += weight * (end - target)`` in place, as torch's lerp_ rounds it."""
    if weight < 0.5:
        target += weight * (end - target)
    else:
        target[...] = end - (end - target) * (1 - weight)


def zeros_state(param: Tensor) -> Tensor:
    return Tensor._wrap(param._xp.zeros_like(param._array), False)


def check_nonnegative(name: str, value: float, label: str | None = None) -> None:
    if not 0.0 <= value:
        raise ValueError(f"Invalid {label or name}: {value}")


def check_betas(betas) -> None:
    for index, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {beta}")


