"""Everything about the current step's node: op, source, tensors, gradients, saved tensors.

The panel is one ``Static`` holding a group of rich renderables, rebuilt when the step
changes; it sits in a scrolling container, so long sections never push the layout around.
Every list in it is capped (``MAX_ITEMS``): a node with 100,000 inputs shows the first
ones and says how many more there are, so stepping onto it costs what a small node does.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from tracegrad.tracing.memory import memory_report
from tracegrad.tracing.model import BackwardPass, NodeRecord, Step, Trace, Violation
from tracegrad.tracing.text import bytes_text, cause_phrase

from ..formatting import (
    describe_tensor,
    describe_value,
    describe_violation,
    missing_values_reason,
    source_context,
)
from ..session import DebugSession

MAX_ITEMS = 16  # rows per list (inputs, outputs, gradients, saved tensors, hooks)


class NodePanel(Static):
    """The node of the current step, section by section."""

    def __init__(self, session: DebugSession, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.session = session

    def show(self, pass_index: int, step_index: int) -> None:
        if not self.session.trace.passes:
            self.update(Text("This trace has no backward pass.", style="italic"))
            return
        backward_pass = self.session.backward_pass(pass_index)
        if backward_pass.summarized:
            self.update(Group(*summarized_sections(self.session, backward_pass)))
            return
        if not self.session.step_count(pass_index):
            self.update(Text("This pass ran no steps.", style="italic"))
            return
        step = self.session.step(pass_index, step_index)
        node = self.session.trace.nodes[step.node]
        self.update(Group(*build_sections(self.session, pass_index, step, node)))


def build_sections(session: DebugSession, pass_index: int, step: Step,
                   node: NodeRecord) -> list[RenderableType]:
    trace = session.trace
    sections: list[RenderableType] = [_title(step, node)]
    sections += _violations(trace, session.violations_at(pass_index, step.index))
    if step.error:
        sections.append(Text(f"error: {step.error}", style="bold red"))
    sections += _source(node)
    sections += _tensors(trace, node)
    sections += _gradients(session, pass_index, step, node)
    sections += _saved(session, node)
    sections += _hooks(step)
    sections += _leaf_grad(session, pass_index, node, step)
    return sections


def summarized_sections(session: DebugSession, backward_pass: BackwardPass) -> list:
    """A pass kept as counts only: how many steps of each op, and why."""
    text = Text()
    text.append(f"{session.pass_label(backward_pass.index)}\n", style="bold")
    text.append("Its steps were not recorded, only counted: the trace reached its structure "
                "budget (record(structure_budget_bytes=...) keeps more).\n", style="yellow")
    counts = sorted(backward_pass.op_counts.items(), key=lambda item: (-item[1], item[0]))
    for name, count in counts[:MAX_ITEMS]:
        text.append(f"  {name:<28} {count:,}\n")
    if len(counts) > MAX_ITEMS:
        text.append(f"  ... {len(counts) - MAX_ITEMS:,} more ops\n", style="grey62")
    return [_heading("summarized pass"), text]


def _heading(text: str) -> Text:
    return Text(text, style="bold underline")


def _more(shown: int, total: int, what: str) -> str:
    return f"  ... and {total - shown:,} more {what} (of {total:,})\n" if total > shown else ""


def _title(step: Step, node: NodeRecord) -> Text:
    title = Text()
    title.append(f"step {step.index}  ", style="bold")
    title.append(node.name, style="bold yellow")
    title.append(f"  ({node.kind})")
    if node.module:
        title.append(f"  module {node.module}", style="cyan")
    if step.duration_ns:
        title.append(f"  {step.duration_ns / 1e3:.1f} µs", style="grey62")
    return title


def _violations(trace: Trace, violations: list[Violation]) -> list[RenderableType]:
    parts: list[RenderableType] = []
    for violation in violations[:MAX_ITEMS]:
        text = Text("⚠ ", style="bold red")
        text.append_text(describe_violation(violation, trace, full=False))
        text.append(f"\n{violation.message}\n", style="red")
        phrase = cause_phrase(trace, violation)  # the same words as tracegrad check
        if phrase:
            text.append("cause: ", style="bold")
            text.append(f"{phrase}\n")
        parts.append(text)
    if len(violations) > MAX_ITEMS:
        parts.append(Text(_more(MAX_ITEMS, len(violations), "violations"), style="red"))
    return parts


def _source(node: NodeRecord) -> list[RenderableType]:
    if node.site is None:
        return [_heading("source"), Text("(no site recorded)", style="grey62")]
    parts: list[RenderableType] = [
        _heading("source"),
        Text(f"{node.site} in {node.site.function}()", style="cyan")]
    context = source_context(node.site)
    if context is not None:
        code, first_line = context
        parts.append(Syntax(code, "python", line_numbers=True, start_line=first_line,
                            highlight_lines={node.site.line}, theme="monokai", word_wrap=False))
    elif node.site.code:
        parts.append(Syntax(node.site.code, "python", line_numbers=True,
                            start_line=node.site.line, theme="monokai"))
    return parts


def _listed(text: Text, items: Sequence, line, what: str) -> None:
    """Append one line per item (at most MAX_ITEMS), then how many were left out."""
    for position, item in enumerate(items[:MAX_ITEMS]):
        line(position, item)
    text.append(_more(min(len(items), MAX_ITEMS), len(items), what), style="grey62")


def _tensors(trace: Trace, node: NodeRecord) -> list[RenderableType]:
    text = Text()
    _listed(text, node.inputs, lambda position, tensor_id: text.append(
        f"  input {position}: {describe_tensor(trace, tensor_id)}\n"), "inputs")
    _listed(text, node.outputs, lambda position, tensor_id: text.append(
        f"  output {position}: {describe_tensor(trace, tensor_id)}\n"), "outputs")
    if node.leaf is not None:
        text.append(f"  accumulates into: {describe_tensor(trace, node.leaf)}\n")
    if not text.plain:
        return []
    return [_heading("inputs / outputs"), text]


def _gradients(session: DebugSession, pass_index: int, step: Step,
               node: NodeRecord) -> list[RenderableType]:
    backward_pass = session.backward_pass(pass_index)
    trace = session.trace
    if not trace.metadata.get("values", True) and not any(step.grads_in):
        return [_heading("gradients"),
                Text("  not captured: the trace was recorded with values=False")]
    text = Text()
    if not backward_pass.values_captured:
        text.append(f"  arrays {missing_values_reason(backward_pass, trace)}; statistics "
                    "only\n", style="yellow")

    def grad_in(position: int, value) -> None:
        text.append(f"  in  {position}: {describe_value(value)}\n",
                    style="red" if value is not None and value.stats.has_nonfinite else "")

    def grad_out(position: int, value) -> None:
        target = ""
        if position < len(node.next) and node.next[position][0] is not None:
            next_node = trace.nodes.get(node.next[position][0])
            target = f" → {next_node.name}" if next_node is not None else ""
        text.append(f"  out {position}{target}: {describe_value(value)}\n",
                    style="red" if value is not None and value.stats.has_nonfinite else "")

    _listed(text, step.grads_in, grad_in, "incoming gradients")
    _listed(text, step.grads_out, grad_out, "outgoing gradients")
    return [_heading("gradients"), text] if text.plain else []


def _saved(session: DebugSession, node: NodeRecord) -> list[RenderableType]:
    if not node.saved:
        return []
    trace = session.trace
    table = Table("slot", "tensor", "bytes", "saved at", "now", box=None, padding=(0, 1))
    for saved in node.saved[:MAX_ITEMS]:
        tensor = trace.tensors.get(saved.tensor)
        current = tensor.version if tensor is not None else saved.version
        style = "bold red" if current != saved.version else ""
        label = tensor.label if tensor is not None else f"t{saved.tensor}"
        table.add_row(saved.slot or "-", label + (" (output)" if saved.is_output else ""),
                      bytes_text(saved.nbytes), f"version {saved.version}",
                      f"version {current}", style=style)
    report = session_memory(session)
    heading = (f"saved tensors: {bytes_text(node.saved_bytes)} here; backward keeps "
               f"{bytes_text(report.peak_bytes)} at its peak")
    parts: list[RenderableType] = [_heading(heading), table]
    if len(node.saved) > MAX_ITEMS:
        parts.append(Text(_more(MAX_ITEMS, len(node.saved), "saved tensors"), style="grey62"))
    twice = _saved_twice_here(report, node)
    if twice:
        parts.append(Text("\n".join(twice), style="yellow"))
    return parts


def session_memory(session: DebugSession):
    """The trace's memory report, computed once per session (memory.py)."""
    report = getattr(session, "_memory_report", None)
    if report is None:
        report = memory_report(session.trace)
        session._memory_report = report
    return report


