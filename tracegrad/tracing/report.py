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

from .model import Site, Trace, Violation
from .text import INPLACE_HINT, describe_tensor, finding_lines, nonfinite_hint, violation_lines

# The words live in text.py; these names stay importable from here.
__all__ = ["INPLACE_HINT", "Finding", "describe_tensor", "findings", "format_finding",
           "format_violation", "nonfinite_hint"]


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
    return "\n".join(finding_lines(trace, finding.violations))


def format_violation(trace: Trace, violation: Violation) -> str:
    """One violation as ``tracegrad check`` prints it (see ``text.violation_lines``)."""
    return "\n".join(violation_lines(trace, violation))


def _site_key(site: Site | None):
    return (site.file, site.line) if site is not None else None
