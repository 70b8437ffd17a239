"""A Trace (or a live tensor) as a ``graphviz.Digraph``; ``.source`` is the DOT text.

Every label and tooltip is escaped here, once: user text may hold quotes, backslashes,
``<``/``>`` (which graphviz would otherwise read as an HTML label) or any unicode.
``graphviz`` is imported inside functions so that importing tracegrad never imports it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..tracing.graph import gc_paused
from ..tracing.query import as_trace
from .plan import Box, Options, Plan, given_outputs
from .sizing import MAX_NODES, sized_plan

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
           highlight_step: int | None = None, pass_index: int | str | None = None,
           max_nodes: int | None = MAX_NODES) -> graphviz.Digraph:
    """The graph of a tensor, a nest of tensors or a Trace, as a ``graphviz.Digraph``.

    Live tensors are converted with ``tracegrad.tracing.from_tensor`` (structure only);
    a Trace recorded with ``tracegrad.record()`` adds step numbers, gradients and
    violations. Nothing is laid out: this never needs the ``dot`` program. The options
    are ``render``'s: a graph over ``max_nodes`` boxes is drawn smaller (None: never).

    >>> import tracegrad
    >>> w = tracegrad.ones(2, requires_grad=True)
    >>> "MulBackward0" in tracegrad.to_dot((w * 3).sum()).source
    True
    """
    options = make_options(show_saved=show_saved, show_attrs=show_attrs,
                           max_attr_chars=max_attr_chars, collapse_modules=collapse_modules,
                           highlight_step=highlight_step, pass_index=pass_index)
    trace = as_trace(tensor_or_trace)
    outputs = given_outputs(trace)
    with gc_paused():
        return plan_to_digraph(sized_plan(trace, outputs, options, max_nodes),
                               rankdir)


def make_options(*, show_saved: bool, show_attrs: bool, max_attr_chars: int,
                 collapse_modules: bool, highlight_step: int | None,
                 pass_index: int | str | None) -> Options:
    if max_attr_chars < 4:
        raise ValueError(f"to_dot: max_attr_chars must be at least 4 (room for '...'); "
                         f"got {max_attr_chars}.")
    return Options(show_saved=show_saved, show_attrs=show_attrs,
                   max_attr_chars=max_attr_chars, collapse_modules=collapse_modules,
                   highlight_step=highlight_step, pass_index=pass_index)


def plan_to_digraph(plan: Plan, rankdir: str = "TB") -> graphviz.Digraph:
    """Write a Plan as DOT statements, with one nested cluster per nn.Module scope.

    Statements are formatted here exactly as graphviz formats them (a node's label first,
    other attributes sorted), and appended to the Digraph's ``body``: going through ``Digraph.node`` costs
    several times more per statement, which matters at 100,000 nodes.
    """
    import graphviz

    if rankdir not in RANKDIRS:
        raise ValueError(f"to_dot: rankdir must be one of {', '.join(RANKDIRS)}; "
                         f"got {rankdir!r}. Hint: 'LR' draws the graph left to right.")
    graph_attr = {"rankdir": rankdir}
    if plan.title:  # which pass the picture shows, and what was drawn smaller
        graph_attr.update(label=_text(plan.title), labelloc="t", labeljust="l",
                          fontname="monospace", fontsize="10")
    graph = graphviz.Digraph("tracegrad", graph_attr=graph_attr,
                             node_attr=dict(NODE_ATTRS), edge_attr=dict(EDGE_ATTRS))
    clusters = _make_clusters(graphviz, plan.boxes, plan.module_labels)
    body = graph.body
    # One f-string per statement, with the common shapes written out (a box with no extra
    # attributes, an arrow with none): sorting and joining attribute lists for each of
    # 100,000 statements cost as much as planning them (bench/bench_dot.py).
    # Box keys are the plan's own ids ("n12", "t3", "m0", "exception"): DOT identifiers
    # already, written bare without asking quote().
    for box in plan.boxes:
        target = clusters[box.module].body if box.module is not None else body
        label = _quoted_text(box.label)
        if box.attrs:
            attributes = {"fillcolor": box.fill, "tooltip": _text(box.tooltip), **box.attrs}
            target.append(f"\t{box.key} [label={label} {_attribute_list(attributes)}]\n")
        else:  # "fillcolor" < "tooltip": the order graphviz sorts them in
            target.append(f"\t{box.key} [label={label} fillcolor={_quoted_word(box.fill)} "
                          f"tooltip={_quoted_text(box.tooltip)}]\n")
    _attach_clusters(graph, clusters)
    append = body.append
    for arrow in plan.arrows:
        attrs, tooltip, label = arrow.attrs, arrow.tooltip, arrow.label
        if not (attrs or tooltip or label):
            append(f"\t{arrow.tail} -> {arrow.head}\n")
            continue
        # An arrow's own attributes (dir, color, fontcolor) sort before "label" and
        # "tooltip": written once per combination, then the two texts appended in order.
        head = _ARROW_ATTRS.get(tuple(attrs.items())) if attrs else ""
        if head is None:
            head = _arrow_attributes(attrs)
        if head is False:  # an attribute that sorts after "label": the general way
            attributes = dict(attrs)
            if tooltip:
                attributes["tooltip"] = _text(tooltip)
            if label:
                attributes["label"] = _text([label])
            append(f"\t{arrow.tail} -> {arrow.head} [{_attribute_list(attributes)}]\n")
            continue
        if label:
            label_text = f"label={_quoted_text([label])}"
            head = f"{head} {label_text}" if head else label_text
        if tooltip:
            tooltip_text = f"tooltip={_quoted_text(tooltip)}"
            head = f"{head} {tooltip_text}" if head else tooltip_text
        append(f"\t{arrow.tail} -> {arrow.head} [{head}]\n")
    return graph


_ARROW_ATTRS: dict[tuple, str | bool] = {}


def _arrow_attributes(attrs: dict[str, str]) -> str | bool:
    """``_attribute_list(attrs)`` when every key sorts before "label" (so "label" and
    "tooltip" follow in graphviz's order), else False; remembered per combination."""
    text = _attribute_list(attrs) if all(key < "label" for key in attrs) else False
    if len(_ARROW_ATTRS) < 256 and all(len(value) <= 32 for value in attrs.values()):
        _ARROW_ATTRS[tuple(attrs.items())] = text
    return text


# graphviz.quoting's rule for ids that need no quotes
_PLAIN_ID = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))\Z")
_KEYWORDS = {"node", "edge", "graph", "digraph", "subgraph", "strict"}
_NUMBER_START = frozenset("-.0123456789")


