"""Why a tensor has no gradient (or a zero one): the answer read from a Trace.

The path from the loss to the tensor is either cut at a named place -- ``detach()``,
``.data``, an op under ``no_grad``, an integer dtype, ``requires_grad=False``, a custom
Function returning None, a ``.item()`` round trip -- or backward never reached it (no
backward at all, the wrong loss, a failed pass, ``zero_grad()`` afterwards). When the
gradient is there but zero, the node that zeroed it is named. Both engines' traces work:
the cuts come from ``Trace.flows`` (see flows.py), the rest from the graph and the steps.

>>> import tracegrad
>>> w = tracegrad.ones(3, requires_grad=True)
>>> with tracegrad.record() as tr:
...     h = w.detach()
...     loss = (h * w).sum() + (h * 2).sum()
...     loss.backward()
>>> why = tr.why_no_grad(w)
>>> why.cause, why.has_grad
('has_grad', True)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from .model import BackwardPass, Site, Trace, Value

# Flow kinds that cut a path (grad_reset is about .grad, not the path).
_CUT_FLOWS = frozenset({"detach", "data", "detach_", "no_grad", "untracked", "integer",
                        "item", "tolist", "numpy"})


@dataclass
class WhyNoGrad:
    """The answer for one tensor; ``str()`` gives it in words (report.format_why).

    ``cause`` is a key of ``report.WHY_CAUSES``: "has_grad" when nothing is wrong, "zero"
    when the gradient is all zeros (``node`` made it so, ``fraction`` of the elements
    reaching it were zeroed there), else what cut the path or kept backward away.
    """

    tensor: int | None  # None: a live tensor the trace never saw (requires_grad=False)
    label: str
    cause: str
    has_grad: bool = False
    site: Site | None = None  # the line that cut the path, zeroed it, or reset .grad
    other_site: Site | None = None  # the second line: where data left, backward ran, ...
    node: int | None = None  # the node named (zeroing, returning None)
    op: str = ""  # its name, or the op run under no_grad
    fraction: float | None = None  # "zero": share of the incoming elements zeroed there
    path: list[str] = field(default_factory=list)  # labels from the tensor to the loss
    detail: str = ""  # more words: an error, the loss that was used, ...
    pass_index: int | None = None

    def __str__(self) -> str:
        from .report import format_why

        return format_why(self)


# -- finding the tensor ---------------------------------------------------------------------
def resolve_tensor(trace: Trace, tensor) -> int:
    """The trace's id for ``tensor``: a name (``"w1"``, ``"fc.weight"``), an id, or a live
    tensor recorded in this trace (tracegrad's or torch's)."""
    if isinstance(tensor, str):
        return _by_name(trace, tensor)
    if isinstance(tensor, (int, np.integer)) and not isinstance(tensor, bool):
        if int(tensor) not in trace.tensors:
            raise ValueError(f"why_no_grad: this trace has no tensor with id {tensor}. "
                             f"Hint: pass the tensor itself or its name ({_leaf_names(trace)}).")
        return int(tensor)
    builder = getattr(trace, "_builder", None)
    if builder is not None:
        known = builder.known_tensor(tensor)
        if known is None:  # a torch tensor: the recorder knows its adapter
            for tensor_id, reference in builder._tensor_ids.values():
                adapter = reference()
                if getattr(adapter, "subject", None) is tensor:
                    known = tensor_id
                    break
        if known is not None:
            return known
    for reference, tensor_id in getattr(trace, "_torch_tensors", ()):
        if reference() is tensor:  # a torch tensor, after the recording ended
            return tensor_id
    name = getattr(tensor, "name", None)
    if isinstance(name, str):
        return _by_name(trace, name)
    raise ValueError(
        f"why_no_grad: {type(tensor).__name__} is not a tensor this trace recorded. Hint: "
        f"pass its name ({_leaf_names(trace)}), or record the program that made it.")


def _live_label(tensor) -> str:
    name = getattr(tensor, "name", None)
    return name if isinstance(name, str) else "the tensor"


def _by_name(trace: Trace, name: str) -> int:
    named = [record for record in trace.tensors.values() if record.name == name]
    if not named:
        raise ValueError(f"why_no_grad: no tensor named '{name}' in this trace. Hint: the "
                         f"leaves that require grad are {_leaf_names(trace)}.")
    leaves = [record for record in named if record.is_leaf and record.requires_grad]
    return max(record.id for record in (leaves or named))


def _leaf_names(trace: Trace) -> str:
    names = sorted({record.name for record in trace.tensors.values()
                    if record.is_leaf and record.requires_grad and record.name})
    return ", ".join(names[:12]) or "none are named"


def _path_labels(trace: Trace, tensor_ids: list[int]) -> list[str]:
    """The named tensors along a path (unnamed intermediates left out), ends kept."""
    labels = [label_of(trace, tensor_id) for index, tensor_id in enumerate(tensor_ids)
              if index in (0, len(tensor_ids) - 1) or trace.tensors[tensor_id].name]
    return [label for index, label in enumerate(labels)
            if index == 0 or label != labels[index - 1]]


def label_of(trace: Trace, tensor_id: int) -> str:
    record = trace.tensors.get(tensor_id)
    return record.label if record is not None else f"t{tensor_id}"


# -- the answer -----------------------------------------------------------------------------
def why_no_grad(trace: Trace, tensor, pass_index: int | None = None) -> WhyNoGrad:
    """Why ``tensor`` has no gradient, or a zero one, after the last pass the program ran
    (or pass ``pass_index``)."""
    try:
        tensor_id = resolve_tensor(trace, tensor)
    except ValueError:
        if getattr(tensor, "requires_grad", True) is False:  # live, never in the graph
            return WhyNoGrad(tensor=None, label=_live_label(tensor),
                             cause="requires_grad_false")
        raise
    record = trace.tensors[tensor_id]

    def answer(cause: str, **fields) -> WhyNoGrad:
        return WhyNoGrad(tensor=tensor_id, label=record.label, cause=cause, **fields)

    if record.dtype not in ("float16", "bfloat16", "float32", "float64"):
        return answer("integer_dtype", site=record.site, detail=record.dtype)
    for flow in trace.flows:
        if flow.kind == "detach_" and tensor_id in flow.sources:
            return answer("detach_", site=flow.site)
    if not record.requires_grad:
        return answer("requires_grad_false", site=record.site)
    if pass_index is None:
        passes = trace.user_passes()
        if not passes:
            return answer("never_called", site=record.site)
        backward_pass = passes[-1]
    else:
        backward_pass = trace.passes[pass_index]
    # The live tensor's .grad now tells what happened after the last pass (not recorded
    # when it is zeroed in place); for an earlier pass it tells nothing.
    live = tensor if backward_pass is trace.passes[-1] else None
    found = _after_pass(trace, backward_pass, tensor_id, answer, live)
    found.pass_index = backward_pass.index
    return found


def _zeroed_now(tensor) -> bool:
    """Whether ``tensor`` is a live tensor whose ``.grad`` holds only zeros now."""
    grad = getattr(tensor, "grad", None) if not isinstance(tensor, (int, str)) else None
    if grad is None:
        return False
    array = getattr(grad, "_array", None)
    if array is not None:  # tracegrad's: read the array, so a recording sees no op
        return not bool(array.any())
    return not bool(grad.detach().ne(0).any())  # a torch tensor (the bridge's traces)


def _after_pass(trace: Trace, backward_pass: BackwardPass, tensor_id: int, answer,
                live=None):
    accumulated = [step for step in backward_pass.steps if step.accumulated == tensor_id]
    if accumulated:
        for flow in trace.flows:
            if flow.kind == "grad_reset" and tensor_id in flow.sources \
                    and flow.pass_index is not None and flow.pass_index >= backward_pass.index:
                return answer("grad_reset", site=flow.site, other_site=backward_pass.site)
        value = accumulated[-1].grad_after
        if value is not None and is_zero(value):
            return _zero(trace, backward_pass, tensor_id, answer)
        if live is not None and _zeroed_now(live):
            # zero_grad(set_to_none=False) or .grad.zero_() after backward
            return answer("grad_zeroed", other_site=backward_pass.site)
        return answer("has_grad", has_grad=True, other_site=backward_pass.site)
    if backward_pass.summarized:
        return answer("summarized", other_site=backward_pass.site)
    accumulate = [node.id for node in trace.nodes.values()
                  if node.kind == "accumulate" and node.leaf == tensor_id]
    roots = [trace.tensors[root].grad_fn for root in backward_pass.roots
             if root in trace.tensors and trace.tensors[root].grad_fn is not None]
    reached = reachable_nodes(trace, roots)
    if accumulate and accumulate[0] in reached:
        return _connected_not_reached(trace, backward_pass, tensor_id, accumulate[0],
                                      answer)
    return _disconnected(trace, backward_pass, tensor_id, answer)


def _connected_not_reached(trace: Trace, backward_pass: BackwardPass, tensor_id: int,
                           accumulate: int, answer):
    """The loss's graph reaches the tensor, but the pass did not accumulate into it."""
    if backward_pass.kind == "grad":
        return answer("grad_pass", other_site=backward_pass.site)
    if backward_pass.error is not None:
        freed = any(violation.kind == "freed_graph"
                    and violation.pass_index == backward_pass.index
                    for violation in trace.violations) or "freed" in backward_pass.error
        return answer("retain_graph" if freed else "backward_failed",
                      other_site=backward_pass.site, detail=_first_sentence(backward_pass.error))
    toward = _nodes_toward(trace, accumulate)
    for step in backward_pass.steps:
        node = trace.nodes.get(step.node)
        if node is None or step.node not in toward:
            continue
        for index, (next_id, _) in enumerate(node.next):
            if next_id is None or (next_id not in toward and next_id != accumulate):
                continue
            grad = step.grads_out[index] if index < len(step.grads_out) else None
            if grad is None and step.error is None and backward_pass.values_captured:
                cause = "function_none" if node.kind == "function" else "none_gradient"
                return answer(cause, site=node.site, node=node.id, op=node.name,
                              other_site=backward_pass.site, detail=str(index))
    return answer("not_reached", other_site=backward_pass.site)


