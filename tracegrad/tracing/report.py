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


def findings(trace: Trace) -> list[Finding]:
    """The trace's violations grouped into findings, in recording order.

    In-place changes of a saved tensor group by (tensor, in-place line, version it made):
    every node that had saved the tensor is broken by the same line.
    """
    grouped: dict = {}
    result: list[Finding] = []
    for violation in trace.violations:
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
    lines = [f"{location}{title} [{violation.kind}]", f"  {violation.message}"]
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
    return "\n".join(lines)


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


# -- hints for non-finite values, by the op that made them ---------------------------------
# Node name prefix -> what makes that op's result (forward) or derivative (backward) NaN/Inf.
_NONFINITE_CAUSES = {
    "Log": "log of 0 or of a negative value",
    "Sqrt": "sqrt of a negative value (or its derivative at 0)",
    "Rsqrt": "rsqrt of 0 or of a negative value",
    "Pow": "pow of 0 to a negative power (or of a negative value to a fractional power)",
    "Div": "division by 0",
    "Reciprocal": "reciprocal of 0",
    "Exp": "exp of a large value (overflow)",
    "Acos": "acos/asin outside [-1, 1] (or their derivative at ±1)",
    "Asin": "acos/asin outside [-1, 1] (or their derivative at ±1)",
    "Atanh": "atanh at ±1",
    "Mm": "a product whose values overflow",
    "Bmm": "a product whose values overflow",
    "Addmm": "a product whose values overflow",
    "Matmul": "a product whose values overflow",
    "Mv": "a product whose values overflow",
    "Dot": "a product whose values overflow",
    "Mul": "a product whose values overflow (or 0 × Inf)",
    "Sum": "a sum whose values overflow (or Inf - Inf)",
    "Mean": "a mean whose values overflow (or Inf - Inf)",
}
_OVERFLOW_HINT = ("the values grew too large for {dtype}: check the scale of the inputs and "
                  "weights, lower the learning rate, or clip gradients")


def nonfinite_hint(kind: str, node_name: str, phase: str, dtype: str = "float32") -> str:
    """A hint for a NaN/Inf that ``node_name`` produced, right for that op.

    >>> nonfinite_hint("inf", "MmBackward0", "backward")
    'Hint: a product whose values overflow; the values grew too large for float32: check the scale of the inputs and weights, lower the learning rate, or clip gradients.'
    >>> nonfinite_hint("inf", "LogBackward0", "forward")
    'Hint: look for log of 0 or of a negative value on that line.'
    """
    base = node_name.removesuffix("Backward0").removesuffix("Backward1")
    cause = _NONFINITE_CAUSES.get(base)
    if cause is not None and "overflow" in cause:
        return f"Hint: {cause}; {_OVERFLOW_HINT.format(dtype=dtype)}."
    if cause is not None:
        where = "on that line" if phase == "forward" else "at the values that line saw"
        return f"Hint: look for {cause} {where}."
    if kind == "inf":
        return (f"Hint: an Inf usually means an overflow or a division by 0; "
                f"{_OVERFLOW_HINT.format(dtype=dtype)}.")
    if phase == "forward":
        return ("Hint: a NaN from finite inputs comes from an undefined operation: 0/0, "
                "Inf - Inf, 0 × Inf, or log/sqrt of a negative value on that line.")
    return ("Hint: the derivative of that line's op is undefined at the values it saw "
            "(0/0, Inf - Inf, 0 × Inf).")
