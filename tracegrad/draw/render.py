"""Drawing a graph to a file with Graphviz's ``dot``: SVG, PNG, PDF, or the DOT text itself.

A graph too large to lay out is drawn smaller, never refused (sizing.py).
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from ..errors import GraphvizNotFoundError
from ..tracing.graph import gc_paused
from ..tracing.query import as_trace
from .dot import make_options, plan_to_digraph
from .plan import given_outputs
from .sizing import MAX_NODES, GraphCollapsedWarning, sized_plan

DOT_FORMATS = ("dot", "gv")  # written as text, no `dot` program needed
IMAGE_FORMATS = ("svg", "png", "pdf", "jpg", "jpeg")
INSTALL_HINT = "sudo apt-get install graphviz"

__all__ = ["MAX_NODES", "GraphCollapsedWarning", "render", "require_dot", "resolve_format"]


def render(tensor_or_trace: Any, path: str | os.PathLike, format: str | None = None, *,
           show_saved: bool = True, show_attrs: bool = False, max_attr_chars: int = 50,
           rankdir: str = "TB", collapse_modules: bool = False,
           highlight_step: int | None = None, pass_index: int | str | None = None,
           max_nodes: int | None = MAX_NODES) -> str:
    """Draw the graph of a tensor (or nest of tensors) or of a Trace into ``path``.

    ``format`` defaults to the suffix of ``path`` (svg when it has none). ``dot``/``gv``
    write the DOT text and need no Graphviz install; images are laid out by ``dot``.
    A graph over ``max_nodes`` boxes is drawn smaller -- one box per nn.Module, then
    repeated structure folded, then a summary -- and a ``GraphCollapsedWarning`` says
    what was done; ``max_nodes=None`` draws every node whatever the size. The picture
    shows backward pass ``pass_index`` (default: the first; a negative index counts from
    the end; ``"all"``: every recorded node), and its title says which. Returns the path.

    >>> import tracegrad
    >>> w = tracegrad.ones(2, requires_grad=True)
    >>> tracegrad.render((w * 3).sum(), "/tmp/tracegrad_doctest.dot")
    '/tmp/tracegrad_doctest.dot'
    """
    path = os.fspath(path)
    format = resolve_format(path, format)
    options = make_options(show_saved=show_saved, show_attrs=show_attrs,
                           max_attr_chars=max_attr_chars, collapse_modules=collapse_modules,
                           highlight_step=highlight_step, pass_index=pass_index)
    if format not in DOT_FORMATS:
        require_dot()
    trace = as_trace(tensor_or_trace)
    outputs = given_outputs(trace)
    with gc_paused():
        plan = sized_plan(trace, outputs, options, max_nodes)
        graph = plan_to_digraph(plan, rankdir)
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    if format in DOT_FORMATS:
        with open(path, "w", encoding="utf-8") as file:
            file.write(graph.source)
    else:
        with open(path, "wb") as file:
            file.write(graph.pipe(format=format))
    return path


def resolve_format(path: str, format: str | None) -> str:
    if format is None:
        suffix = os.path.splitext(path)[1].lstrip(".").lower()
        format = suffix or "svg"
    format = format.lower()
    if format not in DOT_FORMATS + IMAGE_FORMATS:
        raise ValueError(
            f"render: cannot write format {format!r} (from {path!r}); expected one of "
            f"{', '.join(DOT_FORMATS + IMAGE_FORMATS)}. Hint: name the file graph.svg, or "
            "pass format='svg'.")
    return format


def require_dot() -> None:
    """Raise a one-sentence error with the install command when ``dot`` is missing."""
    if shutil.which("dot") is None:
        raise GraphvizNotFoundError(
            "Rendering images needs Graphviz's `dot` program, which is not on PATH: install "
            f"it with `{INSTALL_HINT}` (or write DOT text with format='dot' / "
            "tracegrad.to_dot, which need no install).")
