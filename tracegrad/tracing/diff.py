"""Where two runs part: two traces of one program lined up by structure, never by ids.

Nodes are paired in forward order by their names (``difflib`` finds the longest runs that
agree), AccumulateGrad nodes through the edges of paired nodes, passes by their order
among the program's own passes, steps through their nodes. Then the first node whose
forward value differs beyond the tolerance is reported (in forward order), and the first
backward step whose gradient does (in step order), with both values at the worst element,
both lines and the ops above it. Nodes in one trace and not the other are reported as a
unified diff of the graphs' text.

>>> import tracegrad
>>> def run(scale):
...     w = tracegrad.ones(3, requires_grad=True)
...     with tracegrad.record() as tr:
...         (w * scale).sum().backward()
...     return tr
>>> diff_traces(run(2.0), run(2.0)).same
True
>>> diff_traces(run(2.0), run(2.5)).forward.name
'MulBackward0'
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import numpy as np

from .model import NodeRecord, Site, Trace, Value
from .text import describe_node

# torch.testing.assert_close's defaults, by dtype: (rtol, atol)
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),
               "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}
_MAX_DIFF_LINES = 200


@dataclass
class Difference:
    """One value that differs: where (both nodes, both lines), what (an output, a gradient
    on an edge, a leaf's .grad) and how much (the worst element's two values)."""

    phase: str  # "forward" or "backward"
    what: str  # "output 0", "gradient to input 1 (AccumulateGrad of 'w1')", ...
    name: str  # the node's name
    node_a: int
    node_b: int
    site_a: Site | None = None
    site_b: Site | None = None
    index: tuple[int, ...] = ()  # the worst element
    value_a: float | None = None
    value_b: float | None = None
    shape_a: tuple[int, ...] | None = None  # set when the shapes differ
    shape_b: tuple[int, ...] | None = None
    above: list[str] = field(default_factory=list)  # the ops above it, "Name at file:line"
    pass_index: int | None = None
    step_index: int | None = None
    statistics_only: bool = False  # an array was not kept: compared on min, max, norm

    @property
    def abs_diff(self) -> float | None:
        if self.value_a is None or self.value_b is None:
            return None
        return abs(self.value_a - self.value_b)


@dataclass
class TraceDiff:
    """What ``diff_traces`` found; ``str()`` gives it in words (report.format_diff)."""

    names: tuple[str, str]
    rtol: float | None
    atol: float | None
    forward: Difference | None = None
    backward: Difference | None = None
    structure: str = ""  # unified diff of the graphs' text ("" when they match)
    matched: int = 0  # nodes paired
    only_a: int = 0  # nodes in a alone
    only_b: int = 0
    passes: tuple[int, int] = (0, 0)  # the program's own passes in each

    @property
    def same(self) -> bool:
        return self.forward is None and self.backward is None and not self.structure

    @property
    def first(self) -> Difference | None:
        """Where the runs part: the first forward difference, else the first backward one."""
        return self.forward or self.backward

    def __str__(self) -> str:
        from .report import format_diff

        return format_diff(self)


def diff_traces(a: Trace, b: Trace, rtol: float | None = None, atol: float | None = None,
                names: tuple[str, str] = ("a", "b")) -> TraceDiff:
    """Line up traces ``a`` and ``b`` of the same program and find where they part.

    ``rtol``/``atol`` as ``torch.testing.assert_close`` (by dtype when not given): a value
    differs where ``|a - b| > atol + rtol * |b|``.
    """
    result = TraceDiff(names=(str(names[0]), str(names[1])), rtol=rtol, atol=atol)
    pairs = align_nodes(a, b)
    result.matched = len(pairs)
    result.only_a, result.only_b = len(a.nodes) - len(pairs), len(b.nodes) - len(pairs)
    if result.only_a or result.only_b or _edges_differ(a, b, pairs):
        result.structure = graph_diff_text(a, b, result.names)
    tolerance = _Tolerance(rtol, atol)
    result.forward = _first_forward(a, b, pairs, tolerance)
    passes_a, passes_b = a.user_passes(), b.user_passes()
    result.passes = (len(passes_a), len(passes_b))
    for pass_a, pass_b in zip(passes_a, passes_b):
        result.backward = _first_backward(a, b, pass_a, pass_b, pairs, tolerance)
        if result.backward is not None:
            break
    return result


# -- alignment ------------------------------------------------------------------------------
def align_nodes(a: Trace, b: Trace) -> dict[int, int]:
    """node id in ``a`` -> node id in ``b``, paired by structure.

    Nodes other than AccumulateGrad are paired in forward (recording) order where their
    names agree; an AccumulateGrad through the same edge of a paired node.
    """
    ops_a = [node for node in a.iter_nodes() if node.kind != "accumulate"]
    ops_b = [node for node in b.iter_nodes() if node.kind != "accumulate"]
    matcher = difflib.SequenceMatcher(None, [node.name for node in ops_a],
                                      [node.name for node in ops_b], autojunk=False)
    pairs: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            pairs[ops_a[block.a + offset].id] = ops_b[block.b + offset].id
    taken = set(pairs.values())
    for node_a, node_b in list(pairs.items()):
        edges_a, edges_b = a.nodes[node_a].next, b.nodes[node_b].next
        for (next_a, _), (next_b, _) in zip(edges_a, edges_b):
            if next_a is None or next_b is None or next_a in pairs or next_b in taken:
                continue
            if a.nodes[next_a].kind == "accumulate" and b.nodes[next_b].kind == "accumulate":
                pairs[next_a] = next_b
                taken.add(next_b)
    return pairs


def _edges_differ(a: Trace, b: Trace, pairs: dict[int, int]) -> bool:
    for node_a, node_b in pairs.items():
        edges_a = [pairs.get(next_id) if next_id is not None else None
                   for next_id, _ in a.nodes[node_a].next]
        edges_b = [next_id for next_id, _ in b.nodes[node_b].next]
        if edges_a != edges_b:
            return True
    return False


def graph_diff_text(a: Trace, b: Trace, names: tuple[str, str] = ("a", "b")) -> str:
    """A unified diff of the two graphs' text (``tracegrad.testing.graph_text``)."""
    from ..testing.graph_text import graph_text

    lines = list(difflib.unified_diff(graph_text(a, saved=False).splitlines(),
                                      graph_text(b, saved=False).splitlines(),
                                      fromfile=names[0], tofile=names[1], lineterm="", n=2))
    if len(lines) > _MAX_DIFF_LINES:
        lines = lines[:_MAX_DIFF_LINES] + [f"... ({len(lines) - _MAX_DIFF_LINES} more lines)"]
    return "\n".join(lines)


