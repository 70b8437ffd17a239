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

SUMMARIZED_NOTE = "statistics only"


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def describe_value(value: Value | None) -> str:
    """One line: dtype, shape, min/max/mean/norm, NaN/Inf counts, and whether summarized."""
    if value is None:
        return "None (no gradient)"
    stats = value.stats
    shape = "[" + ", ".join(str(size) for size in value.shape) + "]"
    text = (f"{value.dtype} {shape}  min {number(stats.min)} max {number(stats.max)} "
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
    shape = "[" + ", ".join(str(size) for size in tensor.shape) + "]"
    kind = "leaf" if tensor.is_leaf else "non-leaf"
    grad = ", requires_grad" if tensor.requires_grad else ""
    return f"{tensor.label} ({kind}{grad}) {tensor.dtype} {shape}"


def source_context(site: Site, around: int = 2) -> tuple[str, int] | None:
    """(lines of source around the site, first line number), or None when unreadable."""
    lines = linecache.getlines(site.file)
    if not lines or site.line > len(lines):
        return None
    first = max(site.line - around, 1)
    last = min(site.line + around, len(lines))
    return "".join(lines[first - 1:last]).rstrip("\n"), first


def describe_violation(violation: Violation, trace: Trace | None = None,
                       full: bool = True) -> Text:
    """Kind, both sites (with their code) and the versions; the message too when ``full``.

    The short form (``full=False``) fits a list entry: the sites and versions say what to
    fix, and the node panel shows the whole message.
    """
    text = Text()
    text.append(f"{violation.kind}", style="bold red")
    tensor = trace.tensors.get(violation.tensor) if trace and violation.tensor is not None \
        else None
    if tensor is not None:
        text.append(f" '{tensor.label}'")
    if full or tensor is None:
        text.append(f": {violation.message}")
    if violation.site:
        cause = "in-place at" if violation.kind.startswith("inplace") else "at"
        text.append(f"\n  {cause} {violation.site}", style="cyan")
        if violation.site.code:
            text.append(f"  {violation.site.code}", style="grey62")
    if violation.other_site:
        saved = "saved at" if violation.kind.startswith("inplace") else "and"
        text.append(f"\n  {saved} {violation.other_site}", style="cyan")
        if violation.other_site.code:
            text.append(f"  {violation.other_site.code}", style="grey62")
    if violation.saved_version is not None:
        text.append(f"\n  saved at version {violation.saved_version}, "
                    f"now version {violation.current_version}", style="red")
    return text
