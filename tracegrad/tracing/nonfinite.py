"""Explaining a NaN/Inf finding from the trace: the op's inputs, the where trap, upstream.

``explain(trace, violation)`` fills ``violation.cause`` and ``violation.detail`` from the
values the op saw: the recorder passes the live arrays when it finds the value (so the
cause is known even when it keeps no values), and a loaded trace is explained from its
recorded values (statistics when the arrays were not kept; the detail says so). Works on
traces of both engines: it reads only the Trace.

>>> import tracegrad
>>> x = tracegrad.tensor([1.0, 0.0, 4.0], requires_grad=True)
>>> with tracegrad.record() as tr:
...     y = x.log()
>>> (violation,) = tr.violations
>>> violation.cause, violation.detail["indices"], violation.detail["values"]
('log_of_zero', [[1]], ['0'])
"""

from __future__ import annotations

from .causes import MASKING_OPS, Operand, diagnose, nonfinite_elements, nonfinite_operands
from .model import NodeRecord, Trace, Violation

# Causes that are not in the rule tables: said when no rule of the op's family holds.
NONFINITE_INPUT = "nonfinite_input"  # an input already held NaN/Inf: look upstream
NONFINITE_GRADIENT = "nonfinite_gradient"  # the incoming gradient already held Inf
WHERE_TRAP = "where_trap"
OVERFLOW = "overflow"
UNDEFINED = "undefined"


def explain(trace: Trace, violation: Violation, live: dict | None = None,
            grads_in: tuple = ()) -> None:
    """Set ``violation.cause`` and ``violation.detail`` (see the module docstring).

    ``live``: tensor id -> the array the op saw (the recorder's, at the moment it happened);
    ``grads_in``: the arrays of the gradients that came into the backward step.
    """
    node = trace.nodes.get(violation.node) if violation.node is not None else None
    if node is None:
        return
    live = live or {}
    operands = [_operand(trace, tensor_id, live) for tensor_id in node.inputs]
    dtype = _dtype(trace, node)
    if violation.phase == "forward":
        cause, detail = _forward(trace, node, violation, operands, dtype)
    else:
        cause, detail = _backward(trace, node, violation, operands, live, grads_in, dtype)
    violation.cause, violation.detail = cause, detail


def _forward(trace: Trace, node: NodeRecord, violation: Violation, operands: list,
             dtype: str) -> tuple[str, dict]:
    cause, detail = diagnose(node.name, violation.kind, "forward", operands, node.attrs,
                             dtype=dtype)
    bad = nonfinite_operands(operands)
    if cause is None and bad:
        cause, detail = NONFINITE_INPUT, nonfinite_elements(bad[0]) or _stats_only(bad[0])
    if bad:
        detail["upstream"] = upstream_node(trace, bad[0].tensor)
    if cause is None:
        cause = OVERFLOW if violation.kind == "inf" else UNDEFINED
    return cause, detail


def _backward(trace: Trace, node: NodeRecord, violation: Violation, operands: list,
              live: dict, grads_in: tuple, dtype: str) -> tuple[str, dict]:
    extra = {}
    if node.outputs:
        extra["result"] = _operand(trace, node.outputs[0], live)
    if grads_in and grads_in[0] is not None:
        extra["grad"] = Operand("incoming gradient", grads_in[0])
    cause, detail = diagnose(node.name, violation.kind, "backward", operands, node.attrs,
                             extra, dtype)
    mask = masking_consumer(trace, node)
    result = extra.get("result")
    made_nonfinite = cause is not None or (result is not None and bool(
        nonfinite_operands([result])))
    if mask is not None and made_nonfinite and violation.kind == "nan" and \
            _zero_gradient_at(extra.get("grad"), detail):
        detail = dict(detail)
        detail.update(inner_cause=cause, mask_node=mask.id)
        violation.other_site = mask.site
        return WHERE_TRAP, detail
    if cause is not None:
        return cause, detail
    # A saved input or the saved result (ExpBackward0 multiplies by it) was non-finite.
    bad = nonfinite_operands(operands + ([result] if result is not None else []))
    if bad:
        detail = nonfinite_elements(bad[0]) or _stats_only(bad[0])
        detail["upstream"] = upstream_node(trace, bad[0].tensor)
        return NONFINITE_INPUT, detail
    if violation.from_nonfinite:
        return NONFINITE_GRADIENT, {}
    return (OVERFLOW if violation.kind == "inf" else UNDEFINED), {}


_MASK_SEARCH_DEPTH = 6  # ops between the non-finite branch and its where (x.log() * 2)