# -- comparing values -----------------------------------------------------------------------
class _Tolerance:
    def __init__(self, rtol: float | None, atol: float | None) -> None:
        self.rtol, self.atol = rtol, atol

    def of(self, dtype: str) -> tuple[float, float]:
        rtol, atol = _TOLERANCES.get(dtype, (0.0, 0.0))
        return (self.rtol if self.rtol is not None else rtol,
                self.atol if self.atol is not None else atol)

    def compare(self, value_a: Value | None, value_b: Value | None):
        """None when equal within tolerance (or not comparable), else (index, a, b, shapes,
        statistics_only)."""
        if value_a is None or value_b is None:
            return None
        if tuple(value_a.shape) != tuple(value_b.shape):
            return (), None, None, (tuple(value_a.shape), tuple(value_b.shape)), False
        rtol, atol = self.of(value_a.dtype)
        if value_a.array is not None and value_b.array is not None:
            return _compare_arrays(value_a.array, value_b.array, rtol, atol)
        return _compare_stats(value_a, value_b, rtol, atol)


def _compare_arrays(array_a: np.ndarray, array_b: np.ndarray, rtol: float, atol: float):
    if array_a.dtype.kind not in "fc" and array_b.dtype.kind not in "fc":
        unequal = np.asarray(array_a != array_b)
        if not np.any(unequal):
            return None
        flat = int(np.argmax(unequal))
    else:
        first = np.asarray(array_a, dtype=np.float64)
        second = np.asarray(array_b, dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            excess = np.abs(first - second) - (atol + rtol * np.abs(second))
        both_nan = np.isnan(first) & np.isnan(second)
        same_inf = np.isinf(first) & (first == second)
        excess = np.where(both_nan | same_inf, -1.0, np.nan_to_num(excess, nan=np.inf))
        if not np.any(excess > 0):
            return None
        flat = int(np.argmax(excess))
    index = tuple(int(item) for item in np.unravel_index(flat, array_a.shape))
    return index, float(array_a[index]), float(array_b[index]), None, False


def _compare_stats(value_a: Value, value_b: Value, rtol: float, atol: float):
    for name in ("min", "max", "norm"):
        first, second = getattr(value_a.stats, name), getattr(value_b.stats, name)
        if first is None or second is None:
            continue
        if abs(first - second) > atol + rtol * abs(second):
            return (), float(first), float(second), None, True
    return None


def _difference(phase: str, what: str, node_a: NodeRecord, node_b: NodeRecord,
                found, above: list[str], **where) -> Difference:
    index, first, second, shapes, statistics_only = found
    return Difference(phase=phase, what=what, name=node_a.name, node_a=node_a.id,
                      node_b=node_b.id, site_a=node_a.site, site_b=node_b.site, index=index,
                      value_a=first, value_b=second,
                      shape_a=shapes[0] if shapes else None,
                      shape_b=shapes[1] if shapes else None, above=above,
                      statistics_only=statistics_only, **where)


# -- forward --------------------------------------------------------------------------------
def _first_forward(a: Trace, b: Trace, pairs: dict[int, int], tolerance: _Tolerance):
    for node_a in a.iter_nodes():
        node_b_id = pairs.get(node_a.id)
        if node_b_id is None or node_a.kind == "accumulate":
            continue
        node_b = b.nodes[node_b_id]
        above = [describe_node(a, a.tensors[tensor].grad_fn)
                 for tensor in node_a.inputs if tensor is not None and tensor in a.tensors
                 and a.tensors[tensor].grad_fn is not None]
        for position, (input_a, input_b) in enumerate(zip(node_a.inputs, node_b.inputs)):
            record_a = a.tensors.get(input_a) if input_a is not None else None
            record_b = b.tensors.get(input_b) if input_b is not None else None
            if record_a is None or record_b is None or record_a.grad_fn is not None:
                continue  # an op's output was compared at its own node
            found = tolerance.compare(record_a.value, record_b.value)
            if found is not None:
                return _difference("forward", f"input {position} ('{record_a.label}', a "
                                   "leaf)", node_a, node_b, found, above)
        for position, (output_a, output_b) in enumerate(zip(node_a.outputs, node_b.outputs)):
            record_a, record_b = a.tensors.get(output_a), b.tensors.get(output_b)
            if record_a is None or record_b is None:
                continue
            found = tolerance.compare(record_a.value, record_b.value)
            if found is not None:
                return _difference("forward", f"output {position} ('{record_a.label}')",
                                   node_a, node_b, found, above)
    return None


# -- backward -------------------------------------------------------------------------------
def _first_backward(a: Trace, b: Trace, pass_a, pass_b, pairs: dict[int, int],
                    tolerance: _Tolerance):
    steps_b = {step.node: step for step in pass_b.steps}
    fed_by = feeders(a)
    for step_a in pass_a.steps:
        node_b_id = pairs.get(step_a.node)
        step_b = steps_b.get(node_b_id) if node_b_id is not None else None
        if step_b is None:
            continue
        node_a, node_b = a.nodes[step_a.node], b.nodes[node_b_id]
        above = [describe_node(a, feeder) for feeder in fed_by.get(node_a.id, ())]
        where = {"pass_index": pass_a.index, "step_index": step_a.index}
        for position, (grad_a, grad_b) in enumerate(zip(step_a.grads_in, step_b.grads_in)):
            found = tolerance.compare(grad_a, grad_b)
            if found is not None:  # from a step not paired: this is where it shows
                return _difference("backward", f"gradient into output {position}", node_a,
                                   node_b, found, above, **where)
        for position, (grad_a, grad_b) in enumerate(zip(step_a.grads_out, step_b.grads_out)):
            found = tolerance.compare(grad_a, grad_b)
            if found is not None:
                target = node_a.next[position][0] if position < len(node_a.next) else None
                return _difference("backward", f"gradient to input {position} ("
                                   f"{describe_node(a, target)})", node_a, node_b, found,
                                   above, **where)
        found = tolerance.compare(step_a.grad_after, step_b.grad_after)
        if found is not None:
            label = a.tensors[step_a.accumulated].label \
                if step_a.accumulated in a.tensors else "the leaf"
            return _difference("backward", f".grad of '{label}'", node_a, node_b, found,
                               above, **where)
    return None


def feeders(trace: Trace) -> dict[int, list[int]]:
    """node id -> the nodes whose gradient flows into it (the ops above it in backward),
    in edge order; the diff TUI lists them beside the step where the runs part."""
    found: dict[int, list[int]] = {}
    for node_id, next_id, _ in trace.edges():
        found.setdefault(next_id, []).append(node_id)
    return found
