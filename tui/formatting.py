"""Text for values, tensors and sites, shared by the panels and ``--dump``.

Example:
    >>> import numpy as np
    >>> from tracegrad.tracing.model import Value, Stats
    >>> stats = Stats(0.0, 1.0, 0.5, 1.0)
    >>> describe_value(Value((2,), "float32", stats, np.array([0.0, 1.0], np.float32)))
    'float32 [2]  min 0 max 1 mean 0.5 norm 1'
    >>> describe_value(Value((2,), "float32", stats, dropped="pass"))
    'float32 [2]  min 0 max 1 mean 0.5 norm 1  (statistics only: not kept for this pass)'
"""

from __future__ import annotations

import linecache

from rich.text import Text

from tracegrad.tracing.model import BackwardPass, Site, TensorRecord, Trace, Value, Violation
from tracegrad.tracing.text import number_text, shape_text, violation_lines

SUMMARIZED_NOTE = "statistics only"


def number(value: float | None) -> str:
    return number_text(value, missing="-")


def describe_value(value: Value | None) -> str:
    """One line: dtype, shape, min/max/mean/norm, NaN/Inf counts, and whether summarized."""
    if value is None:
        return "None (no gradient)"
    stats = value.stats
    text = (f"{value.dtype} {shape_text(value.shape)}  min {number(stats.min)} max {number(stats.max)} "
            f"mean {number(stats.mean)} norm {number(stats.norm)}")
    if stats.nan_count or stats.inf_count:
        text += f"  NaN {stats.nan_count} Inf {stats.inf_count}"
    if value.summarized:
        text += f"  ({statistics_note(value)})"
    return text


def statistics_note(value: Value) -> str:
    """``statistics only: not kept for this pass`` / ``...: over the memory budget``."""
    reason = value.dropped_reason
    return SUMMARIZED_NOTE if reason in ("", SUMMARIZED_NOTE) else f"{SUMMARIZED_NOTE}: {reason}"


def missing_values_reason(backward_pass: BackwardPass, trace: Trace) -> str:
    """Why a pass kept no arrays, in words, with the setting that decides it."""
    keep = trace.metadata.get("keep_passes")
    if isinstance(keep, list) and len(keep) == 2:
        setting = (f"keep_passes=({keep[0]}, {keep[1]}) keeps the first {keep[0]} and last "
                   f"{keep[1]} passes and those with a finding")
    else:
        setting = "the capture policy kept no arrays for it"
    if not backward_pass.is_user:
        setting = "gradcheck probes keep statistics only unless they have a finding"
    return f"not kept for this pass ({setting})"


def describe_tensor(trace: Trace, tensor_id: int | None) -> str:
    if tensor_id is None:
        return "None"
    tensor: TensorRecord | None = trace.tensors.get(tensor_id)
    if tensor is None:
        return f"t{tensor_id} (not recorded)"
    kind = "leaf" if tensor.is_leaf else "non-leaf"
    grad = ", requires_grad" if tensor.requires_grad else ""
    return f"{tensor.label} ({kind}{grad}) {tensor.dtype} {shape_text(tensor.shape)}"


def source_context(site: Site, around: int = 2) -> tuple[str, int] | None:
    """(lines of source around the site, first line number), or None when unreadable."""
    lines = linecache.getlines(site.file)
    if not lines or site.line > len(lines):
        return None
    first = max(site.line - around, 1)
    last = min(site.line + around, len(lines))
    return "".join(lines[first - 1:last]).rstrip("\n"), first


def describe_violation(violation: Violation, trace: Trace, full: bool = True) -> Text:
    """The violation's block as ``tracegrad check`` prints it (``tracing.text``), styled:
    the heading red, the sites cyan. The short form (``full=False``) fits a list entry:
    the heading, sites and versions say what to fix; the node panel shows the message.
    """
    lines = violation_lines(trace, violation)
    text = Text(lines[0], style="bold red")
    if full:
        text.append("\n" + lines[1])
    for line in lines[2:]:
        text.append("\n" + line, style="red" if line.lstrip().startswith("version") else "cyan")
    return text