def _disconnected(trace: Trace, backward_pass: BackwardPass, tensor_id: int, answer):
    """The loss's graph does not reach the tensor: find the cut on the way, or say the loss
    does not depend on it at all."""
    edges = _forward_edges(trace)
    roots = set(backward_pass.roots)
    path = _cheapest_path(edges, tensor_id, roots)
    if path is not None:
        labels = _path_labels(trace, [tensor_id] + [step[0] for step in path])
        for _, kind, where in path:
            if kind == "graph":
                continue
            if kind == "integer":
                node = trace.nodes[where]
                return answer("integer", site=node.site, node=node.id, op=node.name,
                              other_site=backward_pass.site, path=labels)
            flow = trace.flows[where]
            return answer(flow.kind, site=flow.site, other_site=flow.other_site or
                          backward_pass.site, op=flow.op, path=labels)
    root_labels = ", ".join(label_of(trace, root) for root in backward_pass.roots)
    for earlier in reversed(trace.user_passes()):
        if earlier.index < backward_pass.index and \
                _cheapest_path(edges, tensor_id, set(earlier.roots), cuts=False) is not None:
            return answer("wrong_loss", other_site=backward_pass.site, site=earlier.site,
                          detail=root_labels)
    ends = _dead_ends(trace, edges, tensor_id)
    if ends:
        end = trace.tensors[ends[-1]]
        return answer("unused_output", site=end.site, other_site=backward_pass.site,
                      path=[label_of(trace, end_id) for end_id in ends],
                      detail=root_labels)
    return answer("not_used", other_site=backward_pass.site, detail=root_labels,
                  site=trace.tensors[tensor_id].site)