def _saved_twice_here(report, node: NodeRecord) -> list[str]:
    """"saved twice: ..." for each of this node's tensors kept twice (text.py's words)."""
    lines = []
    for twice in report.saved_twice:
        others = [holder for holder in twice.holders if holder.node != node.id]
        if len(others) == len(twice.holders):
            continue  # not this node
        where = ", ".join(f"{holder.name} at {holder.site}" for holder in others[:3])
        what = "a copy of it is" if twice.kind == "copy" else "also"
        lines.append(f"saved twice ({bytes_text(twice.nbytes)}): {what} saved by {where}")
    return lines


def _hooks(step: Step) -> list[RenderableType]:
    if not step.hooks:
        return []
    text = Text()

    def hook_line(_: int, hook) -> None:
        effect = "replaced the gradient" if hook.changed else "left the gradient unchanged"
        text.append(f"  {hook.kind} hook {hook.name}: {effect}\n")

    _listed(text, step.hooks, hook_line, "hooks")
    return [_heading("hooks"), text]


def _leaf_grad(session: DebugSession, pass_index: int, node: NodeRecord,
               step: Step) -> list[RenderableType]:
    """``.grad`` as it was right after this step, in this pass (what the program would
    have printed then); traces recorded before per-pass gradients show the last one."""
    trace = session.trace
    tensor_id = step.accumulated if step.accumulated is not None else node.leaf
    tensor = trace.tensors.get(tensor_id) if tensor_id is not None else None
    if tensor is None:
        return []
    heading = _heading(f"{tensor.label}.grad after accumulation (pass {pass_index})")
    if step.grad_after is not None:
        return [heading, Text(f"  {describe_value(step.grad_after)}")]
    if session.has_grads_after(pass_index):
        return [heading, Text("  None (no gradient reached it in this pass)")]
    return [_heading(f"{tensor.label}.grad after the last pass"),
            Text(f"  {describe_value(tensor.grad)}  (this trace has no per-pass .grad)")]
