"""Nodes of the backward graph (what ``tensor.grad_fn`` points to) and saved tensors."""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable

from ..errors import AutogradError, InplaceError
from .grad_mode import state

_sequence = itertools.count()
Tensor = None  # tracegrad.tensor.Tensor, bound by function.bind_tensor_class (import order)


class VersionCounter:
    """Shared by a tensor and all its views; bumped by every in-place op.

    ``history`` is filled only while sites are wanted (tracing or anomaly mode), so the
    version error can say which in-place op changed the tensor and where. ``views`` holds
    weak references to the views of the storage (autograd/views.py): a bump refreshes
    their grad_fn, as PyTorch regenerates a view's grad_fn when its version moved.
    """

    __slots__ = ("history", "last_op", "value", "views")

    def __init__(self) -> None:
        self.value = 0
        self.last_op = None
        self.history = None  # list of (version, op name, Site) when recorded
        self.views = None  # list of weakref(view), made by the first view

    def bump(self, op_name: str, site=None) -> None:
        self.value += 1
        self.last_op = op_name
        if site is not None:
            if self.history is None:
                self.history = []
            self.history.append((self.value, op_name, site))
        if self.views:
            refresh_views(self)


def refresh_views(counter: VersionCounter) -> None:
    """Replaced by autograd/views.py when it loads (it imports this module)."""


