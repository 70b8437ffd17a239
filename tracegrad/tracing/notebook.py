"""A Trace in a notebook or the REPL: one short line of text, or its picture.

A cell ending in ``tr`` shows the graph as SVG (Jupyter calls ``_repr_mimebundle_``); the
picture is drawn with ``tracegrad.render``'s defaults, so a large graph is drawn smaller
and says so. Without Graphviz the cell shows the summary and how to install it -- never an
exception.

>>> from tracegrad.tracing.model import Trace
>>> trace_repr(Trace(metadata={"program": "net.py"}))
'<Trace of net.py: 0 nodes, 0 backward passes, 0 violations>'
"""

from __future__ import annotations

import shutil
import warnings

from ..cli import plural
from .model import Trace

NO_GRAPHVIZ = ("(the graph needs Graphviz's `dot` program to draw: sudo apt-get install "
               "graphviz, or conda install graphviz)")


def trace_repr(trace: Trace) -> str:
    """``<Trace of net.py: 2,006 nodes, 500 backward passes, 1 violation>``."""
    program = trace.metadata.get("program") if isinstance(trace.metadata, dict) else None
    of = f" of {program}" if program else ""
    raised = f", raised {trace.exception.type}" if trace.exception is not None else ""
    return (f"<Trace{of}: {plural(len(trace.nodes), 'node')}, "
            f"{plural(len(trace.passes), 'backward pass')}, "
            f"{plural(len(trace.violations), 'violation')}{raised}>")


def trace_svg(trace: Trace) -> str | None:
    """The SVG picture of the trace, or None when it cannot be drawn here."""
    if shutil.which("dot") is None:
        return None
    from ..draw.dot import make_options, plan_to_digraph
    from ..draw.plan import given_outputs
    from ..draw.sizing import MAX_NODES, GraphCollapsedWarning, sized_plan
    from .graph import gc_paused

    drawn, outputs = trace, given_outputs(trace)
    options = make_options(show_saved=True, show_attrs=False, max_attr_chars=50,
                           collapse_modules=False, highlight_step=None, pass_index=None)
    with warnings.catch_warnings():  # the picture's title says what was drawn smaller
        warnings.simplefilter("ignore", GraphCollapsedWarning)
        with gc_paused():
            graph = plan_to_digraph(sized_plan(drawn, outputs, options, MAX_NODES))
    try:
        return graph.pipe(format="svg").decode("utf-8")
    except Exception:  # noqa: BLE001 - a notebook falls back to text rather than fail
        return None


def trace_mimebundle(trace: Trace, include=None, exclude=None) -> dict[str, str]:
    """``text/plain`` always; ``image/svg+xml`` when Graphviz can draw it."""
    text = trace.summary()
    bundle = {}
    wants_svg = (include is None or "image/svg+xml" in include) and \
        not (exclude and "image/svg+xml" in exclude)
    svg = trace_svg(trace) if wants_svg else None
    if svg is not None:
        bundle["image/svg+xml"] = svg
    elif wants_svg:
        text = f"{text}\n{NO_GRAPHVIZ}"
    bundle["text/plain"] = text
    return bundle
