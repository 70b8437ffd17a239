"""Everything about the current step's node: op, source, tensors, gradients, saved tensors.

The panel is one ``Static`` holding a group of rich renderables, rebuilt when the step
changes; it sits in a scrolling container, so long sections never push the layout around.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from tracegrad.tracing.model import NodeRecord, Step, Trace, Violation

from ..formatting import describe_tensor, describe_value, describe_violation, source_context
from ..session import DebugSession


class NodePanel(Static):
    """The node of the current step, section by section."""

    def __init__(self, session: DebugSession, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.session = session

    def show(self, pass_index: int, step_index: int) -> None:
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
    sections += _saved(trace, node)
    sections += _hooks(step)
    sections += _leaf_grad(trace, node, step)
    return sections


def _heading(text: str) -> Text:
    return Text(text, style="bold underline")


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
    for violation in violations:
        text = Text("⚠ ", style="bold red")
        text.append_text(describe_violation(violation, trace, full=False))
        text.append(f"\n{violation.message}\n", style="red")
        parts.append(text)
    return parts


def _code(code: str) -> str:
    return f"  {code}" if code else ""


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


def _tensors(trace: Trace, node: NodeRecord) -> list[RenderableType]:
    text = Text()
    for position, tensor_id in enumerate(node.inputs):
        text.append(f"  input {position}: {describe_tensor(trace, tensor_id)}\n")
    for position, tensor_id in enumerate(node.outputs):
        text.append(f"  output {position}: {describe_tensor(trace, tensor_id)}\n")
    if node.leaf is not None:
        text.append(f"  accumulates into: {describe_tensor(trace, node.leaf)}\n")
    if not text.plain:
        return []
    return [_heading("inputs / outputs"), text]


def _gradients(session: DebugSession, pass_index: int, step: Step,
               node: NodeRecord) -> list[RenderableType]:
    if not session.backward_pass(pass_index).values_captured:
        return [_heading("gradients"), Text("not captured in this pass (structure only)")]
    text = Text()
    for position, value in enumerate(step.grads_in):
        text.append(f"  in  {position}: {describe_value(value)}\n",
                    style="red" if value is not None and value.stats.has_nonfinite else "")
    for position, value in enumerate(step.grads_out):
        target = ""
        if position < len(node.next) and node.next[position][0] is not None:
            target = f" → {session.trace.nodes[node.next[position][0]].name}"
        text.append(f"  out {position}{target}: {describe_value(value)}\n",
                    style="red" if value is not None and value.stats.has_nonfinite else "")
    return [_heading("gradients"), text] if text.plain else []


def _saved(trace: Trace, node: NodeRecord) -> list[RenderableType]:
    if not node.saved:
        return []
    table = Table("slot", "tensor", "saved at", "now", box=None, padding=(0, 1))
    for saved in node.saved:
        tensor = trace.tensors.get(saved.tensor)
        current = tensor.version if tensor is not None else saved.version
        style = "bold red" if current != saved.version else ""
        label = tensor.label if tensor is not None else f"t{saved.tensor}"
        table.add_row(saved.slot or "-", label + (" (output)" if saved.is_output else ""),
                      f"version {saved.version}", f"version {current}", style=style)
    return [_heading("saved tensors"), table]


def _hooks(step: Step) -> list[RenderableType]:
    if not step.hooks:
        return []
    text = Text()
    for hook in step.hooks:
        effect = "replaced the gradient" if hook.changed else "left the gradient unchanged"
        text.append(f"  {hook.kind} hook {hook.name}: {effect}\n")
    return [_heading("hooks"), text]


def _leaf_grad(trace: Trace, node: NodeRecord, step: Step) -> list[RenderableType]:
    tensor_id = step.accumulated if step.accumulated is not None else node.leaf
    tensor = trace.tensors.get(tensor_id) if tensor_id is not None else None
    if tensor is None:
        return []
    return [_heading(f"{tensor.label}.grad after accumulation"),
            Text(f"  {describe_value(tensor.grad)}")]
