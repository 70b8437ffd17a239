"""Drawing autograd graphs: Graphviz DOT text and images (SVG, PNG, PDF).

>>> import tracegrad
>>> w = tracegrad.ones(2, requires_grad=True)
>>> dot = tracegrad.to_dot((w * 3).sum())      # a graphviz.Digraph
>>> dot.source.startswith("digraph tracegrad")
True

``tracegrad.render(loss, "graph.svg")`` lays it out with Graphviz's ``dot``;
``tracegrad.make_dot(loss)`` draws what torchviz's ``make_dot`` draws. The
``graphviz`` Python package is imported only when a graph is built.
"""

from __future__ import annotations

from .dot import to_dot
from .render import GraphCollapsedWarning, render
from .torchviz_compat import make_dot

__all__ = ["GraphCollapsedWarning", "make_dot", "render", "to_dot"]
