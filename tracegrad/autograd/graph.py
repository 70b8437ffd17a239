"""``torch.autograd.graph``: the backward graph as an API -- nodes, gradient edges,
saved-tensor hooks, hooks over several tensors.

>>> import tracegrad as torch
>>> x = torch.ones(2, requires_grad=True)
>>> y = x * x
>>> isinstance(y.grad_fn, torch.autograd.graph.Node), y.grad_fn.name()
(True, 'MulBackward0')
>>> torch.autograd.graph.get_gradient_edge(y).output_nr
0
"""

from __future__ import annotations

import abc
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from . import node as _node
from .node import RemovableHandle, running

__all__ = [
    "GradientEdge",
    "Node",
    "disable_saved_tensors_hooks",
    "get_gradient_edge",
    "increment_version",
    "register_multi_grad_hook",
    "save_on_cpu",
    "saved_tensors_hooks",
]


class Node(abc.ABC):
    """The abstract type of every ``grad_fn``: ``isinstance(t.grad_fn, Node)`` holds for
    built-in nodes, AccumulateGrad and custom Functions' nodes alike. It cannot be
    instantiated itself."""

    @abc.abstractmethod
    def name(self) -> str:
        """The node's name, e.g. ``MulBackward0``."""

    @property
    @abc.abstractmethod
    def next_functions(self) -> tuple[tuple[Node | None, int], ...]:
        """One ``(node, input_nr)`` per input of the forward call."""

    @property
    @abc.abstractmethod
    def metadata(self) -> dict:
        """A dict for notes on this node."""

    @abc.abstractmethod
    def register_hook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` after the node's backward; may return new
        grad_inputs."""

    @abc.abstractmethod
    def register_prehook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """``fn(grad_outputs)`` before the node's backward; may return new grad_outputs."""


Node.register(_node.Node)


class GradientEdge(NamedTuple):
    """Where a tensor's gradient is computed: a node and the index of its output.

    Accepted as ``inputs`` (and outputs) of ``autograd.grad`` and ``autograd.backward``.
    """

    node: Node
    output_nr: int
    ownership_token: Node | None = None


def _get_grad_fn_or_grad_acc(tensor) -> _node.Node:
    if isinstance(tensor, GradientEdge):
        return tensor.node
    node, _ = tensor._edge()
    if node is None:
        raise AssertionError("Expected gradient function to be set")
    return node


def get_gradient_edge(tensor) -> GradientEdge:
    """The gradient edge of ``tensor``: ``autograd.grad(loss, get_gradient_edge(t))`` is
    ``autograd.grad(loss, t)``, and stays valid after ``t`` is modified in place.

    >>> import tracegrad as torch
    >>> x = torch.rand(2, requires_grad=True).clone()
    >>> edge = torch.autograd.graph.get_gradient_edge(x)
    >>> x *= 2
    >>> torch.autograd.grad(x.sum(), (edge, x))
    (tensor([2., 2.]), tensor([1., 1.]))
    """
    if not tensor.requires_grad:
        raise _node.AutogradError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            f"gradients ({tensor._describe()}). Hint: create it with requires_grad=True.")
    node, output_nr = tensor._edge()
    return GradientEdge(node, output_nr)


def increment_version(tensor) -> None:
    """Mark ``tensor`` (or each tensor of an iterable) as modified in place: a saved copy
    of it then fails its version check in backward, as after a real in-place op."""
    from ..tensor import Tensor
    from .views import _NO_EDGE, bump_version, notify_inplace

    tensors = (tensor,) if isinstance(tensor, Tensor) else tuple(tensor)
    for item in tensors:
        if item.is_inference():
            continue  # no version counter to bump (torch skips them too, in any mode)
        # An in-place change the graph does not record, told as an unrecorded in-place
        # op's: the site only when someone wants it (events.sites), and an InplaceInfo.
        site, regenerated = bump_version(item, "increment_version")
        notify_inplace(item, "increment_version", None, (item,), _NO_EDGE, site, None,
                       regenerated)


# -- saved-tensor hooks --------------------------------------------------------------------
class saved_tensors_hooks:
    """Context manager setting how tensors saved for backward are stored, in this thread.

    ``pack_hook(tensor)`` runs when an op saves a tensor and its result is kept instead;
    ``unpack_hook(packed)`` runs when backward needs the tensor and must return it. The
    innermost pair applies. As in PyTorch, the hooks own the value: no version check is
    made on a tensor saved through them.

    >>> import tracegrad as torch
    >>> a = torch.ones(3, requires_grad=True)
    >>> with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t / 2):
    ...     y = a * a
    >>> y.sum().backward()
    >>> a.grad
    tensor([2., 2., 2.])
    """

    def __init__(self, pack_hook: Callable[[Any], Any],
                 unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        _node.push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *exc_info: object) -> None:
        _node.pop_saved_tensors_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors go to host memory in forward and back to their device in backward.

    ``pin_memory`` is accepted for compatibility: host arrays here are plain NumPy arrays.
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor):
            return tensor.device, tensor.cpu()

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """While active, entering ``saved_tensors_hooks`` raises RuntimeError(error_message)
    (and so does entering this while hooks are set)."""
    hooks_state = _node.saved_hooks
    previous = None
    try:
        previous = hooks_state.disabled_message
        hooks_state.disabled_message = error_message
        if hooks_state.stack:
            raise _node.AutogradError(error_message)
        yield
    finally:
        hooks_state.disabled_message = previous


def _saved_tensors_hooks_is_enabled() -> bool:
    return _node.saved_hooks.disabled_message is None


# -- the running backward pass, as hooks see it ---------------------------------------------
def _current_graph_task_id() -> int:
    """The id of the backward pass running in this thread, -1 outside one."""
    task = running.task
    return -1 if task is None else task.id


def _will_engine_execute_node(node) -> bool:
    """Whether the backward pass running in this thread takes ``node`` in."""
    task = running.task
    if task is None:
        raise _node.AutogradError(
            "_get_should_execute_nodes should only be called during the backward pass")
    if not isinstance(node, _node.Node):
        raise _node.AutogradError(
            f"_will_engine_execute_node expects an grad_fn, got {type(node).__name__}")
    taking_part = task.will_execute(node)
    if taking_part and task.needed is not None and node._is_accumulate \
            and node not in task.needed:
        raise _node.AutogradError(
            "A leaf node was passed to _will_engine_execute_node but we are currently "
            "running autograd.grad(). This is currently not supported.")
    return taking_part


class _MultiHandle(RemovableHandle):
    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def register_multi_grad_hook(tensors: Sequence, fn: Callable, *, mode: str = "all"):
    """A hook over several tensors, once per backward pass.

    ``mode="all"``: ``fn(grads)`` after the gradients of all the tensors this pass computes
    are known (None for the others). ``mode="any"``: ``fn(grad)`` with the first of them.

    >>> import tracegrad as torch
    >>> a, b = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    >>> seen = []
    >>> handle = torch.autograd.graph.register_multi_grad_hook(
    ...     (a, b), lambda grads: seen.append([g is not None for g in grads]))
    >>> (a * 2).sum().backward()
    >>> seen
    [[True, False]]
    """
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    lock = threading.Lock()
    tensors = tuple(tensors)
    if mode == "all":
        return _MultiHandle(_register_all(tensors, fn, lock))
    ran: dict[int, bool] = {}

    def any_hook(grad) -> None:
        task_id = _current_graph_task_id()
        with lock:
            already = ran.get(task_id, False)
            ran[task_id] = True
        if not already:
            fn(grad)

    return _MultiHandle(tuple(tensor.register_hook(any_hook)
                              for tensor in tensors if tensor.requires_grad))


def _register_all(tensors: tuple, fn: Callable, lock) -> tuple:
    count: dict[int, int] = {}
    buffers: dict[int, list] = {}
    expected: dict[int, int] = {}
    grad_fns = [_get_grad_fn_or_grad_acc(tensor) for tensor in tensors]

    def hook_for(index: int):
        def inner_hook(grad) -> None:
            task_id = _current_graph_task_id()
            with lock:
                calls = count.get(task_id, 0)
                count[task_id] = calls + 1
                if calls == 0:
                    # How many of the tensors' nodes this pass runs: the hook fires once
                    # they all have.
                    expected[task_id] = sum(map(_will_engine_execute_node, grad_fns))
                    buffers[task_id] = [None] * len(tensors)
                buffers[task_id][index] = grad
                done = calls == expected[task_id] - 1
                if done:
                    grads = buffers.pop(task_id)
                    del count[task_id], expected[task_id]
            if done:
                fn(grads)

        return inner_hook

    return tuple(tensor.register_hook(hook_for(index)) for index, tensor in enumerate(tensors))


def __getattr__(name: str):
    raise AttributeError(
        f"tracegrad does not implement torch.autograd.graph.{name}. Hint: "
        f"tracegrad.autograd.graph has: {', '.join(sorted(__all__))}.")