def note_masks(trace: Trace) -> None:
    """At the end of a recording: a forward NaN/Inf that a where/masked op later dropped
    names that op (``detail["mask_node"]``, ``other_site``): harmless in forward, it comes
    back as NaN in backward (the where trap). The recorder writes the messages after."""
    for violation in trace.violations:
        if violation.kind not in ("nan", "inf") or violation.phase != "forward" or \
                violation.node is None or "mask_node" in violation.detail:
            continue
        node = trace.nodes.get(violation.node)
        mask = masking_consumer(trace, node) if node is not None else None
        if mask is not None:
            violation.detail = {**violation.detail, "mask_node": mask.id}
            violation.other_site = mask.site


def name_cause_inputs(trace: Trace) -> None:
    """At the end of a recording, once tensors are named: the input a cause names
    (``detail["input"]``, ``t4`` when it happened) becomes its variable (``'spread'``)."""
    for violation in trace.violations:
        detail = violation.detail
        tensor_id = detail.get("tensor") if detail else None
        record = trace.tensors.get(tensor_id) if tensor_id is not None else None
        if record is not None and record.name and detail.get("input") == f"t{record.id}":
            detail["input"] = f"'{record.name}'"


def _zero_gradient_at(grad: Operand | None, detail: dict) -> bool:
    """Whether the incoming gradient is 0 at the first offending element (0 × Inf: the
    where trap's signature); True when that cannot be told."""
    indices = detail.get("indices")
    if grad is None or grad.array is None or not indices:
        return True
    try:
        return bool(grad.array[tuple(indices[0][-grad.array.ndim:])] == 0) \
            if grad.array.ndim else bool(grad.array == 0)
    except IndexError:
        return True


def masking_consumer(trace: Trace, node: NodeRecord) -> NodeRecord | None:
    """The nearest where/masked op that took ``node``'s output as an input, directly or
    through a few ops (``where(m, x.log() * 2, 0)``), if any."""
    consumers: dict[int, list[NodeRecord]] = {}
    for other in trace.iter_nodes():
        if other.id > node.id:
            for tensor_id in other.inputs:
                if tensor_id is not None:
                    consumers.setdefault(tensor_id, []).append(other)
    frontier, seen = list(node.outputs), set()
    for _ in range(_MASK_SEARCH_DEPTH):
        following = []
        for tensor_id in frontier:
            for other in consumers.get(tensor_id, ()):
                if other.name in MASKING_OPS:
                    return other
                if other.id not in seen:
                    seen.add(other.id)
                    following.extend(other.outputs)
        frontier = following
    return None


def upstream_node(trace: Trace, tensor_id: int | None) -> int | None:
    """The node whose forward NaN/Inf finding explains a non-finite ``tensor_id``: its
    producer or the nearest ancestor with such a finding (None: it came in non-finite)."""
    if tensor_id is None:
        return None
    flagged = {violation.node for violation in trace.violations
               if violation.kind in ("nan", "inf") and violation.phase == "forward"}
    seen: set[int] = set()
    frontier = [tensor_id]
    while frontier:
        record = trace.tensors.get(frontier.pop(0))
        if record is None or record.grad_fn is None or record.grad_fn in seen:
            continue
        seen.add(record.grad_fn)
        if record.grad_fn in flagged:
            return record.grad_fn
        producer = trace.nodes.get(record.grad_fn)
        if producer is not None:
            frontier.extend(tensor for tensor in producer.inputs if tensor is not None)
    return None


def _operand(trace: Trace, tensor_id: int | None, live: dict) -> Operand:
    record = trace.tensors.get(tensor_id) if tensor_id is not None else None
    label = "a value" if record is None else \
        f"'{record.name}'" if record.name else f"t{record.id}"
    array = live.get(tensor_id)
    if array is not None:
        from .values import host_array

        return Operand(label, host_array(array), tensor=tensor_id)
    value = record.value if record is not None else None
    if value is None:
        return Operand(label, tensor=tensor_id, dropped="values were not recorded")
    return Operand(label, value.array, value.stats, tensor_id, value.dropped_reason)


def _stats_only(operand: Operand) -> dict:
    detail = {"input": operand.label, "tensor": operand.tensor, "source": "stats",
              "dropped": operand.dropped}
    if operand.stats is not None:
        detail.update(nan=operand.stats.nan_count, inf=operand.stats.inf_count)
    return detail


def _dtype(trace: Trace, node: NodeRecord) -> str:
    for tensor_id in (*node.outputs, *node.inputs):
        record = trace.tensors.get(tensor_id) if tensor_id is not None else None
        if record is not None and record.dtype.startswith("float"):
            return record.dtype
    return "float32"