def _first_sentence(text: str) -> str:
    """``AutogradError: Trying to backward ... a second time`` from a long message."""
    head = text.split("\n", 1)[0]
    cut = head.find(". ")
    return head[:cut] if cut > 0 else head.rstrip(".")


# -- graph walks ----------------------------------------------------------------------------
def reachable_nodes(trace: Trace, roots) -> set[int]:
    seen: set[int] = set()
    stack = [root for root in roots if root is not None]
    while stack:
        node_id = stack.pop()
        if node_id in seen or node_id not in trace.nodes:
            continue
        seen.add(node_id)
        stack.extend(next_id for next_id, _ in trace.nodes[node_id].next if next_id is not None)
    return seen


def _nodes_toward(trace: Trace, target: int) -> set[int]:
    """Nodes from which ``target`` is reachable (itself included)."""
    parents: dict[int, list[int]] = {}
    for node_id, next_id, _ in trace.edges():
        parents.setdefault(next_id, []).append(node_id)
    seen = {target}
    stack = [target]
    while stack:
        for parent in parents.get(stack.pop(), ()):
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


def _forward_edges(trace: Trace) -> dict[int, list[tuple[int, str, int]]]:
    """tensor id -> [(tensor id it flowed into, "graph"/"integer"/"flow", node or flow index)]:
    the program's forward data flow, nodes and flows together."""
    edges: dict[int, list[tuple[int, str, int]]] = {}
    for node in trace.iter_nodes():
        if node.kind == "accumulate":
            continue
        for output in node.outputs:
            record = trace.tensors.get(output)
            kind = "graph" if record is None or record.requires_grad else "integer"
            for source in node.inputs:
                if source is not None and source != output:
                    edges.setdefault(source, []).append((output, kind, node.id))
    for index, flow in enumerate(trace.flows):
        if flow.kind in _CUT_FLOWS:
            for source in flow.sources:
                for result in flow.results:
                    if result != source:
                        edges.setdefault(source, []).append((result, "flow", index))
    return edges


