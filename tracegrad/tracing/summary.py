"""``Trace.summary()``: a short text account of a trace.

>>> from tracegrad.tracing.model import Trace
>>> print(summarize(Trace()))
trace: 0 tensors, 0 nodes, 0 backward passes, 0 violations
"""

from __future__ import annotations

from collections import Counter

from ..cli import plural
from .model import Trace


def _bytes(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count} B"


def summarize(trace: Trace) -> str:
    lines = [(f"trace: {plural(len(trace.tensors), 'tensor')}, "
              f"{plural(len(trace.nodes), 'node')}, "
              f"{plural(len(trace.passes), 'backward pass')}, "
              f"{plural(len(trace.violations), 'violation')}")]
    if trace.nodes:
        by_op = Counter(node.name for node in trace.nodes.values())
        lines.append("nodes by op:")
        for op_name, count in sorted(by_op.items(), key=lambda item: (-item[1], item[0])):
            lines.append(f"  {op_name:<28} {count}")
        saved = sum(node.saved_bytes for node in trace.nodes.values())
        saved_count = sum(len(node.saved) for node in trace.nodes.values())
        lines.append(f"saved tensors: {saved_count} ({_bytes(saved)})")
    if trace.passes:
        steps = sum(len(backward_pass.steps) for backward_pass in trace.passes)
        with_values = sum(1 for backward_pass in trace.passes
                          if backward_pass.values_captured)
        failed = sum(1 for backward_pass in trace.passes if backward_pass.error)
        lines.append(f"backward passes: {len(trace.passes)} ({steps} steps, "
                     f"{with_values} with values, {failed} failed)")
    summarized = trace.metadata.get("summarized_values", 0)
    if summarized:
        lines.append(f"values kept as statistics only (memory budget): {summarized}")
    if trace.violations:
        lines.append("violations:")
        for violation in trace.violations:
            lines.append(f"  [{violation.kind}] {violation.message}")
    if trace.exception is not None:
        where = f" at {trace.exception.site}" if trace.exception.site else ""
        lines.append(f"exception: {trace.exception.type}: {trace.exception.message}{where}")
    return "\n".join(lines)
