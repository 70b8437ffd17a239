"""A Trace (or a live tensor) as a ``graphviz.Digraph``; ``.source`` is the DOT text.

Every label and tooltip is escaped here, once: user text may hold quotes, backslashes,
``<``/``>`` (which graphviz would otherwise read as an HTML label) or any unicode.
``graphviz`` is imported inside functions so that importing tracegrad never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .plan import Box, Options, Plan, plan_graph
from .sources import as_trace

if TYPE_CHECKING:
    import graphviz

NODE_ATTRS = {  # torchviz's look
    "style": "filled",
    "shape": "box",
    "align": "left",
    "fontsize": "10",
    "height": "0.2",
    "fontname": "monospace",
}
EDGE_ATTRS = {"fontsize": "8", "fontname": "monospace"}
RANKDIRS = ("TB", "LR", "BT", "RL")


def to_dot(tensor_or_trace: Any, *, show_saved: bool = True, show_attrs: bool = False,
           max_attr_chars: int = 50, rankdir: str = "TB", collapse_modules: bool = False,
           highlight_step: int | None = None, pass_index: int = 0) -> graphviz.Digraph:
    """The graph of a tensor, a nest of tensors or a Trace, as a ``graphviz.Digraph``.

    Live tensors are converted with ``tracegrad.trace.from_tensor`` (structure only);
    a Trace recorded with ``tracegrad.trace()`` adds step numbers, gradients and
    violations. Nothing is laid out: this never needs the ``dot`` program.

    >>> import tracegrad
    >>> w = tracegrad.ones(2, requires_grad=True)
    >>> "MulBackward0" in tracegrad.to_dot((w * 3).sum()).source
    True
    """
    options = make_options(show_saved=show_saved, show_attrs=show_attrs,
                           max_attr_chars=max_attr_chars, collapse_modules=collapse_modules,
                           highlight_step=highlight_step, pass_index=pass_index)
    trace, outputs = as_trace(tensor_or_trace)
    return plan_to_digraph(plan_graph(trace, outputs, options), rankdir)


def make_options(*, show_saved: bool, show_attrs: bool, max_attr_chars: int,
                 collapse_modules: bool, highlight_step: int | None,
                 pass_index: int) -> Options:
    if max_attr_chars < 4:
        raise ValueError(f"to_dot: max_attr_chars must be at least 4 (room for '...'); "
                         f"got {max_attr_chars}.")
    return Options(show_saved=show_saved, show_attrs=show_attrs,
                   max_attr_chars=max_attr_chars, collapse_modules=collapse_modules,
                   highlight_step=highlight_step, pass_index=pass_index)


def plan_to_digraph(plan: Plan, rankdir: str = "TB") -> graphviz.Digraph:
    """Write a Plan as DOT statements, with one nested cluster per nn.Module scope."""
    import graphviz

    if rankdir not in RANKDIRS:
        raise ValueError(f"to_dot: rankdir must be one of {', '.join(RANKDIRS)}; "
                         f"got {rankdir!r}. Hint: 'LR' draws the graph left to right.")
    graph = graphviz.Digraph("tracegrad", graph_attr={"rankdir": rankdir},
                             node_attr=dict(NODE_ATTRS), edge_attr=dict(EDGE_ATTRS))
    clusters = _make_clusters(graphviz, plan.boxes)
    for box in plan.boxes:
        target = clusters[box.module] if box.module is not None else graph
        target.node(box.key, _text(box.label), _attributes=_box_attributes(box))
    _attach_clusters(graph, clusters)
    for arrow in plan.arrows:
        attributes = dict(arrow.attrs)
        if arrow.label:
            attributes["label"] = _text([arrow.label])
        if arrow.tooltip:
            attributes["tooltip"] = _text(arrow.tooltip)
        graph.edge(arrow.tail, arrow.head, _attributes=attributes)
    return graph


def _box_attributes(box: Box) -> dict[str, str]:
    attributes = {"fillcolor": box.fill, "tooltip": _text(box.tooltip)}
    attributes.update(box.attrs)
    return attributes


def _text(lines: list[str]):
    """DOT-safe text: backslashes doubled, lines joined by DOT's ``\\n``, never HTML."""
    import graphviz

    return graphviz.nohtml("\\n".join(line.replace("\\", "\\\\") for line in lines))


def _make_clusters(graphviz, boxes: list[Box]) -> dict[str, graphviz.Digraph]:
    """One subgraph per scope and per enclosing scope ("a.b" also makes "a")."""
    scopes: set[str] = set()
    for box in boxes:
        if box.module is not None:
            parts = box.module.split(".")
            for depth in range(1, len(parts) + 1):
                scopes.add(".".join(parts[:depth]))
    clusters = {}
    for number, scope in enumerate(sorted(scopes)):
        cluster = graphviz.Digraph(name=f"cluster_{number}")
        cluster.attr(label=_text([scope]), style="rounded", color="gray50",
                     fontname="monospace", fontsize="10")
        clusters[scope] = cluster
    return clusters


def _attach_clusters(graph, clusters: dict) -> None:
    """Put each cluster inside its parent, deepest first, so parents get finished bodies."""
    by_depth = sorted(clusters, key=lambda scope: (-scope.count("."), scope))
    for scope in by_depth:
        parent_scope = scope.rsplit(".", 1)[0] if "." in scope else None
        parent = clusters[parent_scope] if parent_scope is not None else graph
        parent.subgraph(clusters[scope])
