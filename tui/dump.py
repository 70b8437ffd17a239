"""The steps table as plain text, for places without a terminal (CI logs, ``--dump``).

Example:
    >>> from tracegrad.tracing.model import Trace, NodeRecord, BackwardPass, Step
    >>> trace = Trace(nodes={0: NodeRecord(0, "SumBackward0")},
    ...               passes=[BackwardPass(0, steps=[Step(0, 0)])])
    >>> print(dump_steps(trace).splitlines()[2])
        0  SumBackward0            ?
"""

from __future__ import annotations

from tracegrad.tracing.model import Trace
from tracegrad.tracing.report import findings, format_finding

from .session import DebugSession


def dump_steps(trace: Trace, all_passes: bool = False) -> str:
    """The steps of every pass the program started (``all_passes``: gradcheck's probe
    passes too), the violations, and the exception that ended the program."""
    session = DebugSession(trace, show_probes=all_passes)
    lines: list[str] = []
    if not trace.passes:
        lines.append("no backward pass recorded")
    for pass_index in session.visible:
        lines.append(session.pass_label(pass_index))
        backward_pass = session.backward_pass(pass_index)
        if backward_pass.summarized:
            counts = ", ".join(f"{name} {count:,}" for name, count in sorted(
                backward_pass.op_counts.items(), key=lambda item: (-item[1], item[0])))
            lines.append(f"  steps counted, not recorded (structure budget): {counts}")
            lines.append("")
            continue
        lines.append(f"{'step':>5}  {'node':<22}  {'shape':<14}  marks")
        for step_index in range(session.step_count(pass_index)):
            row = session.row(pass_index, step_index)
            lines.append(f"{row.index:>5}  {row.label:<22}  {row.shape:<14}  {row.marks}"
                         .rstrip())
        lines.append("")
    if session.probe_count and not session.show_probes:
        lines.append(f"({session.probe_count:,} gradcheck probe passes not shown)")
        lines.append("")
    if trace.violations:
        # As ``tracegrad check`` prints them: one in-place line that broke two saved
        # copies is one finding listing both savers.
        grouped = findings(trace)
        lines.append(f"findings ({len(grouped)}):")
        for finding in grouped:
            lines.append("  " + format_finding(trace, finding).replace("\n", "\n  "))
    if trace.exception is not None:
        where = f" at {trace.exception.site}" if trace.exception.site else ""
        lines.append(f"the program raised {trace.exception.type}{where}: "
                     f"{trace.exception.message}")
    lines.append("marks: ! violation  N NaN/Inf  h hook fired  E error")
    return "\n".join(lines).rstrip() + "\n"
