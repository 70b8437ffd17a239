"""What the exporter accepts: a Trace, the object ``with tracegrad.record() as tr`` gives, a
live tensor (tracegrad's or torch's), or any nest of tuples, lists and dicts of tensors (all
drawn as outputs)."""

from __future__ import annotations

from typing import Any

from ..tracing.model import Trace


def as_trace(subject: Any) -> tuple[Trace, list[int] | None]:
    """The Trace to draw and the tensor ids to draw as outputs (None: let the plan choose).

    >>> import tracegrad
    >>> w = tracegrad.ones(2, requires_grad=True)
    >>> trace, outputs = as_trace({"a": w * 2, "b": [w + 1]})
    >>> len(outputs)
    2
    """
    if isinstance(subject, Trace):
        return subject, _recorded_roots(subject)
    inner = getattr(subject, "trace", None)  # the recorder from `with tracegrad.record()`
    if isinstance(inner, Trace):
        return inner, _recorded_roots(inner)
    tensors = flatten_tensors(subject)
    if not tensors:
        raise TypeError(
            f"render/to_dot: expected a Tensor, a tuple/list/dict of Tensors or a Trace, got "
            f"{type(subject).__name__} with no tensors in it. Hint: pass the output tensor "
            "(e.g. the loss) or the trace from `with tracegrad.record() as tr:`.")
    return structure_trace(tensors)


def structure_trace(tensors: list) -> tuple[Trace, list[int]]:
    """A structure-only Trace of everything behind ``tensors``, which are its outputs.

    Like ``tracegrad.tracing.from_tensor`` (same builder, same naming after the caller's
    variables), for several tensors at once, so shared parts of their graphs are one.
    """
    from ..tracing.graph import GraphBuilder, gc_paused, name_unnamed
    from ..tracing.names import user_frame

    frame = user_frame(1)
    with gc_paused():
        trace = Trace(metadata={"source": "from_tensor", "values": False})
        builder = GraphBuilder(trace)
        known = {(tensor.grad_fn, tensor._output_nr): tensor
                 for tensor in tensors if tensor.grad_fn is not None}
        builder.adopt([tensor.grad_fn for tensor in tensors if tensor.grad_fn is not None],
                      known)
        roots = [builder.tensor_id(tensor) for tensor in tensors]
        trace.metadata["roots"] = roots
        name_unnamed(trace, builder, frame)
    return trace, roots


def flatten_tensors(subject: Any) -> list:
    """Every tensor in a nest of tuples, lists and dicts, in order, each once (a torch
    tensor as the bridge's adapter).

    Iterative, so a deeply nested structure cannot hit the recursion limit. Identity is
    used only to drop repeats of the very same object within this one call.
    """
    from ..bridge import as_tracegrad_tensor, is_torch_tensor
    from ..tensor import Tensor

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


def _recorded_roots(trace: Trace) -> list[int] | None:
    """The tensor ids the tracer says the trace was made from, if it says."""
    metadata = trace.metadata if isinstance(trace.metadata, dict) else {}
    roots = metadata.get("roots")
    if roots is None and metadata.get("root") is not None:  # from_tensor's single root
        roots = [metadata["root"]]
    if roots:
        return [int(root) for root in roots if int(root) in trace.tensors]
    return None
