"""gradcheck that says which node's backward is wrong.

``tracegrad.autograd.gradcheck`` (like PyTorch's) compares a whole function's Jacobian with
finite differences and, on a mismatch, can only name the input/output pair. This one then
runs the function once more, recording every op and custom Function it calls with the
values it was called on, and re-checks each of those nodes *on its own*: the op (or the
Function) is applied again to copies of its recorded inputs, in float64, and its backward
is compared with finite differences of its own forward. The nodes that fail are named with
the line of the forward call that made them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..autograd import events
from ..autograd.gradcheck import GradcheckError

__all__ = ["NodeGradcheckError", "WrongNode", "gradcheck"]


@dataclass(frozen=True)
class WrongNode:
    """A node whose backward disagrees with finite differences of its own forward."""

    name: str  # "BadSquareBackward"
    site: Any  # autograd.site.Site of the forward call, or None
    detail: str  # the local gradcheck's message

    def describe(self) -> str:
        where = ""
        if self.site is not None:
            where = f" created at {self.site}"
            if getattr(self.site, "code", ""):
                where += f" ({self.site.code})"
        return f"{self.name}{where}"


class NodeGradcheckError(GradcheckError):
    """A gradcheck failure that names the node(s) whose backward is wrong (``.nodes``)."""

    def __init__(self, message: str, nodes: list[WrongNode]) -> None:
        super().__init__(message)
        self.nodes = nodes


@dataclass
class _Call:
    """One recorded ``apply``: the class, its arguments (tensors copied), and its node."""

    function: type
    args: tuple
    kwargs: dict
    node: Any


class _CallRecorder(events.Listener):
    """Records every node a Function or op call makes while active, with what re-running
    the call needs: the engine's ``on_op`` event gives the arguments, the node (and its
    site: a listener makes the engine note each node's line) and the call's keyword
    arguments (``node._call_kwargs``: the attributes built-in ops take as keywords)."""

    def __init__(self) -> None:
        self.calls: list[_Call] = []

    def __enter__(self):
        self._subscription = events.subscribe(self)
        return self

    def __exit__(self, *exc_info) -> None:
        self._subscription.remove()

    def on_op(self, node, inputs, outputs) -> None:
        function = getattr(node, "_function", None)
        if function is None:
            return
        snapshot = tuple(_copy_tensor(arg) for arg in inputs)
        self.calls.append(_Call(function, snapshot, dict(node._call_kwargs), node))


def _copy_tensor(value: Any) -> Any:
    from ..tensor import Tensor

    if not isinstance(value, Tensor):
        return value
    # Copied now: the program may modify the tensor in place after this call.
    copy = Tensor._wrap(value._array.copy(), value.requires_grad)
    copy.name = value.name
    return copy


def _local_check(call: _Call, eps: float, atol: float, rtol: float) -> str | None:
    """None when the node's backward matches its forward; else what is wrong."""
    import numpy as np

    from ..autograd.gradcheck import gradcheck as whole_gradcheck
    from ..tensor import Tensor

    positions = [i for i, arg in enumerate(call.args)
                 if isinstance(arg, Tensor) and arg.requires_grad]
    if not positions:
        return None
    inputs = []
    for position in positions:
        data = call.args[position]._array
        if data.dtype.kind == "f":  # finite differences need float64 to mean anything
            data = data.astype(np.float64)
        inputs.append(Tensor._wrap(data.copy(), True))

    def node_alone(*values):
        args = list(call.args)
        for position, value in zip(positions, values):
            args[position] = value.clone()  # an in-place Function must not touch our input
        return call.function.apply(*args, **call.kwargs)

    try:
        whole_gradcheck(node_alone, tuple(inputs), eps=eps, atol=atol, rtol=rtol)
    except GradcheckError as error:
        return str(error)
    except Exception as error:  # noqa: BLE001 - a backward that raises is also wrong
        return f"{type(error).__name__}: {error}"
    return None


def locate_wrong_nodes(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
                       rtol: float = 1e-3) -> tuple[list[WrongNode], list[str]]:
    """Run ``func`` once, re-check each node it made; (wrong nodes, names that passed)."""
    from ..tensor import Tensor

    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    with _CallRecorder() as recorder:
        func(*inputs)
    wrong, passed = [], []
    for call in recorder.calls:
        problem = _local_check(call, eps, atol, rtol)
        name = call.node.name()
        if problem is None:
            passed.append(name)
        else:
            wrong.append(WrongNode(name, call.node._site, problem))
    return wrong, passed


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, **options: Any) -> bool:
    """Like ``tracegrad.autograd.gradcheck``; on failure, names the node whose backward is
    wrong and the line that made it.

    >>> import tracegrad as torch
    >>> class BadSquare(torch.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return grad * x  # should be 2 * x
    >>> x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    >>> gradcheck(lambda t: t.exp() * BadSquare.apply(t), (x,))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tracegrad.testing.gradcheck.NodeGradcheckError: Jacobian mismatch ...
    """
    from ..autograd.gradcheck import gradcheck as whole_gradcheck

    try:
        return whole_gradcheck(func, inputs, eps=eps, atol=atol, rtol=rtol,
                               raise_exception=True, **options)
    except GradcheckError as error:
        failure = str(error)
    wrong, passed = locate_wrong_nodes(func, inputs, eps=eps, atol=atol, rtol=rtol)
    message = failure + "\n\n" + _report(wrong, passed)
    if raise_exception:
        raise NodeGradcheckError(message, wrong)
    return False


def _key_lines(detail: str) -> list[str]:
    """The lines of a gradcheck message worth repeating (not the whole Jacobians)."""
    lines = detail.splitlines()
    key = [line for line in lines if line.startswith(("Jacobian mismatch", "The worst"))]
    if key and key[-1].startswith("The worst"):
        key[-1] = key[-1].split(" Hint:")[0]
    return key or lines[:1]


def _report(wrong: list[WrongNode], passed: list[str]) -> str:
    checked = ", ".join(dict.fromkeys(passed)) or "none"
    if not wrong:
        return (
            "Each node's backward agrees with finite differences of its own forward "
            f"(checked: {checked}), so no single node is to blame. Hint: look for a "
            "non-differentiable point (abs, relu, max at a tie) near the inputs, or state "
            "the function keeps between calls.")
    lines = [(f"The backward of {len(wrong)} node(s) is wrong (each node re-checked alone "
              "against finite differences of its own forward):")]
    for node in wrong:
        lines.append(f"  {node.describe()}")
        lines.extend(f"      {line}" for line in _key_lines(node.detail))
    lines.append(f"Nodes whose backward passed: {checked}.")
    names = ", ".join(dict.fromkeys(node.name for node in wrong))
    lines.append(f"Hint: fix the backward of {names}; call it directly with "
                 "tracegrad.autograd.gradcheck(Function.apply, inputs) to iterate.")
    return "\n".join(lines)
