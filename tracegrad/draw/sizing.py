"""How big a picture to draw: the whole graph when it fits, else smaller, never refused.

Past ``max_nodes`` boxes `dot` takes minutes and gigabytes, and the picture is unreadable
anyway. So a graph that large is drawn as the first of these that fits: one box per
nn.Module, then repeated structure folded (fold.py), then one box of counts. Which one is
decided from the trace's counts *before* any box is planned or laid out, so a
1,000,000-node trace costs seconds. Every violation still appears, and the picture's title
(and a GraphCollapsedWarning) says what was done.
"""

from __future__ import annotations

import warnings

from ..tracing.model import Trace
from ..tracing.text import violation_lines, violation_mark
from .fold import drawn_nodes, estimate_boxes, fold, summary_lines
from .plan import (
    EXCEPTION_FILL,
    MODULE_FILL,
    VIOLATION_FILL,
    Box,
    Options,
    Plan,
    picture_title,
    plan_graph,
    resolve_pass,
)

MAX_NODES = 5000


class GraphCollapsedWarning(UserWarning):
    """The graph was too large to lay out and was drawn smaller; the message says how."""


def sized_plan(trace: Trace, outputs: list[int] | None, options: Options,
               max_nodes: int | None, stacklevel: int = 4) -> Plan:
    """The plan to draw: the whole graph when it fits in ``max_nodes`` boxes, else the
    first smaller picture that fits (a GraphCollapsedWarning says which)."""
    if max_nodes is None:
        return plan_graph(trace, outputs, options)
    pass_index = resolve_pass(trace, options.pass_index, options.highlight_step)
    node_ids = drawn_nodes(trace, pass_index) if outputs is None or pass_index is not None \
        else sorted(trace.nodes)
    size = estimate_boxes(trace, node_ids, options.show_saved, options.collapse_modules)
    if size <= max_nodes:
        plan = plan_graph(trace, outputs, options)
        if plan.size <= max_nodes:
            return plan
        size = plan.size
    why = (f"the graph has about {size:,} boxes, more than max_nodes={max_nodes:,} that "
           "`dot` lays out in reasonable time")
    has_modules = any(trace.nodes[node_id].module for node_id in node_ids)
    if has_modules and not options.collapse_modules and \
            estimate_boxes(trace, node_ids, options.show_saved, modules=True) <= max_nodes:
        options.collapse_modules = True
        plan = plan_graph(trace, outputs, options)
        if plan.size <= max_nodes:
            return _noted(plan, f"{why}; drawn with one box per nn.Module ({plan.size:,} "
                                "boxes)", stacklevel)
        options.collapse_modules = False
    folded = fold(trace, node_ids, pass_index)
    if folded.boxes <= max_nodes:
        options.pass_index = pass_index if pass_index is not None else "all"
        plan = plan_graph(folded.trace, _folded_outputs(outputs, folded.trace), options)
        if plan.size <= max_nodes:
            return _noted(plan, f"{why}; repeated structure folded: {folded.note} "
                                f"({plan.size:,} boxes)", stacklevel)
    plan = summary_plan(trace, node_ids, pass_index)
    return _noted(plan, f"{why}, even folded; drawn as a summary of its nodes by op",
                  stacklevel)


def _folded_outputs(outputs: list[int] | None, folded: Trace) -> list[int] | None:
    return [output for output in outputs if output in folded.tensors] if outputs else outputs


def _noted(plan: Plan, note: str, stacklevel: int) -> Plan:
    plan.collapsed = True
    plan.title.append(f"drawn smaller: {note}")
    warnings.warn(f"render: {note}. Pass max_nodes=None to lay out every node.",
                  GraphCollapsedWarning, stacklevel=stacklevel)
    return plan


def summary_plan(trace: Trace, node_ids: list[int], pass_index: int | None) -> Plan:
    """One box of counts, plus a note for every violation and for the program's error."""
    lines = summary_lines(trace, node_ids, pass_index)
    boxes = [Box("summary", lines, lines, MODULE_FILL, attrs={"shape": "box3d"})]
    for number, violation in enumerate(trace.violations):
        boxes.append(Box(f"v{number}", violation_mark(violation),
                         violation_lines(trace, violation), VIOLATION_FILL,
                         attrs={"shape": "note", "fontcolor": "white"}))
    if trace.exception is not None:
        exception = trace.exception
        text = [f"program raised {exception.type}: {exception.message}"]
        boxes.append(Box("exception", text, text, EXCEPTION_FILL, attrs={"shape": "note"}))
    return Plan(boxes, [], collapsed=True,
                title=picture_title(trace, pass_index, all_nodes=pass_index is None))