def quote(text: str) -> str:
    """A DOT id: bare when DOT reads it as one token (as graphviz.quoting does), else
    double-quoted. Backslashes must already be escaped (see ``_text``).

    >>> quote("n12"), quote("-1.5"), quote("graph"), quote('say "hi"')
    ('n12', '-1.5', '"graph"', '"say \\\\"hi\\\\""')
    """
    # str.isidentifier on ASCII is graphviz's [A-Za-z_][A-Za-z0-9_]*, decided in C; the
    # regex is left for numbers (rare): labels and tooltips (spaces) fail both at once.
    if text.isidentifier() and text.isascii():
        return text if text.lower() not in _KEYWORDS else f'"{text}"'
    if text[:1] in _NUMBER_START and text and _PLAIN_ID.match(text):
        return text
    return '"' + text.replace('"', '\\"') + '"'


def _quoted_word(text: str) -> str:
    """``quote(text)`` for the few words a picture repeats (colours, numbers, slot names),
    looked up: a 50,000-node graph asks for "orange" 100,000 times."""
    quoted = _QUOTED_WORDS.get(text)
    if quoted is None:
        quoted = quote(text)
        if len(text) <= 32 and len(_QUOTED_WORDS) < 1024:
            _QUOTED_WORDS[text] = quoted
    return quoted


_QUOTED_WORDS: dict[str, str] = {}


def _attribute_list(attributes: dict[str, str]) -> str:
    """``key=value`` pairs sorted by key, as graphviz writes them (keys are attribute
    names: bare words)."""
    return " ".join([f"{key}={_quoted_word(value) if len(value) <= 32 else quote(value)}"
                     for key, value in sorted(attributes.items())])


def _text(lines: list[str]) -> str:
    """DOT-safe text: backslashes doubled, lines joined by DOT's ``\\n``; ``quote`` then
    wraps it in double quotes, so ``<...>`` is never read as an HTML label."""
    text = "\\n".join(lines)
    if text.count("\\") == len(lines) - 1:  # no backslash but the separators': done, in C
        return text
    return "\\n".join(line.replace("\\", "\\\\") for line in lines)


def _quoted_text(lines: list[str]) -> str:
    """``quote(_text(lines))`` in one call: text of several lines or with a space (every
    tooltip, most labels) is never a bare DOT id, so it is quoted without asking."""
    text = "\\n".join(lines)
    if text.count("\\") != len(lines) - 1:
        text = "\\n".join([line.replace("\\", "\\\\") for line in lines])
    elif len(lines) == 1 and " " not in text:
        return quote(text)
    return '"' + text.replace('"', '\\"') + '"'


def _make_clusters(graphviz, boxes: list[Box], labels: dict[str, str]
                   ) -> dict[str, graphviz.Digraph]:
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
        label = labels.get(scope, scope)
        cluster.attr(label=graphviz.nohtml(_text([label])), style="rounded", color="gray50",
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
