"""Recording what autograd did: the tracer, the Trace data model and the .tgtrace file.

``tracegrad.record()`` starts a recording (``tracegrad.trace`` is PyTorch's matrix trace,
as in torch)::

    >>> import tracegrad
    >>> x = tracegrad.ones(3, requires_grad=True)
    >>> with tracegrad.record() as tr:
    ...     (x * x).sum().backward()
    >>> [node.name for node in tr.iter_nodes()]
    ['MulBackward0', 'AccumulateGrad', 'SumBackward0']
    >>> tracegrad.tracing.from_tensor((x * 2).sum()).nodes[1].name
    'MulBackward0'
"""

from __future__ import annotations

from .graph import from_tensor
from .limits import TraceLimits
from .model import Trace
from .names import name
from .recorder import Recorder, record
from .store import load_trace, save_trace


def run_script(path: str, argv: list[str] | None = None, **trace_options) -> Trace:
    """Run a Python script as ``__main__`` under the tracer and return its Trace.

    An exception raised by the script is recorded in ``trace.exception`` (not raised).
    """
    from .runner import run_script as _run_script

    return _run_script(path, argv, **trace_options)


__all__ = ["Recorder", "Trace", "TraceLimits", "from_tensor", "load_trace", "name", "record",
           "run_script", "save_trace"]
