"""Violations as text with file:line sites, as ``tracegrad check`` prints them.

>>> from tracegrad.tracing.model import Site, Trace, Violation
>>> violation = Violation(kind="nan", message="NaN first appeared", site=Site("a.py", 3, "f"))
>>> print(format_violation(Trace(), violation))
a.py:3: NaN in forward [nan]
  NaN first appeared
  produced at  a.py:3
"""

from __future__ import annotations

from .model import Site, Trace, Violation

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


def _line(site: Site | None) -> str:
    if site is None:
        return "(unknown line)"
    return f"{site}" + (f"   {site.code}" if site.code else "")


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
