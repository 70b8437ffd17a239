"""What the exporter accepts: a Trace, the object ``with tracegrad.trace() as tr`` gives, a
live tensor, or any nest of tuples, lists and dicts of tensors (all drawn as outputs)."""

from __future__ import annotations

from typing import Any

from ..trace.model import Trace


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
    inner = getattr(subject, "trace", None)  # the recorder from `with tracegrad.trace()`
    if isinstance(inner, Trace):
        return inner, _recorded_roots(inner)
    tensors = flatten_tensors(subject)
    if not tensors:
        raise TypeError(
            f"render/to_dot: expected a Tensor, a tuple/list/dict of Tensors or a Trace, got "
            f"{type(subject).__name__} with no tensors in it. Hint: pass the output tensor "
            "(e.g. the loss) or the trace from `with tracegrad.trace() as tr:`.")
    from ..tensor import Tensor
    from ..trace import from_tensor

    trace = from_tensor(tensors[0] if isinstance(subject, Tensor) else tuple(tensors))
    return trace, _recorded_roots(trace)


def flatten_tensors(subject: Any) -> list:
    """Every tensor in a nest of tuples, lists and dicts, in order, each once.

    Iterative, so a deeply nested structure cannot hit the recursion limit. Identity is
    used only to drop repeats of the very same object within this one call.
    """
    from ..tensor import Tensor

    found: list = []
    seen: set[int] = set()
    pending: list[Any] = [subject]
    while pending:
        item = pending.pop()
        if isinstance(item, Tensor):
            if id(item) not in seen:
                seen.add(id(item))
                found.append(item)
        elif isinstance(item, dict):
            pending.extend(reversed(list(item.values())))
        elif isinstance(item, (tuple, list)):
            pending.extend(reversed(item))
    return found


def _recorded_roots(trace: Trace) -> list[int] | None:
    """The tensor ids the tracer says the trace was made from, if it says."""
    roots = trace.metadata.get("roots") if isinstance(trace.metadata, dict) else None
    if roots:
        return [int(root) for root in roots if int(root) in trace.tensors]
    return None
