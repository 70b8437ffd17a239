"""Assertions that explain: ``assert_has_grad`` says why a gradient is missing, and
``diff_traces`` where two runs of one program part (tracing/why.py, tracing/diff.py).

>>> import tracegrad as torch
>>> w1 = torch.ones(3, requires_grad=True)
>>> loss = (w1 * 2).sum()
>>> loss.backward()
>>> assert_has_grad(loss, w1)
"""

from __future__ import annotations

from typing import Any

from ..tracing.diff import TraceDiff
from ..tracing.diff import diff_traces as _diff_traces
from ..tracing.model import Trace


def assert_has_grad(loss: Any, tensor: Any, *, trace: Trace | None = None) -> None:
    """Fail unless ``tensor.grad`` is set and not all zeros, saying why it is not: where the
    path from ``loss`` was cut, why backward never reached it, or which node zeroed it.

    The explanation reads ``trace`` (default: the recording running now, if any); without a
    recording it reads the graph behind ``loss``, which cannot see a detach() or no_grad.
    Works on torch tensors too.
    """
    grad = tensor.grad
    if grad is not None and bool((grad != 0).any()):
        return
    label, explanation = _explain(loss, tensor, trace)
    state = "None" if grad is None else "all zeros"
    raise AssertionError(f"{label}.grad is {state}.\n{explanation}")


def _label(tensor: Any) -> str:
    name = getattr(tensor, "name", None)
    return name if isinstance(name, str) and name else "tensor"


def _explain(loss: Any, tensor: Any, trace: Trace | None) -> tuple[str, str]:
    """(the tensor's name, why it has no gradient)."""
    from ..tracing.why import why_no_grad

    for candidate in ([trace] if trace is not None else _recordings()):
        try:
            answer = why_no_grad(candidate, tensor)
        except ValueError:
            continue
        return answer.label, str(answer)
    return _label(tensor), _explain_from_graph(loss, tensor)


def _explain_from_graph(loss: Any, tensor: Any) -> str:
    if getattr(tensor, "requires_grad", True) is False:
        return "It does not require grad: create it with requires_grad=True."
    hint = ("Record the program (with tracegrad.record() as tr: ...) and call "
            "tr.why_no_grad(tensor) to see where the path is cut (detach(), .data, no_grad, "
            ".item()).")
    if not _in_graph(loss, tensor):
        return f"The graph behind the loss does not reach it. {hint}"
    return ("The graph behind the loss reaches it, but backward did not fill .grad (not "
            f"called yet, or called on another tensor, or zero_grad() ran after it). {hint}")


def _in_graph(loss: Any, tensor: Any) -> bool:
    """Whether ``tensor`` is a leaf of the graph behind ``loss`` (either engine)."""
    from ..bridge import as_tracegrad_tensor
    from ..tracing.graph import GraphBuilder, gc_paused

    root = as_tracegrad_tensor(loss)
    builder = GraphBuilder(Trace())
    with gc_paused():
        if root.grad_fn is not None:
            builder.adopt([root.grad_fn], {(root.grad_fn, root._output_nr): root})
    if builder.known_tensor(tensor) is not None:
        return True
    return any(getattr(reference(), "subject", None) is tensor
               for _, reference in builder._tensor_ids.values())


def _recordings() -> list[Trace]:
    """The traces being recorded now, the latest first (their names looked up)."""
    from ..autograd import events
    from ..tracing.recorder import Recorder

    found = []
    for listener in reversed(events.listeners):
        if isinstance(listener, Recorder):
            listener.name_pending()
            found.append(listener.trace)
    return found


def diff_traces(a: Trace, b: Trace, *, rtol: float | None = None,
                atol: float | None = None, names: tuple[str, str] = ("a", "b")) -> TraceDiff:
    """Where two traces of one program part: the first node whose forward value or
    gradient differs beyond the tolerance (``torch.testing``'s by dtype when not given),
    and a graph diff when their structures differ. ``result.same`` is True when they agree;
    ``str(result)`` says it in words, calling the traces ``names``.

    >>> import tracegrad as torch
    >>> w = torch.ones(2, requires_grad=True)
    >>> with torch.record() as tr:
    ...     (w * 2).sum().backward()
    >>> diff_traces(tr, tr).same
    True
    """
    return _diff_traces(a, b, rtol=rtol, atol=atol, names=names)
