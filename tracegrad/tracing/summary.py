"""``Trace.summary()``: a short text account of a trace, including what it left out.

Besides what was recorded (nodes by op, saved bytes, passes, violations) it says what the
budgets made the recorder keep as less: values kept as statistics only, passes summarized
to counts, ops only counted once the structure budget was used up.

>>> from tracegrad.tracing.model import Trace
>>> print(summarize(Trace()))
trace: 0 tensors, 0 nodes, 0 backward passes, 0 violations
"""

from __future__ import annotations

from collections import Counter

from .memory import memory_report
from .model import Trace
from .text import bytes_text, format_memory, violation_lines


def _plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else many or word + 'es'}"


def summarize(trace: Trace) -> str:
    lines = [(f"trace: {_plural(len(trace.tensors), 'tensor', 'tensors')}, "
              f"{_plural(len(trace.nodes), 'node', 'nodes')}, "
              f"{_plural(len(trace.passes), 'backward pass')}, "
              f"{_plural(len(trace.violations), 'violation', 'violations')}")]
    if trace.nodes:
        by_op = Counter(node.name for node in trace.nodes.values())
        lines.append("nodes by op:")
        for op_name, count in sorted(by_op.items(), key=lambda item: (-item[1], item[0])):
            lines.append(f"  {op_name:<28} {count}")
        saved = sum(node.saved_bytes for node in trace.nodes.values())
        saved_count = sum(len(node.saved) for node in trace.nodes.values())
        lines.append(f"saved tensors: {saved_count} ({bytes_text(saved)})")
        if saved_count:
            lines += _memory(trace)
    if trace.passes:
        lines += _passes(trace)
    summarized = trace.metadata.get("summarized_values", 0)
    if summarized:
        lines.append(f"values kept as statistics only (memory budget): {summarized}")
    lines += _structure(trace)
    if trace.violations:
        lines.append("violations:")
        for violation in trace.violations:  # the heading and what happened, as check says
            lines += ["  " + line for line in violation_lines(trace, violation)[:2]]
    if trace.exception is not None:
        where = f" at {trace.exception.site}" if trace.exception.site else ""
        lines.append(f"exception: {trace.exception.type}: {trace.exception.message}{where}")
    return "\n".join(lines)


def _memory(trace: Trace) -> list[str]:
    """What backward keeps, under the saved-tensors line (the words are report.py's)."""
    report = memory_report(trace)
    when = f" (as pass {report.peak_pass} started)" if report.peak_pass is not None else ""
    return [(f"  distinct storage {bytes_text(report.distinct_bytes)}; peak held between forward "
            f"and backward {bytes_text(report.peak_bytes)}{when}"),
            *format_memory(trace, report)[1:]]


def _passes(trace: Trace) -> list[str]:
    passes = trace.passes
    steps = sum(backward_pass.step_count for backward_pass in passes)
    with_values = sum(1 for backward_pass in passes if backward_pass.values_captured)
    failed = sum(1 for backward_pass in passes if backward_pass.error)
    lines = [(f"backward passes: {len(passes):,} ({steps:,} steps, {with_values:,} with "
              f"values, {failed:,} failed)")]
    probes = Counter(backward_pass.describe() for backward_pass in passes
                     if not backward_pass.is_user)
    if probes:
        own = len(passes) - sum(probes.values())
        lines.append(f"  {_plural(own, 'pass', 'passes')} the program started; "
                     f"{sum(probes.values()):,} gradcheck probes (hidden by default):")
        for label, count in sorted(probes.items()):
            lines.append(f"    {label}: {count:,}")
    return lines


def _structure(trace: Trace) -> list[str]:
    """What the structure budget made the recorder summarize or only count."""
    metadata = trace.metadata
    summarized = metadata.get("summarized_passes", 0)
    unrecorded = metadata.get("unrecorded_ops") or {}
    if not summarized and not unrecorded and not metadata.get("structure_over_budget"):
        return []
    budget = metadata.get("structure_budget_bytes")
    lines = [f"structure budget{f' {bytes_text(budget)}' if budget else ''} reached:"]
    counted_passes = sum(1 for backward_pass in trace.passes if backward_pass.summarized)
    if counted_passes:
        lines.append(f"  {_plural(counted_passes, 'pass', 'passes')} summarized: steps counted "
                     "per op, their nodes and tensors not kept")
    if unrecorded:
        total = sum(unrecorded.values())
        ops = ", ".join(f"{name} {count:,}" for name, count in
                        sorted(unrecorded.items(), key=lambda item: (-item[1], item[0]))[:5])
        lines.append(f"  {total:,} forward ops counted, not recorded: {ops}")
    lines.append("  Hint: record(structure_budget_bytes=...) keeps more.")
    return lines