def _cheapest_path(edges: dict, start: int, targets: set[int], cuts: bool = True):
    """The path from ``start`` to a target crossing the fewest cuts (0-1 BFS): a list of
    (tensor id, kind, where), or None."""
    if start in targets:
        return []
    best = {start: 0}
    came: dict[int, tuple[int, str, int]] = {}
    queue = deque([(0, start)])
    while queue:
        cost, tensor_id = queue.popleft()
        if cost > best.get(tensor_id, cost):
            continue
        if tensor_id in targets:
            path = []
            while tensor_id != start:
                previous, kind, where = came[tensor_id]
                path.append((tensor_id, kind, where))
                tensor_id = previous
            return path[::-1]
        for next_id, kind, where in edges.get(tensor_id, ()):
            if kind != "graph" and not cuts:
                continue
            step = 0 if kind == "graph" else 1
            if cost + step < best.get(next_id, cost + step + 1):
                best[next_id] = cost + step
                came[next_id] = (tensor_id, kind, where)
                if step:
                    queue.append((cost + step, next_id))
                else:
                    queue.appendleft((cost, next_id))
    return None


def _dead_ends(trace: Trace, edges: dict, start: int) -> list[int]:
    """Tensors made from ``start`` through the graph that nothing used afterwards."""
    seen = {start}
    stack = [start]
    ends = []
    while stack:
        tensor_id = stack.pop()
        following = [item for item in edges.get(tensor_id, ()) if item[1] == "graph"]
        if not following and tensor_id != start:
            ends.append(tensor_id)
        for next_id, _, _ in following:
            if next_id not in seen:
                seen.add(next_id)
                stack.append(next_id)
    return sorted(ends)


# -- a gradient that is all zeros ------------------------------------------------------------
def is_zero(value: Value) -> bool:
    """Whether a captured value is all zeros (from its array, or its statistics)."""
    if value.array is not None:
        return bool(value.array.size) and not np.any(value.array)
    stats = value.stats
    return stats.min == 0 and stats.max == 0 and stats.nan_count == 0


def _zero(trace: Trace, backward_pass: BackwardPass, tensor_id: int, answer):
    """The step where the gradient toward the tensor became all zeros, with the share of
    the elements it zeroed."""
    accumulate = next((node.id for node in trace.nodes.values()
                       if node.kind == "accumulate" and node.leaf == tensor_id), None)
    toward = _nodes_toward(trace, accumulate) if accumulate is not None else set()
    for step in backward_pass.steps:
        node = trace.nodes.get(step.node)
        if node is None or step.node not in toward or node.kind == "accumulate":
            continue
        incoming = [grad for grad in step.grads_in if grad is not None]
        if not incoming or all(is_zero(grad) for grad in incoming):
            continue
        going = [step.grads_out[index] for index, (next_id, _) in enumerate(node.next)
                 if next_id is not None and next_id in toward and index < len(step.grads_out)]
        going = [grad for grad in going if grad is not None]
        if going and all(is_zero(grad) for grad in going):
            return answer("zero", has_grad=True, site=node.site, node=node.id, op=node.name,
                          fraction=_zeroed_share(incoming[0], going[0]),
                          other_site=backward_pass.site)
    return answer("zero", has_grad=True, other_site=backward_pass.site)


def _zeroed_share(incoming: Value, going: Value) -> float | None:
    """Of the elements with a nonzero gradient coming in, the share going out as zero."""
    if incoming.array is None or going.array is None or \
            incoming.array.shape != going.array.shape:
        return None
    nonzero = incoming.array != 0
    count = int(nonzero.sum())
    if count == 0:
        return None
    return float((nonzero & (going.array == 0)).sum()) / count
