"""Drawing a graph to a file with Graphviz's ``dot``: SVG, PNG, PDF, or the DOT text itself."""

from __future__ import annotations

import os
import shutil
import warnings
from typing import Any

from ..errors import GraphTooLargeError, GraphvizNotFoundError
from .dot import gc_paused, make_options, plan_to_digraph
from .plan import plan_graph
from .sources import as_trace

DOT_FORMATS = ("dot", "gv")  # written as text, no `dot` program needed
IMAGE_FORMATS = ("svg", "png", "pdf", "jpg", "jpeg")
MAX_NODES = 5000
INSTALL_HINT = "sudo apt-get install graphviz"


class GraphCollapsedWarning(UserWarning):
    """The graph was too large to lay out and was drawn with one box per nn.Module."""


def render(tensor_or_trace: Any, path: str | os.PathLike, format: str | None = None, *,
           show_saved: bool = True, show_attrs: bool = False, max_attr_chars: int = 50,
           rankdir: str = "TB", collapse_modules: bool = False,
           highlight_step: int | None = None, pass_index: int | None = 0,
           max_nodes: int | None = MAX_NODES) -> str:
    """Draw the graph of a tensor (or nest of tensors) or of a Trace into ``path``.

    ``format`` defaults to the suffix of ``path`` (svg when it has none). ``dot``/``gv``
    write the DOT text and need no Graphviz install; images are laid out by ``dot``.
    Graphs over ``max_nodes`` boxes are drawn with one box per nn.Module (a
    ``GraphCollapsedWarning`` says so); if that is still too many, ``GraphTooLargeError``.
    ``max_nodes=None`` lays out whatever the size. Step numbers, gradients and the nodes
    drawn come from backward pass ``pass_index`` (a training loop records one graph per
    iteration); ``pass_index=None`` draws every recorded node. Returns the path written.

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
    trace, outputs = as_trace(tensor_or_trace)
    with gc_paused():
        plan = plan_graph(trace, outputs, options)
        if format not in DOT_FORMATS and max_nodes is not None and plan.size > max_nodes:
            plan = _shrink(plan, trace, outputs, options, max_nodes)
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


def _shrink(plan, trace, outputs, options, max_nodes: int):
    """One box per nn.Module when that brings the graph under ``max_nodes``, else an error."""
    before = plan.size
    if not options.collapse_modules:
        options.collapse_modules = True
        collapsed = plan_graph(trace, outputs, options)
        if collapsed.size < before:
            plan = collapsed
    if plan.size > max_nodes:
        raise GraphTooLargeError(
            f"render: the graph has {plan.size} boxes even with one box per nn.Module, more "
            f"than max_nodes={max_nodes} that `dot` lays out in reasonable time. Hint: write "
            "the DOT text instead (format='dot' or tracegrad.to_dot), or pass "
            "max_nodes=None to wait for the layout.")
    if plan.size < before:
        warnings.warn(
            f"render: the graph has {before} boxes, more than max_nodes={max_nodes} that "
            f"`dot` lays out in reasonable time; drawn with one box per nn.Module instead "
            f"({plan.size} boxes). Pass max_nodes=None to lay out every node.",
            GraphCollapsedWarning, stacklevel=3)
    return plan
