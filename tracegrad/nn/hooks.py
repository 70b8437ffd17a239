"""Module hooks: the handles ``register_*_hook`` return, the global forward hooks of
``nn.modules.module``, and the machinery behind full backward hooks.

A full backward hook needs the gradients with respect to a module's inputs and outputs
as a whole, not per tensor. As in torch, the module's tensor inputs and outputs each pass
through an identity ``BackwardHookFunction``: the node on the outputs sees the output
gradients first (and runs the backward pre-hooks), the node on the inputs then sees the
input gradients and calls ``hook(module, grad_input, grad_output)``.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

from ..autograd.function import Function
from ..autograd.grad_mode import state
from ..tensor import Tensor

_handle_ids = itertools.count()


class RemovableHandle:
    """What ``register_*_hook`` returns: ``handle.remove()`` unregisters the hook (also on
    leaving a ``with`` block)."""

    def __init__(self, *hooks_dicts: dict) -> None:
        self.id = next(_handle_ids)
        self._dicts = hooks_dicts

    def remove(self) -> None:
        for hooks in self._dicts:
            if isinstance(hooks, set):
                hooks.discard(self.id)
            else:
                hooks.pop(self.id, None)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


def add_hook(hooks: OrderedDict, hook: Callable, prepend: bool = False,
             *extra: dict) -> RemovableHandle:
    handle = RemovableHandle(hooks, *extra)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


# The global hooks every module runs before its own (nn.modules.module.register_module_*).
global_forward_pre_hooks: OrderedDict = OrderedDict()
global_forward_hooks: OrderedDict = OrderedDict()
global_forward_hooks_with_kwargs: set = set()
global_backward_pre_hooks: OrderedDict = OrderedDict()
global_backward_hooks: OrderedDict = OrderedDict()


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, args)`` before every module's forward (before the module's own)."""
    return add_hook(global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """``hook(module, args, output)`` after every module's forward; returning a value
    replaces the output.

    >>> import tracegrad as torch
    >>> seen = []
    >>> handle = torch.nn.modules.module.register_module_forward_hook(
    ...     lambda module, args, output: seen.append(type(module).__name__))
    >>> _ = torch.nn.Sequential(torch.nn.ReLU())(torch.ones(1))
    >>> handle.remove(); seen
    ['ReLU', 'Sequential']
    """
    handle = add_hook(global_forward_hooks, hook)
    if with_kwargs:
        global_forward_hooks_with_kwargs.add(handle.id)
    return handle


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    return add_hook(global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    return add_hook(global_backward_hooks, hook)


def any_global_hooks() -> bool:
    return bool(global_forward_pre_hooks or global_forward_hooks or global_backward_pre_hooks
                or global_backward_hooks)


class BackwardHookFunction(Function):
    """The identity, as a node to hang a module's backward hooks on."""

    @staticmethod
    def forward(ctx, *tensors):
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return grads


class BackwardHook:
    """One module call's full backward hooks: wraps its inputs and outputs."""

    def __init__(self, module, hooks: list, pre_hooks: list) -> None:
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.input_positions: list[int] | None = None
        self.input_count = 0
        self.grad_outputs: tuple | None = None

    def wrap_inputs(self, args: tuple) -> tuple:
        self.input_count = len(args)
        positions = [i for i, arg in enumerate(args)
                     if isinstance(arg, Tensor) and arg.requires_grad]
        if not positions or not state.grad_enabled:
            return args
        self.input_positions = positions
        wrapped = BackwardHookFunction.apply(*(args[i] for i in positions))
        wrapped[0].grad_fn.register_hook(self._on_input_grads)
        result = list(args)
        for position, tensor in zip(positions, wrapped):
            result[position] = tensor
        return tuple(result)

    def wrap_outputs(self, output: Any) -> Any:
        single = isinstance(output, Tensor)
        outputs = (output,) if single else output
        if not isinstance(outputs, tuple) or not state.grad_enabled:
            return output
        positions = [i for i, item in enumerate(outputs)
                     if isinstance(item, Tensor) and item.requires_grad]
        if not positions:
            return output
        wrapped = BackwardHookFunction.apply(*(outputs[i] for i in positions))
        count = len(outputs)

        def on_output_grads(grads):
            grad_output = _packed(positions, grads, count)
            for hook in self.pre_hooks:
                result = hook(self.module, grad_output)
                if result is not None:
                    grad_output = _checked(result, len(grad_output), "grad_output")
            self.grad_outputs = grad_output
            if self.input_positions is None:  # no input needs a gradient: report now
                for hook in self.hooks:
                    hook(self.module, (None,) * self.input_count, grad_output)
            return tuple(grad_output[i] for i in positions)

        wrapped[0].grad_fn.register_prehook(on_output_grads)
        result = list(outputs)
        for position, tensor in zip(positions, wrapped):
            result[position] = tensor
        return result[0] if single else tuple(result)

    def _on_input_grads(self, grad_inputs, grad_outputs):
        grad_input = _packed(self.input_positions, grad_inputs, self.input_count)
        for hook in self.hooks:
            result = hook(self.module, grad_input, self.grad_outputs or ())
            if result is not None:
                grad_input = _checked(result, len(grad_input), "grad_input")
        return tuple(grad_input[i] for i in self.input_positions)


def _packed(positions: list, grads, count: int) -> tuple:
    packed: list = [None] * count
    for position, grad in zip(positions, grads):
        packed[position] = grad
    return tuple(packed)


def _checked(result, expected: int, what: str) -> tuple:
    result = (result,) if isinstance(result, Tensor) else tuple(result)
    if len(result) != expected:
        raise RuntimeError(f"Backward hook returned an invalid number of {what}, got "
                           f"{len(result)}, but expected {expected}")
    return result