class RemovableHandle:
    """What ``register_hook`` returns: ``handle.remove()`` unregisters the hook."""

    __slots__ = ("_hook", "_hooks")

    def __init__(self, hooks: list, hook) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        try:
            self._hooks.remove(self._hook)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    Unpacking checks the version and raises PyTorch's in-place error when it moved. A node
    that saves its own output keeps only the array and a weak reference back to itself
    (as PyTorch does), so output -> grad_fn -> saved output is not a reference cycle.
    """

    __slots__ = (
        "counter",
        "_array",
        "node_ref",
        "original",
        "output_nr",
        "producer",
        "requires_grad",
        "tensor",
        "version",
    )

    def __init__(self, tensor, node, is_output: bool) -> None:
        self._array = tensor._array
        self.counter = tensor._version_counter
        self.version = self.counter.value
        self.output_nr = tensor._output_nr
        self.requires_grad = tensor._requires_grad
        self.producer = None if is_output else tensor.grad_fn
        if is_output:
            self.tensor = None
            self.node_ref = weakref.ref(node)
            self.original = weakref.ref(tensor)
        else:
            self.tensor = tensor
            self.node_ref = None
            self.original = None

    @property
    def is_output(self) -> bool:
        return self.node_ref is not None

    def source_tensor(self):
        """The tensor that was saved (None if a saved output has since been collected, or
        once backward released it)."""
        if self.tensor is not None:
            return self.tensor
        if self.original is None:  # an input saved by reference, released by backward
            return None
        return self.original()

    def unpack(self, node: Node):
        if self._array is None:
            raise AutogradError(_freed_message(node))
        if self.counter.value != self.version:
            raise InplaceError(self._version_message(node))
        if self.tensor is not None:
            return self.tensor
        saved_by = self.node_ref()
        tensor = Tensor._wrap(self._array, self.requires_grad)
        tensor._version_counter = self.counter
        if saved_by is not None and self.requires_grad:
            tensor.grad_fn = saved_by
            tensor._output_nr = self.output_nr
        return tensor

    def _version_message(self, node: Node) -> str:
        from .._dtype import from_numpy_dtype

        producer = self.node_ref() if self.node_ref is not None else self.producer
        what = f"[{from_numpy_dtype(self._array.dtype).name} {list(self._array.shape)}]"
        if producer is not None:
            what += f", which is output {self.output_nr} of {producer.name()},"
        message = (
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: {what} is at version {self.counter.value}; expected version "
            f"{self.version} instead.")
        culprit = self._culprit()
        if culprit:
            message += f" {culprit}"
        else:
            message += (
                " Hint: enable anomaly detection to find the operation that failed to compute "
                "its gradient, with tracegrad.autograd.set_detect_anomaly(True) -- tracegrad "
                "then also names the in-place operation and its line.")
        if node._site is not None:
            message += f" The tensor was saved by {node.name()} created at {node._site}."
        return message

    def _culprit(self) -> str:
        history = self.counter.history
        if history:
            changes = [(version, op, site) for version, op, site in history
                       if version > self.version]
            if changes:
                parts = [f"'{op}' at {site}" + (f" ({site.code})" if site.code else "")
                         for _, op, site in changes]
                return "It was modified by " + ", then ".join(parts) + "."
        if self.counter.last_op:
            return (f"The last in-place operation on it was '{self.counter.last_op}'. Hint: "
                    "run under tracegrad.autograd.detect_anomaly() or tracegrad.record() to "
                    "see the line that did it.")
        return ""

    def release(self) -> None:
        self._array = None
        self.tensor = None


def _freed_message(node: Node) -> str:
    message = (
        "Trying to backward through the graph a second time (or directly access saved "
        "tensors after they have already been freed). Saved intermediate values of the graph "
        f"are freed when you call .backward() or autograd.grad(). Node: {node.name()}")
    if node._site is not None:
        message += f" created at {node._site}"
    message += (". Specify retain_graph=True if you need to backward through the graph a "
                "second time or if you need to access saved tensors after calling backward.")
    return message


class Node:
    """A function of the backward graph; ``tensor.grad_fn`` is one of these.

    ``next_functions`` holds one ``(node, input_nr)`` pair per differentiable input, in
    input order (``(None, 0)`` for an input that does not need grad).
    """

    _name = "Node"
    _is_accumulate = False
    # Defaults live on the class so that making a node per op sets one attribute; an
    # instance attribute replaces a default only when it differs (they are never mutated).
    next_functions: tuple = ()
    _saved: tuple = ()
    _site = None
    _module = None
    _pre_hooks: list | None = None  # fn(grad_outputs) -> new grad_outputs | None
    _post_hooks: list | None = None  # fn(grad_inputs, grad_outputs) -> new | None
    _tensor_hooks: dict | None = None  # output_nr -> [fn(grad) -> grad | None]
    _retained: dict | None = None  # output_nr -> weakref(tensor), for retain_grad
    _hooked = False  # any of the four above was ever set: the engine's one check per node
    _output_meta: tuple = ()  # (shape, numpy dtype, device) per output
    _freed_by: int | None = None  # index of the backward pass that freed the saved tensors
    _metadata: dict | None = None

    def __init__(self) -> None:
        self._seq = next(_sequence)

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object>"

    @property
    def num_outputs(self) -> int:
        return len(self._output_meta)

    def register_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(grad_inputs, grad_outputs)`` runs after this node's backward; it may
        return replacement ``grad_inputs``."""
        if self._post_hooks is None:
            self._post_hooks = []
            self._hooked = True
        self._post_hooks.append(hook)
        return RemovableHandle(self._post_hooks, hook)

    def register_prehook(self, hook: Callable) -> RemovableHandle:
        """``hook(grad_outputs)`` runs before this node's backward; it may return
        replacement ``grad_outputs``."""
        if self._pre_hooks is None:
            self._pre_hooks = []
            self._hooked = True
        self._pre_hooks.append(hook)
        return RemovableHandle(self._pre_hooks, hook)

    def _add_tensor_hook(self, output_nr: int, hook: Callable) -> RemovableHandle:
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
            self._hooked = True
        hooks = self._tensor_hooks.setdefault(output_nr, [])
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def _backward(self, grads: list) -> tuple:
        """Gradients for each next_functions edge, given one gradient per output."""
        raise NotImplementedError

    def _release(self, pass_index: int) -> None:
        """Free saved tensors after a backward without retain_graph."""
        if self._saved:
            for saved in self._saved:
                if type(saved) is SavedTensor:
                    saved.release()
            self._freed_by = pass_index

    def __call__(self, *grads):
        """Run this node's backward directly, as ``grad_fn(grad)`` does in PyTorch."""
        outputs = self._backward(list(grads))
        return outputs[0] if len(outputs) == 1 else outputs


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds incoming gradients into ``.grad``."""

    _name = "AccumulateGrad"
    _is_accumulate = True

    def __init__(self, variable) -> None:
        super().__init__()
        self.variable = variable
        self._output_meta = ((variable.shape, variable._array.dtype, variable.device),)

    def _backward(self, grads: list) -> tuple:
        grad = grads[0]
        variable = self.variable
        if grad is None:
            return ()
        if variable.grad is None:
            if state.grad_enabled:  # create_graph: keep the gradient's own graph
                variable.grad = grad
            else:
                variable.grad = grad._detached_copy()
        elif state.grad_enabled:
            variable.grad = variable.grad + grad
        else:
            variable.grad._array += grad._array
        return ()
