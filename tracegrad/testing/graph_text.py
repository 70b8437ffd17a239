"""The canonical text form of an autograd graph: deterministic, readable, diffable.

An indented tree from the output node down ``next_functions``::

    SumBackward0
      SwishImplementationBackward  saves: x f32[8]
        AccumulateGrad  x f32[8]

Each line is a node name, then what it saves (``name dtype[shape]``); a leaf's
``AccumulateGrad`` names its tensor. A subgraph reached a second time is printed once,
tagged ``#1`` (numbered in order of appearance), and referenced afterwards as
``MulBackward0 -> (see #1)`` so a DAG does not explode into a tree. Unnamed tensors are
called ``t1``, ``t2``, ... in order of first appearance in the text -- never by an id that
depends on what else the program did -- so the text is the same on every run.

Reads only the :class:`tracegrad.tracing.model.Trace` data model; a live tensor is first
turned into a structure-only trace with ``tracegrad.tracing.from_tensor``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # keep importing this module cheap: the pytest plugin loads it at startup
    from ..tracing.model import NodeRecord, Trace

__all__ = ["graph_text", "named_root", "normalize_text", "render_text", "short_type",
           "trace_and_roots"]


def short_type(dtype: str, shape: Sequence[int]) -> str:
    """``f32[3,4]``: see :func:`tracegrad.tracing.text.short_type` (imported on first use,
    so loading this module loads no tracer).

    >>> short_type("float32", (3, 4))
    'f32[3,4]'
    """
    from ..tracing.text import short_type as text_short_type

    return text_short_type(dtype, shape)


def trace_and_roots(subject: Any) -> tuple[Trace, list[int]]:
    """The trace to read and the ids of the nodes to start from.

    ``subject`` is anything :func:`tracegrad.tracing.query.as_trace` accepts: a live tensor
    -- tracegrad's or torch's -- or a nest of them becomes a structure-only trace (tensors
    named after the caller's variables); a Trace, or the recorder of
    ``with tracegrad.record() as tr``, is used as it is. The text starts from
    :meth:`Trace.root_nodes <tracegrad.tracing.model.Trace.root_nodes>`.
    """
    from ..tracing.query import as_trace

    trace = as_trace(subject)
    if trace.roots and not trace.nodes:
        record = trace.tensors[trace.roots[0]]
        if not record.requires_grad:
            label = f"'{record.name}' " if record.name else ""
            raise ValueError(
                f"tensor {label}({record.dtype} {list(record.shape)}) has no autograd graph: "
                "it does not require grad and has no grad_fn. Hint: was it computed under "
                "no_grad() or detach(), or from inputs without requires_grad=True?")
    return trace, trace.root_nodes()


class _Namer:
    """Tensor labels: the trace's name, else ``t1``, ``t2``... by first appearance."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.assigned: dict[int, str] = {}
        self.taken = {record.name for record in trace.tensors.values() if record.name}
        from ..tracing.text import short_type as text_short_type  # once per text, not per line

        self.short_type = text_short_type

    def label(self, tensor_id: int | None) -> str:
        if tensor_id is None:
            return "?"
        record = self.trace.tensors.get(tensor_id)
        if record is not None and record.name:
            return record.name
        if tensor_id not in self.assigned:
            number = len(self.assigned) + 1
            while f"t{number}" in self.taken:
                number += 1
            self.assigned[tensor_id] = f"t{number}"
            self.taken.add(f"t{number}")
        return self.assigned[tensor_id]

    def describe(self, tensor_id: int | None) -> str:
        record = self.trace.tensors.get(tensor_id) if tensor_id is not None else None
        if record is None:
            return self.label(tensor_id)
        return f"{self.label(tensor_id)} {self.short_type(record.dtype, record.shape)}"


def _node_line(node: NodeRecord, namer: _Namer, saved: bool) -> str:
    if node.kind == "accumulate" or node.name == "AccumulateGrad":
        return f"{node.name}  {namer.describe(node.leaf)}" if node.leaf is not None else node.name
    if saved and node.saved:
        return f"{node.name}  saves: " + ", ".join(namer.describe(s.tensor) for s in node.saved)
    return node.name


def _children(trace: Trace, node: NodeRecord) -> list[int]:
    return [next_id for next_id, _ in node.next if next_id is not None and next_id in trace.nodes]


def _shared_nodes(trace: Trace, roots: list[int]) -> set[int]:
    """Non-leaf nodes reached more than once from the roots: printed once, then referenced."""
    reached: dict[int, int] = {}
    stack = list(reversed(roots))
    for root in roots:
        reached[root] = reached.get(root, 0)
    seen: set[int] = set()
    while stack:
        node_id = stack.pop()
        if node_id in seen:
            continue
        seen.add(node_id)
        for child in _children(trace, trace.nodes[node_id]):
            reached[child] = reached.get(child, 0) + 1
            stack.append(child)
    return {node_id for node_id, count in reached.items()
            if count > 1 and _children(trace, trace.nodes[node_id])}


def graph_text(tensor_or_trace: Any, *, saved: bool = True, indent: int = 2,
               root: str | None = None) -> str:
    """The canonical text of the graph behind a tensor (or of a whole trace).

    >>> import tracegrad as torch
    >>> x = torch.ones(3, requires_grad=True); x.name = "x"
    >>> print(graph_text((x * 2).sum()))
    SumBackward0
      MulBackward0
        AccumulateGrad  x f32[3]

    ``saved=False`` leaves out the ``saves:`` parts. Several roots (a trace of a whole
    program) are printed one after another, sharing one numbering of references;
    ``root="loss"`` prints only the graph of the tensor named ``loss``.
    """
    trace, roots = trace_and_roots(tensor_or_trace)
    if root is not None:
        roots = named_root(trace, root)
    return render_text(trace, roots, saved=saved, indent=indent)


def named_root(trace: Trace, name: str) -> list[int]:
    """The node of the (last recorded) tensor called ``name``: where its graph starts."""
    matches = [record for record in trace.tensors.values() if record.name == name]
    nodes = [record.grad_fn for record in sorted(matches, key=lambda r: r.id)
             if record.grad_fn is not None]
    if not nodes:
        names = sorted({record.name for record in trace.tensors.values()
                        if record.name and record.grad_fn is not None})
        raise ValueError(
            f"no tensor named '{name}' with a grad_fn in the trace; tensors with a graph: "
            f"{names}. Hint: name it with tracegrad.name(tensor, '{name}') before it is used.")
    return [nodes[-1]]


def render_text(trace: Trace, roots: list[int], *, saved: bool = True, indent: int = 2,
                namer: _Namer | None = None) -> str:
    """The text form of ``trace`` starting from the node ids ``roots``.

    Pass a fresh ``_Namer`` as ``namer`` to learn afterwards which ``t<N>`` label each
    unnamed tensor got.
    """
    namer = namer if namer is not None else _Namer(trace)
    shared = _shared_nodes(trace, roots)
    tags: dict[int, int] = {}
    lines: list[str] = []
    # Iterative depth-first walk (a graph 100,000 nodes deep must not hit the recursion
    # limit); children are pushed in reverse so they print in next_functions order.
    stack: list[tuple[int, int]] = [(root, 0) for root in reversed(roots)]
    while stack:
        node_id, depth = stack.pop()
        node = trace.nodes[node_id]
        pad = " " * (indent * depth)
        if node_id in tags:
            lines.append(f"{pad}{node.name} -> (see #{tags[node_id]})")
            continue
        line = _node_line(node, namer, saved)
        if node_id in shared:
            tags[node_id] = len(tags) + 1
            line += f"  #{tags[node_id]}"
        lines.append(pad + line)
        for child in reversed(_children(trace, node)):
            stack.append((child, depth + 1))
    return "\n".join(lines)


def normalize_text(text: str) -> str:
    """Dedent, strip trailing spaces and blank edge lines: how expected text is compared.

    >>> normalize_text('''
    ...     SumBackward0
    ...       AccumulateGrad  x f32[3]
    ... ''')
    'SumBackward0\\n  AccumulateGrad  x f32[3]'
    """
    import textwrap

    lines = [line.rstrip() for line in textwrap.dedent(text.expandtabs(4)).splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)
