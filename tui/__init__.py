"""The Textual backward debugger: step through a recorded backward pass in a terminal.

``show(trace)`` opens it on a ``Trace``; ``tracegrad tui script.py`` or
``tracegrad tui run.tgtrace`` open it from the command line. Importing this package does
not import textual (the command line's ``--help`` stays fast); ``show`` does.

Example:
    >>> import tracegrad as tg
    >>> with tg.record() as tr:                                    # doctest: +SKIP
    ...     (tg.randn(3, requires_grad=True) * 2).sum().backward()
    >>> tg.tui.show(tr)                                           # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracegrad.tracing.model import Trace

__all__ = ["dump_steps", "show"]


def show(trace: Trace | Any, *, source: str = "", all_passes: bool = False) -> None:
    """Open the debugger on ``trace`` and return when the user quits.

    Accepts what ``tracegrad.render`` does: a ``Trace``, the object ``tracegrad.record()``
    yields, or tensors (their graph, without backward steps). ``all_passes`` shows
    gradcheck's probe passes too.
    """
    from tracegrad.tracing.query import as_trace

    from .app import DebuggerApp

    DebuggerApp(as_trace(trace), source=source, show_probes=all_passes).run()


def dump_steps(trace: Trace | Any, all_passes: bool = False) -> str:
    """The steps table of every pass the program started as plain text (what
    ``tracegrad tui --dump`` prints); ``all_passes`` adds gradcheck's probe passes."""
    from tracegrad.tracing.query import as_trace

    from .dump import dump_steps as dump

    return dump(as_trace(trace), all_passes=all_passes)
