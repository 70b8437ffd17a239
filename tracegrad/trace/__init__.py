"""Recording what autograd did: the tracer, the Trace data model and the .tgtrace file.

``tracegrad.trace`` is this module, and calling it starts a recording::

    >>> import tracegrad
    >>> x = tracegrad.ones(3, requires_grad=True)
    >>> with tracegrad.trace() as tr:
    ...     (x * x).sum().backward()
    >>> [node.name for node in tr.iter_nodes()]
    ['MulBackward0', 'AccumulateGrad', 'SumBackward0']
    >>> tracegrad.trace.from_tensor((x * 2).sum()).nodes[1].name
    'MulBackward0'

The module is callable (``tracegrad.trace(...)``) because the public API names the
function like the package: ``tracegrad/__init__`` resolves ``tracegrad.trace`` to this
module either way (the lazy ``__getattr__`` returns ``trace`` below, which is the module
itself), so ``tracegrad.trace()`` and ``tracegrad.trace.from_tensor`` work whether or not
``tracegrad.trace.model`` was imported first.
"""

from __future__ import annotations

import sys
import types

from .graph import from_tensor
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


class _CallableModule(types.ModuleType):
    """This module's class: ``tracegrad.trace(...)`` starts a recording."""

    def __call__(self, values: bool = True, budget_bytes: int | None = None,
                 keep_passes: tuple[int, int] | None = (2, 2)) -> Recorder:
        return record(values=values, budget_bytes=budget_bytes, keep_passes=keep_passes)


sys.modules[__name__].__class__ = _CallableModule

# ``tracegrad.__getattr__("trace")`` returns ``getattr(this module, "trace")``: make that the
# module, so the name means the same thing before and after the submodule is imported.
trace = sys.modules[__name__]

__all__ = ["Recorder", "Trace", "from_tensor", "load_trace", "name", "record", "run_script",
           "save_trace", "trace"]
