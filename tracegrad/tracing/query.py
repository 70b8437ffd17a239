"""One way in: turn whatever a user hands us into a Trace.

The exporter (``render``, ``to_dot``), the debugger (``tracegrad.tui.show``), the graph
assertions and the notebook accept the same things -- a Trace, the recorder from
``with tracegrad.record() as tr``, a live tensor (tracegrad's or torch's) or any nest of
tuples, lists and dicts of tensors -- and :func:`as_trace` is the one place that reads them.
Questions about the Trace itself (its roots, what a node reaches, which step ran a node)
are answered by :class:`~tracegrad.tracing.model.Trace`.

>>> import tracegrad
>>> w = tracegrad.ones(2, requires_grad=True)
>>> trace = as_trace({"a": w * 2, "b": [w + 1]})
>>> len(trace.roots), [trace.node(n).name for n in trace.root_nodes()]
(2, ['MulBackward0', 'AddBackward0'])
"""

from __future__ import annotations

from typing import Any

from .graph import GraphBuilder, gc_paused, name_unnamed
from .model import Trace
from .names import user_frame

__all__ = ["as_trace", "flatten_tensors", "recorded_trace"]


def as_trace(subject: Any) -> Trace:
    """The Trace ``subject`` stands for.

    A Trace is returned as it is; a recorder gives the Trace it records; tensors (one, or a
    nest of them) give a structure-only Trace of everything behind them, with
    ``trace.roots`` the tensors in the order given and tensors named after the caller's
    variables. Anything else is a TypeError.

    >>> as_trace(3)
    Traceback (most recent call last):
    ...
    TypeError: expected a Tensor, a tuple/list/dict of Tensors or a Trace, got int with no tensors in it. Hint: pass the output tensor (e.g. the loss) or the trace from `with tracegrad.record() as tr:`.
    """
    trace = recorded_trace(subject)
    if trace is not None:
        return trace
    tensors = flatten_tensors(subject)
    if not tensors:
        raise TypeError(
            f"expected a Tensor, a tuple/list/dict of Tensors or a Trace, got "
            f"{type(subject).__name__} with no tensors in it. Hint: pass the output tensor "
            "(e.g. the loss) or the trace from `with tracegrad.record() as tr:`.")
    return _structure_trace(tensors)


def recorded_trace(subject: Any) -> Trace | None:
    """``subject`` if it is a Trace, the Trace of a recorder (anything holding one in
    ``.trace``), else None."""
    if isinstance(subject, Trace):
        return subject
    inner = getattr(subject, "trace", None)
    return inner if isinstance(inner, Trace) else None


def _structure_trace(tensors: list) -> Trace:
    """A structure-only Trace of everything behind ``tensors``, which are its roots.

    The same builder and naming as ``tracegrad.tracing.from_tensor``, for several tensors
    at once, so the shared parts of their graphs are recorded once.
    """
    frame = user_frame(1)
    with gc_paused():
        trace = Trace(metadata={"source": "from_tensor", "values": False})
        builder = GraphBuilder(trace)
        known = {(tensor.grad_fn, tensor._output_nr): tensor
                 for tensor in tensors if tensor.grad_fn is not None}
        builder.adopt([tensor.grad_fn for tensor in tensors if tensor.grad_fn is not None],
                      known)
        trace.roots = [builder.tensor_id(tensor) for tensor in tensors]
        name_unnamed(trace, builder, frame)
    return trace


def flatten_tensors(subject: Any) -> list:
    """Every tensor in a nest of tuples, lists and dicts, in order, each once (a torch
    tensor as the bridge's adapter).

    Iterative, so a deeply nested structure cannot hit the recursion limit. Identity is
    used only to drop repeats of the very same object within this one call.

    >>> import tracegrad
    >>> x = tracegrad.ones(1)
    >>> len(flatten_tensors([x, {"again": x}, (tracegrad.zeros(1),)]))
    2
    """
    from ..bridge import as_tracegrad_tensor, is_torch_tensor
    from ..tensor import Tensor  # tracing is imported by the engine: Tensor comes later

    found: list = []
    seen: set[int] = set()
    pending: list[Any] = [subject]
    torch_tensors: list = []
    while pending:
        item = pending.pop()
        if isinstance(item, Tensor) or is_torch_tensor(item):
            if id(item) not in seen:
                seen.add(id(item))
                found.append(item)
                if not isinstance(item, Tensor):
                    torch_tensors.append(len(found) - 1)
        elif isinstance(item, dict):
            pending.extend(reversed(list(item.values())))
        elif isinstance(item, (tuple, list)):
            pending.extend(reversed(item))
    if torch_tensors:  # one walk for all of them, so a shared part of their graphs is one
        adapters = as_tracegrad_tensor(tuple(found[index] for index in torch_tensors))
        for index, adapter in zip(torch_tensors, adapters):
            found[index] = adapter
    return found
