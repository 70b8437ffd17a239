"""``tracegrad.make_dot``: torchviz's ``make_dot``, for people coming from torchviz.

Same signature, same picture: grey ``grad_fn`` boxes, light blue leaves that require grad
(each joined to its ``AccumulateGrad`` box), orange saved tensors (undirected edges; a
custom Function's always, built-in nodes' with ``show_saved``), green outputs, dark green
view bases with a dotted edge; torchviz's node attributes, its attribute table for
``show_attrs``, its ``size`` rule. Two differences, both deliberate: node ids are counters
(torchviz uses ``id()``, which differs on every run), and a tensor without an entry in
``params`` shows the name tracegrad found for it (``w1``, ``layer1.weight``) where torchviz
shows nothing; ``params`` names win.

For the richer picture (steps, gradients, violations, modules) use ``tracegrad.to_dot``.

>>> import tracegrad as torch
>>> w = torch.ones(2, 3, requires_grad=True)
>>> dot = torch.make_dot((w * 2).sum(), params={"weight": w})
>>> print(dot.source)  # doctest: +NORMALIZE_WHITESPACE
digraph {
    graph [size="12,12"]
    node [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]
    t2 [label="
     ()" fillcolor=darkolivegreen1]
    n2 [label=SumBackward0]
    n0 -> n2
    n0 [label=MulBackward0]
    n1 -> n0
    t0 [label="weight
     (2, 3)" fillcolor=lightblue]
    t0 -> n1
    n1 [label=AccumulateGrad]
    n2 -> t2
}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..tracing.model import NodeRecord, Trace
from .plan import BASE_FILL, LEAF_FILL, OUTPUT_FILL, SAVED_FILL

if TYPE_CHECKING:
    import graphviz

# torchviz's node attributes and sizes, exactly.
TORCHVIZ_NODE_ATTRS = {"style": "filled", "shape": "box", "align": "left", "fontsize": "10",
                       "ranksep": "0.1", "height": "0.2", "fontname": "monospace"}


def make_dot(var: Any, params: dict[str, Any] | None = None, show_attrs: bool = False,
             show_saved: bool = False, max_attr_chars: int = 50) -> graphviz.Digraph:
    """The autograd graph behind ``var`` (a tensor or a tuple of tensors) as torchviz draws
    it: a ``graphviz.Digraph`` (``.source``, ``.render(...)``, shown in notebooks).

    ``params`` maps names to tensors (``dict(model.named_parameters())``); those names label
    the tensors' boxes. ``show_attrs`` lists each node's attributes (and saved tensors) in
    its box, cut at ``max_attr_chars``; ``show_saved`` draws what built-in nodes saved.
    """
    import graphviz

    from ..tensor import Tensor
    from ..tracing.graph import GraphBuilder

    outputs = list(var) if isinstance(var, (tuple, list)) else [var]
    if not outputs or not all(isinstance(tensor, Tensor) for tensor in outputs):
        raise TypeError(f"make_dot: expected a Tensor or a tuple of Tensors, got "
                        f"{type(var).__name__}. Hint: pass the output, e.g. make_dot(loss).")
    if params is not None:
        bad = [name for name, value in params.items() if not isinstance(value, Tensor)]
        if bad:
            raise TypeError(f"make_dot: params must map names to Tensors; {bad[0]!r} is "
                            f"{type(params[bad[0]]).__name__}. Hint: "
                            "params=dict(model.named_parameters()).")
    trace = Trace(metadata={"source": "from_tensor", "values": False})
    builder = GraphBuilder(trace)
    # Outputs and their view bases, so a base's box joins the node that made it.
    drawn = outputs + [tensor._base for tensor in outputs if tensor._base is not None]
    known = {(tensor.grad_fn, tensor._output_nr): tensor
             for tensor in drawn if tensor.grad_fn is not None}
    builder.adopt([tensor.grad_fn for tensor in outputs if tensor.grad_fn is not None], known)
    output_ids = [builder.tensor_id(tensor) for tensor in outputs]
    from ..tracing.graph import name_unnamed
    from ..tracing.names import user_frame

    name_unnamed(trace, builder, user_frame(1))
    names = {}
    for name, tensor in (params or {}).items():
        tensor_id = builder.known_tensor(tensor)
        if tensor_id is not None:
            names[tensor_id] = name
    dot = graphviz.Digraph(node_attr=dict(TORCHVIZ_NODE_ATTRS),
                           graph_attr={"size": "12,12"})
    _Drawer(trace, dot, names, show_attrs, show_saved, max(max_attr_chars, 3)).draw(output_ids)
    _resize(dot)
    return dot


class _Drawer:
    """Emits torchviz's statements in torchviz's order (its recursion, made iterative)."""

    def __init__(self, trace: Trace, dot, names: dict[int, str], show_attrs: bool,
                 show_saved: bool, max_attr_chars: int) -> None:
        self.trace = trace
        self.dot = dot
        self.names = names
        self.show_attrs = show_attrs
        self.show_saved = show_saved
        self.max_attr_chars = max_attr_chars
        self.seen_nodes: set[int] = set()
        self.seen_tensors: set[int] = set()

    def draw(self, output_ids: list[int]) -> None:
        for tensor_id in output_ids:
            self._base_tensor(tensor_id, OUTPUT_FILL)

    def _base_tensor(self, tensor_id: int, fill: str) -> None:
        """An output (or a view's base): its box, its graph, its base. Iterative over the
        chain of bases."""
        pending = [(tensor_id, fill, None)]
        while pending:
            tensor_id, fill, view_id = pending.pop()
            if tensor_id not in self.seen_tensors:
                self.seen_tensors.add(tensor_id)
                record = self.trace.tensors[tensor_id]
                self.dot.node(self._tensor_key(tensor_id), self._tensor_label(tensor_id),
                              fillcolor=fill)
                if record.grad_fn is not None and record.grad_fn in self.trace.nodes:
                    self._nodes_from(record.grad_fn)
                    self.dot.edge(f"n{record.grad_fn}", self._tensor_key(tensor_id))
                if record.base is not None and record.base in self.trace.tensors:
                    pending.append((record.base, BASE_FILL, tensor_id))
            if view_id is not None:
                self.dot.edge(self._tensor_key(tensor_id), self._tensor_key(view_id),
                              style="dotted")

    def _nodes_from(self, root: int) -> None:
        """torchviz's add_nodes: before a node's children, its saved tensors (built-in,
        with show_saved), its leaf and its own box; each child's edge then the child's whole
        subgraph; after them, a custom Function's saved tensors."""
        if root in self.seen_nodes:
            return
        self.seen_nodes.add(root)
        stack: list[tuple[NodeRecord, int]] = [(self._enter(root), 0)]
        while stack:
            node, position = stack[-1]
            children = [next_id for next_id, _ in node.next
                        if next_id is not None and next_id in self.trace.nodes]
            if position < len(children):
                stack[-1] = (node, position + 1)
                child = children[position]
                self.dot.edge(f"n{child}", f"n{node.id}")
                if child not in self.seen_nodes:
                    self.seen_nodes.add(child)
                    stack.append((self._enter(child), 0))
                continue
            stack.pop()
            if node.kind == "function":
                for saved in node.saved:
                    key = self._saved_key(node, saved)
                    self.dot.edge(key, f"n{node.id}", dir="none")
                    self.dot.node(key, self._label(saved.tensor, None), fillcolor=SAVED_FILL)

    def _enter(self, node_id: int) -> NodeRecord:
        node = self.trace.nodes[node_id]
        if self.show_saved and node.kind != "function":
            for saved in node.saved:
                key = self._saved_key(node, saved)
                self.dot.edge(f"n{node.id}", key, dir="none")
                self.dot.node(key, self._label(saved.tensor, saved.slot), fillcolor=SAVED_FILL)
        if node.kind == "accumulate" and node.leaf is not None:
            self.seen_tensors.add(node.leaf)
            self.dot.node(self._tensor_key(node.leaf), self._tensor_label(node.leaf),
                          fillcolor=LEAF_FILL)
            self.dot.edge(self._tensor_key(node.leaf), f"n{node.id}")
        self.dot.node(f"n{node.id}", self._node_label(node))
        return node

    # -- labels ----------------------------------------------------------------------------
    def _tensor_key(self, tensor_id: int) -> str:
        return f"t{tensor_id}"

    def _saved_key(self, node: NodeRecord, saved) -> str:
        return f"s{node.id}_{node.saved.index(saved)}"

    def _tensor_label(self, tensor_id: int) -> str:
        return self._label(tensor_id, None)

    def _label(self, tensor_id: int, name: str | None) -> str:
        """torchviz's ``'%s\\n %s' % (name, size)``: the given name, else the params name,
        else the name tracegrad found (torchviz: empty)."""
        record = self.trace.tensors.get(tensor_id)
        if not name:
            name = self.names.get(tensor_id) or (record.name if record is not None else "")
        shape = record.shape if record is not None else ()
        return f"{name or ''}\n ({', '.join(str(size) for size in shape)})"

    def _node_label(self, node: NodeRecord) -> str:
        if not self.show_attrs:
            return node.name
        attrs: dict[str, str] = {}
        for saved in node.saved:  # torchviz lists saved tensors among the attributes
            if node.kind != "function":
                attrs[saved.slot or "?"] = "[saved tensor]"
        for key, value in node.attrs.items():
            attrs[key] = str(value)
        if not attrs:
            return node.name
        attrs = dict(sorted(attrs.items()))  # torchviz walks dir(fn): alphabetical
        key_width = max(len(key) for key in attrs)
        value_width = min(max(len(value) for value in attrs.values()), self.max_attr_chars)
        rule = "-" * max(key_width + value_width + 2, len(node.name))

        def cut(text: str) -> str:
            return text[:value_width - 3] + "..." if len(text) > value_width else text

        rows = "\n".join(f"{key:<{key_width}}: {cut(value):>{value_width}}"
                         for key, value in attrs.items())
        return f"{node.name}\n{rule}\n{rows}"


def _resize(dot, size_per_element: float = 0.15, min_size: float = 12) -> None:
    """torchviz's resize_graph: the drawing grows with the number of statements."""
    size = max(min_size, len(dot.body) * size_per_element)
    dot.graph_attr.update(size=f"{size},{size}")
