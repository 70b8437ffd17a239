"""Optimizer: parameter groups, per-parameter state, zero_grad -- torch.optim's base."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class: holds ``param_groups`` (a list of dicts with "params" and the
    hyperparameters) and ``state`` (per-parameter buffers, keyed by the parameter).

    Subclasses implement ``_update(group, param, grad, state)``, which runs under no_grad
    for every parameter that has a gradient.
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.state: dict[Tensor, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {params._describe()}. Hint: pass model.parameters() or "
                "[tensor].")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for param in group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params "
                                f"is {type(param).__name__}")
            if not param.is_leaf:
                raise ValueError(
                    f"can't optimize a non-leaf Tensor ({param._describe()}). Hint: optimize "
                    "the leaf it was computed from, or pass tensor.detach().requires_grad_().")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        existing = {param for other in self.param_groups for param in other["params"]}
        if any(param in existing for param in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every optimized parameter: to None (default), or to zero
        in place."""
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                else:
                    if param.grad.grad_fn is not None:
                        param.grad.detach_()
                    param.grad.requires_grad = False
                    param.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a ``.grad``; ``closure`` (re)computes
        the loss first when given."""
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad

            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    state = self.state.get(param)
                    if state is None:
                        state = self.state[param] = {}
                    self._update(group, param, grad, state)
        return loss

    def _update(self, group: dict[str, Any], param: Tensor, grad: Tensor,
                state: dict[str, Any]) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """State and hyperparameters, with parameters replaced by their position."""
        positions: dict[Tensor, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != "params"}
            packed["params"] = []
            for param in group["params"]:
                positions.setdefault(param, len(positions))
                packed["params"].append(positions[param])
            groups.append(packed)
        state = {positions[param]: dict(values) for param, values in self.state.items()
                 if param in positions}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        by_position = {}
        for own, saved in zip(self.param_groups, groups):
            if len(own["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
            for param, position in zip(own["params"], saved["params"]):
                by_position[position] = param
            own.update({key: value for key, value in saved.items() if key != "params"})
        self.state = {by_position[position]: _copy_state(values)
                      for position, values in state_dict["state"].items()}

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for index, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {index}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


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


def _copy_state(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value.clone() if isinstance(value, Tensor) else value
            for key, value in values.items()}
