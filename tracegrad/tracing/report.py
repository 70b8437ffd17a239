"""Findings as text with file:line sites, as ``tracegrad check`` and pytest print them.

A *finding* is one mistake in the user's code; it may be recorded as several violations.
One in-place line that changes a tensor two nodes saved is one finding listing both
savers (the trace keeps one violation per saving node, so the picture and the debugger can
mark each node).

>>> from tracegrad.tracing.model import Site, Trace, Violation
>>> violation = Violation(kind="nan", message="NaN first appeared", site=Site("a.py", 3, "f"))
>>> print(format_violation(Trace(), violation))
a.py:3: NaN in forward [nan]
  NaN first appeared
  produced at  a.py:3
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Site, TensorRecord, Trace, Violation

_TITLES = {
    "inplace_saved": "in-place change of a tensor saved for backward",
    "inplace_leaf": "in-place change of a leaf that requires grad",
    "nan": "NaN in {phase}",
    "inf": "Inf in {phase}",
    "freed_graph": "backward through a freed graph",
}

# (label of site, label of other_site) per kind
_SITE_LABELS = {
    "inplace_saved": ("in-place op", "saved by"),
    "inplace_leaf": ("in-place op", "leaf made"),
    "nan": ("produced at", None),
    "inf": ("produced at", None),
    "freed_graph": ("backward at", "node made"),
}

INPLACE_HINT = ("Hint: use the out-of-place op (e.g. 'y = y + 1' instead of 'y += 1'), or "
                ".clone() the tensor before changing it.")


@dataclass
class Finding:
    """One mistake: the violations that record it (several for one in-place line that
    broke several saved copies), first recorded first."""

    violations: list[Violation]

    @property
    def first(self) -> Violation:
        return self.violations[0]

    @property
    def kind(self) -> str:
        return self.first.kind


def findings(trace: Trace, inf: bool = True) -> list[Finding]:
    """The trace's violations grouped into findings, in recording order.

    In-place changes of a saved tensor group by (tensor, in-place line, version it made):
    every node that had saved the tensor is broken by the same line.

    ``inf``: whether Inf counts. True: the first Inf is a finding (and a NaN that Inf
    then made is its consequence, not a finding of its own). False: only NaN counts (an
    Inf can be meant, e.g. a -inf attention mask), so the first NaN is the finding, even
    when it came from an Inf (its cause then names the Inf's line).
    """
    grouped: dict = {}
    result: list[Finding] = []
    for violation in trace.violations:
        if violation.kind == "inf" and not inf:
            continue
        if violation.kind == "nan" and violation.from_nonfinite and inf:
            continue
        if violation.kind == "inplace_saved" and violation.tensor is not None:
            key = (violation.tensor, _site_key(violation.site), violation.current_version)
            finding = grouped.get(key)
            if finding is not None:
                finding.violations.append(violation)
                continue
            finding = grouped[key] = Finding([violation])
        else:
            finding = Finding([violation])
        result.append(finding)
    return result


def format_finding(trace: Trace, finding: Finding) -> str:
    """A finding as ``tracegrad check`` prints it: title line, what happened, every site."""
    if finding.kind == "inplace_saved":
        text = _format_inplace_saved(trace, finding.violations)
        if text is not None:
            return text
    return "\n".join(format_violation(trace, violation) for violation in finding.violations)


def format_violation(trace: Trace, violation: Violation) -> str:
    title = _TITLES.get(violation.kind, violation.kind).format(phase=violation.phase)
    location = f"{violation.site}: " if violation.site is not None else ""
    message = violation.message
    if violation.kind in ("nan", "inf") and violation.cause is not None:
        # The cause and hint get lines of their own below.
        message = message.partition(" Cause: ")[0]
    lines = [f"{location}{title} [{violation.kind}]", f"  {message}"]
    site_label, other_label = _SITE_LABELS.get(violation.kind, ("site", "other site"))
    node = trace.nodes.get(violation.node) if violation.node is not None else None
    if violation.site is not None:
        lines.append(f"  {site_label:<12} {_line(violation.site)}")
    if other_label and violation.other_site is not None:
        if violation.kind == "inplace_saved" and node is not None:
            lines.append(f"  {'saved by':<12} {node.name} at {_line(violation.other_site)}")
        else:
            lines.append(f"  {other_label:<12} {_line(violation.other_site)}")
    if violation.saved_version is not None:
        lines.append(f"  {'version':<12} saved at {violation.saved_version}, now "
                     f"{violation.current_version}")
    if violation.kind in ("nan", "inf"):
        lines += _nonfinite_lines(trace, violation)
    return "\n".join(lines)


def _nonfinite_lines(trace: Trace, violation: Violation) -> list[str]:
    """The cause and the other lines of a NaN/Inf finding (the where, the upstream op)."""
    lines = []
    phrase = cause_phrase(trace, violation)
    if phrase:
        lines.append(f"  {'cause':<12} {phrase}")
    mask = trace.nodes.get(violation.detail.get("mask_node")) \
        if violation.detail.get("mask_node") is not None else None
    if mask is not None:
        lines.append(f"  {'masked by':<12} {mask.name} at {_line(mask.site)}")
    upstream = trace.nodes.get(violation.detail.get("upstream")) \
        if violation.detail.get("upstream") is not None else None
    if upstream is not None:
        label = "first Inf" if _first_kind(trace, upstream.id) == "inf" else "first NaN"
        lines.append(f"  {label:<12} {upstream.name} at {_line(upstream.site)}")
    hint = cause_hint(trace, violation, upstream=False)  # the line above names it
    if mask is not None and violation.phase == "forward":
        hint = mask_note(trace, violation).partition(" Hint: ")[2]
        lines.append(f"  {'':<12} backward still runs through it: 0 × an infinite "
                     "derivative = NaN (the where trap)")
        hint = f"Hint: {hint}"
    if hint and violation.cause is not None:
        lines.append(f"  {hint}")
    return lines


def _first_kind(trace: Trace, node_id: int) -> str:
    for violation in trace.violations:
        if violation.node == node_id and violation.phase == "forward":
            return violation.kind
    return "nan"


def _format_inplace_saved(trace: Trace, violations: list[Violation]) -> str | None:
    """One block for one in-place line, naming every node it broke (None: not enough
    recorded to say more than the messages do)."""
    first = violations[0]
    tensor = trace.tensors.get(first.tensor)
    savers = [trace.nodes.get(violation.node) for violation in violations]
    if tensor is None or any(node is None for node in savers):
        return None
    op = _inplace_op(tensor, first.current_version)
    names = _and([node.name for node in savers])
    failed = any(violation.phase == "backward" for violation in violations)
    outcome = "failed" if failed else "will fail"
    them = "them" if len(savers) > 1 else "it"
    location = f"{first.site}: " if first.site is not None else ""
    lines = [f"{location}{_TITLES['inplace_saved']} [inplace_saved]",
             (f"  {describe_tensor(tensor)} was modified in place{op} after {names} saved "
              f"it for backward; backward through {them} {outcome}.")]
    if first.site is not None:
        lines.append(f"  {'in-place op':<12} {_line(first.site)}")
    for node, violation in zip(savers, violations):
        lines.append(f"  {'saved by':<12} {node.name} at {_line(violation.other_site)}")
    versions = sorted({violation.saved_version for violation in violations
                       if violation.saved_version is not None})
    if versions:
        saved_at = ", ".join(str(version) for version in versions)
        lines.append(f"  {'version':<12} saved at {saved_at}, now {first.current_version}")
    lines.append(f"  {INPLACE_HINT}")
    return "\n".join(lines)


def _inplace_op(tensor: TensorRecord, version: int | None) -> str:
    for change in tensor.versions:
        if change.version == version:
            return f" by '{change.op}'"
    return ""


def describe_tensor(record: TensorRecord) -> str:
    """``'h' float32 [8, 16]``, or ``t4 float32 [8, 16]`` when it has no name."""
    label = f"'{record.name}'" if record.name else f"t{record.id}"
    return f"{label} {record.dtype} {list(record.shape)}"


def _and(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _line(site: Site | None) -> str:
    if site is None:
        return "(unknown line)"
    return f"{site}" + (f"   {site.code}" if site.code else "")


def _site_key(site: Site | None):
    return (site.file, site.line) if site is not None else None


# -- why a NaN / Inf: the words for each cause (causes.py and nonfinite.py find them) -------
# cause -> (what happened, the hint). ``{limit}`` and ``{dtype}`` come from the finding.
CAUSE_TEXT: dict[str, tuple[str, str]] = {
    "log_of_zero": ("log of 0", ("add a small epsilon or clamp the input first "
                    "(x.clamp_min(1e-12).log())")),
    "log_of_negative": ("log of a negative value", ("check the sign of the input; clamp it "
                        "to a positive minimum before log")),
    "sqrt_of_negative": ("sqrt of a negative value", "clamp the input to >= 0 before sqrt"),
    "division_by_zero": ("division by 0", ("add a small epsilon to the denominator or mask "
                         "the zeros before dividing")),
    "zero_by_zero": ("0/0", "add a small epsilon to the denominator or mask the zeros"),
    "inf_by_inf": ("Inf/Inf", "the operands overflowed first: fix where they became Inf"),
    "inf_minus_inf": ("Inf - Inf", "the operands overflowed first: fix where they became Inf"),
    "inf_times_zero": ("Inf × 0", "an Inf operand met a 0: fix where the Inf came from"),
    "pow_negative_fractional": ("pow of a negative base to a fractional exponent",
                                "clamp the base to >= 0 or use x.abs() ** p * x.sign()"),
    "pow_zero_negative": ("pow of 0 to a negative exponent",
                          "add a small epsilon to the base"),
    "pow_grad_at_zero": ("the derivative of pow at base 0 with an exponent below 1",
                         "add a small epsilon to the base"),
    "exp_overflow": ("exp overflow past {limit} in {dtype}",
                     "subtract the maximum first (logsumexp / softmax do), or clamp the input"),
    "outside_unit": ("asin/acos/atanh of a value outside [-1, 1]",
                     "clamp the input to [-1 + eps, 1 - eps]"),
    "atanh_of_one": ("atanh at ±1", "clamp the input to [-1 + eps, 1 - eps]"),
    "asin_grad_at_one": ("the derivative of asin/acos at ±1 (1/sqrt(1 - x²))",
                         "clamp the input to [-1 + eps, 1 - eps]"),
    "log_grad_at_zero": ("the derivative of log at 0 (1/x)",
                         "add a small epsilon or clamp the input before log"),
    "sqrt_grad_at_zero": ("the derivative of sqrt at 0 (1/(2·sqrt(x)))",
                          "use (x + eps).sqrt(); for a norm, add eps inside the sqrt"),
    "nonfinite_input": ("an input that was already non-finite",
                        "fix the op that made it first"),
    "nonfinite_gradient": ("an incoming gradient that already held Inf",
                           "fix the op whose gradient became Inf first"),
    "where_trap": (("the where trap: the branch the mask dropped was non-finite in forward, "
                   "and its gradient there is 0 × Inf = NaN"),
                   ("mask the input, not the output: where(mask, f(where(mask, x, safe)), 0), "
                   "so f never sees the values the mask drops")),
    "overflow": ("an overflow: the values grew too large for {dtype}",
                 ("check the scale of the inputs and weights, lower the learning rate, or "
                 "clip gradients")),
    "undefined": (("an undefined operation (0/0, Inf - Inf, 0 × Inf, log or sqrt of a "
                  "negative value)"), "look at the values that line saw"),
}


def cause_phrase(trace: Trace, violation: Violation) -> str:
    """The cause with its evidence, e.g. ``log of 0 at 1 of 2 elements of 'spread' ([1] =
    0)``; "" when the finding has no cause (traces recorded before causes).

    >>> v = Violation(kind="inf", message="", cause="log_of_zero", detail={"input": "s",
    ...     "source": "array", "count": 1, "total": 2, "indices": [[1]], "values": ["0"]})
    >>> cause_phrase(Trace(), v)
    'log of 0 at 1 of 2 elements of s ([1] = 0)'
    """
    if violation.cause is None:
        return ""
    detail = violation.detail
    what, _ = CAUSE_TEXT.get(violation.cause, (violation.cause, ""))
    dtype = _finding_dtype(trace, violation)
    what = what.format(limit=detail.get("limit", "?"), dtype=dtype)
    inner = detail.get("inner_cause")
    if violation.cause == "where_trap" and inner in CAUSE_TEXT:
        what += f" ({CAUSE_TEXT[inner][0]})"
    return what + _evidence(trace, detail)


def _evidence(trace: Trace, detail: dict) -> str:
    if not detail or "input" not in detail:
        return ""
    tensor = trace.tensors.get(detail.get("tensor")) if detail.get("tensor") is not None \
        else None
    label = f"'{tensor.name}'" if tensor is not None and tensor.name else detail["input"]
    if detail.get("source") == "stats":
        kept = detail.get("dropped") or "not kept"
        bounds = f"; min {detail['min']}, max {detail['max']}" if "min" in detail else ""
        return f" in {label} (its values: {kept}, statistics only{bounds})"
    elements = ", ".join(f"{index} = {value}" for index, value in
                         zip(detail.get("indices", []), detail.get("values", [])))
    more = ", ..." if detail.get("count", 0) > len(detail.get("indices", [])) else ""
    return (f" at {detail.get('count')} of {detail.get('total')} elements of {label} "
            f"({elements}{more})")


def cause_hint(trace: Trace, violation: Violation, upstream: bool = True) -> str:
    """``Hint: ...`` for a finding with a cause ("" without one); ``upstream``: name the
    op where a non-finite input first appeared."""
    if violation.cause is None:
        return ""
    _, hint = CAUSE_TEXT.get(violation.cause, ("", ""))
    hint = hint.format(dtype=_finding_dtype(trace, violation), limit="")
    upstream = _upstream(trace, violation) if upstream else ""
    if upstream:
        hint += f" ({upstream})"
    return f"Hint: {hint}." if hint else ""


def _upstream(trace: Trace, violation: Violation) -> str:
    node = trace.nodes.get(violation.detail.get("upstream")) \
        if violation.detail.get("upstream") is not None else None
    if node is None:
        return ""
    return f"it first became non-finite in {node.name} at {_where(node.site)}"


def nonfinite_message(trace: Trace, violation: Violation, made: str) -> str:
    """The one-paragraph message of a NaN/Inf finding: what, where, the cause, the hint.
    ``made`` says what the op did (``produced 'h' float32 [2] from finite inputs``)."""
    node = trace.nodes.get(violation.node) if violation.node is not None else None
    what = "NaN" if violation.kind == "nan" else "Inf"
    name = node.name if node is not None else "an op"
    where = _where(violation.site)
    text = f"{what} first appeared in {violation.phase}: {name} at {where} {made}."
    phrase = cause_phrase(trace, violation)
    if phrase:
        text += f" Cause: {phrase}."
    mask = trace.nodes.get(violation.detail.get("mask_node")) \
        if violation.detail.get("mask_node") is not None else None
    if mask is not None:
        text += f" Masked by {mask.name} at {_where(mask.site)}."
    hint = cause_hint(trace, violation)
    return f"{text} {hint}" if hint else text


def mask_note(trace: Trace, violation: Violation) -> str:
    """For a forward NaN/Inf a where/masked op dropped: its gradient comes back as NaN."""
    mask = trace.nodes.get(violation.detail.get("mask_node"))
    if mask is None:
        return ""
    return (f"{mask.name} at {_where(mask.site)} drops it in forward, but backward still "
            f"runs through it, where a 0 gradient times an infinite derivative is NaN (the "
            f"where trap). Hint: {CAUSE_TEXT['where_trap'][1]}.")


def _where(site: Site | None) -> str:
    if site is None:
        return "(line unknown)"
    return f"{site}" + (f" ({site.code})" if site.code else "")


def _finding_dtype(trace: Trace, violation: Violation) -> str:
    node = trace.nodes.get(violation.node) if violation.node is not None else None
    for tensor_id in (node.outputs if node is not None else ()):
        record = trace.tensors.get(tensor_id)
        if record is not None:
            return record.dtype
    return "float32"


# -- what backward keeps (memory.py computes it) ---------------------------------------------
def format_memory(trace: Trace, report, top: int = 5) -> list[str]:
    """The memory report as lines: totals and peak, then the largest modules, lines and
    tensors saved twice (``top`` of each).

    >>> from tracegrad.tracing.memory import MemoryReport
    >>> format_memory(Trace(), MemoryReport())
    ['saved for backward: nothing']
    """
    if not report.saved_count:
        return ["saved for backward: nothing"]
    when = f" (as pass {report.peak_pass} started)" if report.peak_pass is not None else \
        " (at the end, no backward ran)"
    lines = [(f"saved for backward: {report.saved_count} tensors, "
             f"{format_bytes(report.saved_bytes)} ({format_bytes(report.distinct_bytes)} in "
             f"distinct storage); peak held between forward and backward "
             f"{format_bytes(report.peak_bytes)}{when}")]
    modules = [(name, size) for name, size in report.by_module if name != "(no module)"]
    if modules:
        lines.append("  at the peak, by module:")
        lines += [f"    {name:<28} {format_bytes(size):>10}" for name, size in modules[:top]]
    lines.append("  at the peak, by line:")
    for site, size, names in report.by_line[:top]:
        lines.append(f"    {format_bytes(size):>10}  {', '.join(names)} at {_line(site)}")
    if report.saved_twice:
        lines.append("  saved twice:")
        for twice in report.saved_twice[:top]:
            lines.append(f"    {format_bytes(twice.nbytes):>10}  {_twice(trace, twice)}")
    return lines


def _twice(trace: Trace, twice) -> str:
    record = trace.tensors.get(twice.tensor)
    what = describe_tensor(record) if record is not None else f"t{twice.tensor}"
    counts: dict[str, int] = {}
    for holder in twice.holders:
        label = f"{holder.name} ({holder.site})" if holder.site is not None else holder.name
        counts[label] = counts.get(label, 0) + 1
    by = _and([label if count == 1 else f"{label} ×{count}"
               for label, count in counts.items()])
    if twice.kind == "copy":
        original = trace.tensors.get(twice.original)
        source = describe_tensor(original) if original is not None else f"t{twice.original}"
        return f"{what}, a copy of {source}: both saved, by {by}"
    return f"{what} saved by {by}"


def format_bytes(count: int) -> str:
    """``512 B``, ``1.5 KiB``, ``3.0 MiB``."""
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"
